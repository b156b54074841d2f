package org.rollout.gateway;

import java.nio.file.Path;
import java.time.Duration;
import org.rollout.api.InvalidConfigException;

/**
 * How to start a {@link TrainerGateway}. Immutable; start from {@link #defaults()} and change fields
 * with the {@code with…} methods. Errors name the key as {@code gateway.<field>}.
 *
 * @param host the address to bind; {@code 127.0.0.1} by default, so nothing off the machine can
 *     reach the gateway unless this is changed (then set a token, and TLS off a trusted network)
 * @param port the port; 0 picks a free one ({@link TrainerGateway#port()} tells which)
 * @param token the bearer token every endpoint but {@code /health} requires, or null for none;
 *     printable ASCII without spaces; never printed
 * @param keyStore a PKCS12 or JKS key store holding the gateway's key and certificate: the gateway
 *     then speaks HTTPS only; null for plain HTTP
 * @param keyStorePassword the key store's (and its key's) password; required with a key store;
 *     never printed
 * @param maxPollWait the longest a pull waits for a batch, whatever the trainer asks; keep it below
 *     the idle timeouts of proxies between trainer and gateway
 * @param maxWaitingPulls the most pulls this gateway serves at once (waiting for a batch or
 *     streaming one); a pull beyond it is answered 503 {@code too_many_pulls} at once, so a trainer
 *     that opens pulls without reading them cannot hold an unbounded number of threads, sockets and
 *     batches (its trainer client then tries another contact point)
 * @param writeTimeout how long a batch being streamed may make no progress (the trainer reads
 *     nothing) before the gateway drops the connection; the batch is then delivered again after
 *     {@code batch_ack_timeout} under the acknowledgement protocol (docs/protocol.md)
 */
public record GatewayConfig(
        String host,
        int port,
        String token,
        Path keyStore,
        String keyStorePassword,
        Duration maxPollWait,
        int maxWaitingPulls,
        Duration writeTimeout) {

    public static final Duration DEFAULT_MAX_POLL_WAIT = Duration.ofSeconds(60);
    public static final int DEFAULT_MAX_WAITING_PULLS = 256;
    public static final Duration DEFAULT_WRITE_TIMEOUT = Duration.ofSeconds(60);

    public GatewayConfig {
        if (host == null || host.isBlank()) {
            throw new InvalidConfigException("gateway.host", host, "an address to bind, e.g. 127.0.0.1");
        }
        if (port < 0 || port > 65535) {
            throw new InvalidConfigException("gateway.port", port, "0 (a free port) to 65535");
        }
        if (token != null && (token.isBlank() || token.chars().anyMatch(c -> c < 0x21 || c > 0x7e))) {
            // The value is a secret: only its length is shown.
            throw new InvalidConfigException(
                    "gateway.token",
                    "(" + token.length() + " characters)",
                    "printable ASCII without spaces, or unset for no authentication");
        }
        if (keyStore != null && keyStorePassword == null) {
            throw new InvalidConfigException(
                    "gateway.key_store_password", null, "the password of gateway.key_store " + keyStore);
        }
        if (maxPollWait == null || maxPollWait.isNegative() || maxPollWait.isZero()) {
            throw new InvalidConfigException("gateway.max_poll_wait", maxPollWait, "a duration > 0");
        }
        if (maxWaitingPulls < 1) {
            throw new InvalidConfigException("gateway.max_waiting_pulls", maxWaitingPulls, "an integer >= 1");
        }
        if (writeTimeout == null || writeTimeout.isNegative() || writeTimeout.isZero()) {
            throw new InvalidConfigException("gateway.write_timeout", writeTimeout, "a duration > 0");
        }
    }

    /**
     * 127.0.0.1, a free port, no token, plain HTTP, pulls wait at most 60 s, at most 256 pulls at
     * once, a batch stream stalled 60 s is dropped.
     */
    public static GatewayConfig defaults() {
        return new GatewayConfig(
                "127.0.0.1",
                0,
                null,
                null,
                null,
                DEFAULT_MAX_POLL_WAIT,
                DEFAULT_MAX_WAITING_PULLS,
                DEFAULT_WRITE_TIMEOUT);
    }

    public GatewayConfig withHost(String h) {
        return new GatewayConfig(
                h, port, token, keyStore, keyStorePassword, maxPollWait, maxWaitingPulls, writeTimeout);
    }

    public GatewayConfig withPort(int p) {
        return new GatewayConfig(
                host, p, token, keyStore, keyStorePassword, maxPollWait, maxWaitingPulls, writeTimeout);
    }

    public GatewayConfig withToken(String t) {
        return new GatewayConfig(host, port, t, keyStore, keyStorePassword, maxPollWait, maxWaitingPulls, writeTimeout);
    }

    /** Serves HTTPS with the key and certificate in {@code store}. */
    public GatewayConfig withTls(Path store, String password) {
        return new GatewayConfig(host, port, token, store, password, maxPollWait, maxWaitingPulls, writeTimeout);
    }

    public GatewayConfig withMaxPollWait(Duration d) {
        return new GatewayConfig(host, port, token, keyStore, keyStorePassword, d, maxWaitingPulls, writeTimeout);
    }

    public GatewayConfig withMaxWaitingPulls(int n) {
        return new GatewayConfig(host, port, token, keyStore, keyStorePassword, maxPollWait, n, writeTimeout);
    }

    public GatewayConfig withWriteTimeout(Duration d) {
        return new GatewayConfig(host, port, token, keyStore, keyStorePassword, maxPollWait, maxWaitingPulls, d);
    }

    /** Whether the gateway serves HTTPS. */
    public boolean tls() {
        return keyStore != null;
    }

    /** Never shows the token or the password. */
    @Override
    public String toString() {
        return "GatewayConfig{host=" + host + ", port=" + port + ", token=" + (token == null ? "none" : "(set)")
                + ", tls=" + (keyStore == null ? "off" : keyStore.toString()) + ", max_poll_wait=" + maxPollWait
                + ", max_waiting_pulls=" + maxWaitingPulls + ", write_timeout="
                + writeTimeout + "}";
    }
}
