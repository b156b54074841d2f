package org.rollout.cluster;

import java.io.IOException;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connections a node's data plane refused, counted by reason ({@code
 * rollout_data_plane_refused_total{reason}}) and logged without flooding: the first refusal of
 * each reason is a warning at once; after it, at most one warning per reason every {@link
 * #LOG_EVERY}, which says how many more were refused since the last line. A peer retrying in a
 * loop moves the counter, not the log. Thread-safe.
 */
final class DataPlaneRefusals {
    private static final Logger log = LoggerFactory.getLogger(DataPlane.class);
    /** At most one warning per reason this often, after the first. */
    static final Duration LOG_EVERY = Duration.ofMinutes(1);

    /** Why a connection was refused; {@link #label} is the metric's {@code reason}. */
    enum Reason {
        /** The connection did not start with a TLS handshake (plain TCP to a TLS data plane). */
        NOT_TLS("not_tls", "did not start a TLS handshake"),
        /** Mutual authentication is on and the peer presented no certificate. */
        NO_CERTIFICATE("no_certificate", "presented no certificate"),
        /** The peer's certificate is not trusted by the trust store (unknown signer, expired, wrong use). */
        UNTRUSTED_CERTIFICATE("untrusted_certificate", "presented a certificate the trust store does not accept"),
        /** Any other failed TLS handshake: protocol or cipher suite mismatch, an alert, a reset. */
        HANDSHAKE_FAILED("handshake_failed", "failed the TLS handshake"),
        /** No complete handshake and request within the request deadline (a peer that sends nothing). */
        TIMEOUT("timeout", "sent no complete request within the deadline"),
        /** Something other than a request ("RLP1 " or "RLB1 " and a token). */
        BAD_REQUEST("bad_request", "sent something that is not a data-plane request");

        final String label;
        final String what;

        Reason(String label, String what) {
            this.label = label;
            this.what = what;
        }
    }

    /** Counts and the log's state of one reason. */
    private static final class Tally {
        final AtomicLong count = new AtomicLong();
        long unlogged;
        long loggedNanos;
        boolean logged;
    }

    private final int port;
    private final Duration logEvery;
    private final Map<Reason, Tally> tallies = new EnumMap<>(Reason.class);

    DataPlaneRefusals(int port) {
        this(port, LOG_EVERY);
    }

    DataPlaneRefusals(int port, Duration logEvery) {
        this.port = port;
        this.logEvery = logEvery;
        for (Reason r : Reason.values()) {
            tallies.put(r, new Tally());
        }
    }

    /** Counts a refused connection from {@code peer}, and logs it unless this reason was logged lately. */
    void refuse(Reason reason, SocketAddress peer, String detail) {
        Tally t = tallies.get(reason);
        t.count.incrementAndGet();
        long more;
        synchronized (t) {
            long now = System.nanoTime();
            if (t.logged && now - t.loggedNanos < logEvery.toNanos()) {
                t.unlogged++;
                return;
            }
            more = t.unlogged;
            t.unlogged = 0;
            t.logged = true;
            t.loggedNanos = now;
        }
        log.warn(
                "the data plane on port {} refused a connection from {}: it {} ({}){}; reason {} (metric"
                        + " rollout_data_plane_refused_total), logged at most once every {} s",
                port,
                peer,
                reason.what,
                detail,
                more == 0 ? "" : "; " + more + " more refused for this reason since the last such line",
                reason.label,
                logEvery.toSeconds());
    }

    /** Connections refused for {@code reason} since the data plane started. */
    long count(Reason reason) {
        return tallies.get(reason).count.get();
    }

    /** The reason whose metric label is {@code label}, or null. */
    static Reason byLabel(String label) {
        for (Reason r : Reason.values()) {
            if (r.label.equals(label)) {
                return r;
            }
        }
        return null;
    }

    /** A connection refused, and why. */
    static final class Refused extends IOException {
        private final Reason reason;

        Refused(Reason reason, String detail) {
            super(detail);
            this.reason = reason;
        }

        Refused(Reason reason, Throwable cause) {
            super(cause.toString(), cause);
            this.reason = reason;
        }

        Reason reason() {
            return reason;
        }
    }
}
