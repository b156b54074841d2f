#!/usr/bin/env bash
# Makes the PKCS12 stores of cluster-config/tls.conf in <out-dir>:
#   ca.p12          the cluster CA's key pair (keep it off the nodes; needed to sign more nodes)
#   ca.pem          the CA's certificate
#   node.p12        a node key pair whose certificate the CA signed (SAN 127.0.0.1, localhost):
#                   ROLLOUT_TLS_KEY_STORE
#   truststore.p12  the CA's certificate alone: ROLLOUT_TLS_TRUST_STORE
#   rogue.p12       a self-signed key pair with the same subject as node.p12, which no node
#                   trusts: for tests that an outsider is refused
#   store-password  the password of all of them, when this script chose it: ROLLOUT_TLS_PASSWORD
#
# Usage: cluster-config/gen-keystores.sh <out-dir>
# The password is $ROLLOUT_TLS_PASSWORD if set, else the one in <out-dir>/store-password, else a
# random one written there. Idempotent: what exists is kept, only what is missing is made (a new
# CA replaces the node and trust stores of the old one). keytool comes from $JAVA_HOME/bin, else
# from PATH. The stores are git-ignored: never commit them.
set -euo pipefail

die() {
    echo "gen-keystores.sh: $*" >&2
    exit 1
}

[[ $# -eq 1 && -n "$1" ]] || die "usage: gen-keystores.sh <out-dir>"
out="$1"

if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/keytool" ]]; then
    keytool="$JAVA_HOME/bin/keytool"
elif command -v keytool >/dev/null 2>&1; then
    keytool="$(command -v keytool)"
else
    die "keytool not found: set JAVA_HOME to a JDK or put keytool on PATH"
fi

umask 077
mkdir -p "$out" || die "cannot create $out"

pw_file="$out/store-password"
stores=(ca.p12 node.p12 truststore.p12 rogue.p12)
if [[ -n "${ROLLOUT_TLS_PASSWORD:-}" ]]; then
    if [[ -f "$pw_file" && "$(cat "$pw_file")" != "$ROLLOUT_TLS_PASSWORD" ]]; then
        die "ROLLOUT_TLS_PASSWORD is not the password of the stores in $out (see $pw_file)"
    fi
    password="$ROLLOUT_TLS_PASSWORD"
elif [[ -f "$pw_file" ]]; then
    password="$(cat "$pw_file")"
else
    for s in "${stores[@]}"; do
        [[ ! -e "$out/$s" ]] || die "$out/$s exists but its password is unknown: set ROLLOUT_TLS_PASSWORD"
    done
    password="$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
    printf '%s\n' "$password" >"$pw_file"
    echo "wrote $pw_file"
fi
# keytool reads it from the environment, so it never shows in the process list.
export GEN_KEYSTORES_PASSWORD="$password"

# A short-lived JVM per call: start it lean.
kt() {
    "$keytool" -J-Xshare:auto -J-XX:TieredStopAtLevel=1 -J-XX:+UseSerialGC "$@" \
        -storepass:env GEN_KEYSTORES_PASSWORD >/dev/null 2>"$out/.keytool.err" \
        || die "keytool $1 failed: $(cat "$out/.keytool.err")"
}
# EC P-256 keys: quick to make, and what TLS 1.3 prefers.
key=(-keyalg EC -groupname secp256r1 -storetype PKCS12)
san="san=ip:127.0.0.1,dns:localhost"

if [[ ! -f "$out/ca.p12" ]]; then
    for dependent in node.p12 truststore.p12 ca.pem; do
        if [[ -e "$out/$dependent" ]]; then
            rm -f "$out/$dependent"
            echo "removed $out/$dependent (it belonged to a CA that is gone)"
        fi
    done
    kt -genkeypair -alias ca "${key[@]}" -keystore "$out/ca.p12" -dname "CN=Rollout cluster CA" \
        -validity 3650 -ext bc:c=ca:true -ext ku:c=keyCertSign,cRLSign
    echo "wrote $out/ca.p12"
else
    echo "kept $out/ca.p12"
fi

if [[ ! -f "$out/ca.pem" ]]; then
    kt -exportcert -rfc -alias ca -keystore "$out/ca.p12" -file "$out/ca.pem"
    echo "wrote $out/ca.pem"
else
    echo "kept $out/ca.pem"
fi

if [[ ! -f "$out/node.p12" ]]; then
    tmp="$out/.node.p12.tmp"
    rm -f "$tmp" "$out/.node.csr" "$out/.node.pem"
    kt -genkeypair -alias node "${key[@]}" -keystore "$tmp" -dname "CN=rollout-node" -validity 825
    kt -certreq -alias node -keystore "$tmp" -file "$out/.node.csr"
    kt -gencert -alias ca -keystore "$out/ca.p12" -infile "$out/.node.csr" -outfile "$out/.node.pem" \
        -rfc -validity 825 -ext "$san" -ext ku:c=digitalSignature -ext eku=serverAuth,clientAuth
    # The CA first, so that keytool can chain the signed certificate to it.
    kt -importcert -noprompt -alias ca -file "$out/ca.pem" -keystore "$tmp"
    kt -importcert -alias node -file "$out/.node.pem" -keystore "$tmp"
    mv "$tmp" "$out/node.p12"
    rm -f "$out/.node.csr" "$out/.node.pem"
    echo "wrote $out/node.p12"
else
    echo "kept $out/node.p12"
fi

if [[ ! -f "$out/truststore.p12" ]]; then
    tmp="$out/.truststore.p12.tmp"
    rm -f "$tmp"
    kt -importcert -noprompt -alias rollout-ca -file "$out/ca.pem" -storetype PKCS12 -keystore "$tmp"
    mv "$tmp" "$out/truststore.p12"
    echo "wrote $out/truststore.p12"
else
    echo "kept $out/truststore.p12"
fi

if [[ ! -f "$out/rogue.p12" ]]; then
    tmp="$out/.rogue.p12.tmp"
    rm -f "$tmp"
    kt -genkeypair -alias node "${key[@]}" -keystore "$tmp" -dname "CN=rollout-node" -validity 825 \
        -ext "$san"
    mv "$tmp" "$out/rogue.p12"
    echo "wrote $out/rogue.p12"
else
    echo "kept $out/rogue.p12"
fi
rm -f "$out/.keytool.err"
