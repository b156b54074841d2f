package org.rollout.trainer;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Consumer;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * How {@link RolloutClient#connect} reaches the engine. Immutable; start from {@link #of} and change
 * fields with the {@code with…} methods.
 *
 * <pre>
 *   ClientConfig.of("http://10.0.0.5:8470", "http://10.0.0.6:8470")   // contact points, tried in order
 *           .withToken(System.getenv("ROLLOUT_TOKEN"))
 *           .withRetry(Duration.ofMillis(100), Duration.ofSeconds(5), Duration.ofMinutes(2));
 * </pre>
 *
 * <p>Retries: a contact point that cannot be reached (connection refused or timed out, the
 * connection broke, HTTP 503) is left for the next one; when every one has failed the client backs
 * off ({@code retry_initial_backoff}, doubling up to {@code retry_max_backoff}) and tries them
 * all again, until {@code retry_deadline} has passed since the call's first failure. Then the call
 * throws {@link EngineUnreachableException}, naming every contact point and its last error.
 *
 * @param contactPoints the gateways' base URLs ({@code http://host:port} or {@code https://…}, an
 *     optional path prefix for a gateway behind a reverse proxy); at least one
 * @param token the bearer token the gateways require, or null for none; never printed
 * @param connectTimeout how long opening a connection may take
 * @param requestTimeout how long a control call (acknowledge, status) may wait for its answer, and
 *     how much longer than its long-poll wait a pull may wait for its first byte
 * @param publishTimeout how long a weight publish may wait for the servers to load the weights
 * @param pollWait how long one pull request waits on the gateway for a batch (the gateway caps it
 *     at its own maximum); {@link RolloutClient#nextBatch()} repeats pulls of this length
 * @param readIdleTimeout a batch body from which no byte arrives for this long is abandoned (the
 *     gateway or the network stalled); the batch is delivered again after {@code batch_ack_timeout}
 * @param retryInitialBackoff the first pause after every contact point has failed
 * @param retryMaxBackoff the longest pause
 * @param retryDeadline how long a call keeps retrying after its first failure
 * @param sslContext the TLS context for {@code https} contact points (trust store of a self-signed
 *     gateway certificate), or null for the JDK's default trust
 * @param lease how long a pulled batch stays held for this client without a renewal ({@link
 *     BatchLease}); the client renews it every third of that, from a thread of its own, until the
 *     batch is acknowledged, so a trainer that dies gives its batches back within about this long.
 *     Null pulls without a lease: batches then come back only after the engine's {@code
 *     batch_ack_timeout}
 * @param followPullRedirects whether a pull through a gateway on another node than the one that
 *     holds the batches follows that gateway's redirect to the holder's gateway, so that a batch
 *     crosses no node on its way to the trainer (on by default; off: such a gateway relays the
 *     batch). A holder's gateway that cannot be reached makes the client pull through its contact
 *     point again (relayed) and follow no redirect for a minute
 * @param rank with {@code rollout.train_data_parallel_size} above 1, the data-parallel rank this
 *     client pulls for ({@code RANK}): its pulls get that rank's batches and {@link
 *     RolloutClient#status()} is that rank's; an acknowledgement finds its rank by the batch id.
 *     {@link #NO_RANK} (the default) pulls as rank 0
 */
public record ClientConfig(
        List<URI> contactPoints,
        String token,
        Duration connectTimeout,
        Duration requestTimeout,
        Duration publishTimeout,
        Duration pollWait,
        Duration readIdleTimeout,
        Duration retryInitialBackoff,
        Duration retryMaxBackoff,
        Duration retryDeadline,
        SSLContext sslContext,
        Duration lease,
        boolean followPullRedirects,
        int rank) {

    /** No rank named: pulls are rank 0's. */
    public static final int NO_RANK = -1;

    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(5);
    public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(30);
    public static final Duration DEFAULT_PUBLISH_TIMEOUT = Duration.ofMinutes(10);
    public static final Duration DEFAULT_POLL_WAIT = Duration.ofSeconds(20);
    public static final Duration DEFAULT_READ_IDLE_TIMEOUT = Duration.ofSeconds(60);
    public static final Duration DEFAULT_RETRY_INITIAL_BACKOFF = Duration.ofMillis(100);
    public static final Duration DEFAULT_RETRY_MAX_BACKOFF = Duration.ofSeconds(5);
    public static final Duration DEFAULT_RETRY_DEADLINE = Duration.ofSeconds(60);
    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(15);

    public ClientConfig {
        Objects.requireNonNull(contactPoints, "contact_points");
        if (contactPoints.isEmpty()) {
            throw new IllegalArgumentException("contact_points must name at least one gateway URL");
        }
        List<URI> normalised = new ArrayList<>(contactPoints.size());
        for (URI uri : contactPoints) {
            normalised.add(checkContactPoint(uri));
        }
        contactPoints = List.copyOf(normalised);
        if (token != null && (token.isBlank() || token.chars().anyMatch(c -> c < 0x21 || c > 0x7e))) {
            throw new IllegalArgumentException(
                    "token must be printable ASCII without spaces (it travels in an Authorization header)");
        }
        positive("connect_timeout", connectTimeout);
        positive("request_timeout", requestTimeout);
        positive("publish_timeout", publishTimeout);
        positive("poll_wait", pollWait);
        positive("read_idle_timeout", readIdleTimeout);
        positive("retry_initial_backoff", retryInitialBackoff);
        positive("retry_max_backoff", retryMaxBackoff);
        Objects.requireNonNull(retryDeadline, "retry_deadline");
        if (retryDeadline.isNegative()) {
            throw new IllegalArgumentException("retry_deadline must be >= 0, got " + retryDeadline);
        }
        if (lease != null && (lease.compareTo(Duration.ofSeconds(1)) < 0 || lease.compareTo(BatchLease.MAX) > 0)) {
            throw new IllegalArgumentException("lease must be between 1 s and " + BatchLease.MAX + ", got " + lease);
        }
        if (rank < NO_RANK || rank > 255) {
            throw new IllegalArgumentException("rank must be a data-parallel rank from 0 to 255, got " + rank);
        }
        if (retryMaxBackoff.compareTo(retryInitialBackoff) < 0) {
            throw new IllegalArgumentException("retry_max_backoff (" + retryMaxBackoff
                    + ") must not be below retry_initial_backoff (" + retryInitialBackoff + ")");
        }
    }

    /** The given contact points with every default: no token, the timeouts and backoff above. */
    public static ClientConfig of(String... contactPoints) {
        List<URI> uris = new ArrayList<>(contactPoints.length);
        for (String c : contactPoints) {
            uris.add(parse(c));
        }
        return of(uris);
    }

    /** The given contact points with every default. */
    public static ClientConfig of(List<URI> contactPoints) {
        return new ClientConfig(
                contactPoints,
                null,
                DEFAULT_CONNECT_TIMEOUT,
                DEFAULT_REQUEST_TIMEOUT,
                DEFAULT_PUBLISH_TIMEOUT,
                DEFAULT_POLL_WAIT,
                DEFAULT_READ_IDLE_TIMEOUT,
                DEFAULT_RETRY_INITIAL_BACKOFF,
                DEFAULT_RETRY_MAX_BACKOFF,
                DEFAULT_RETRY_DEADLINE,
                null,
                DEFAULT_LEASE,
                true,
                NO_RANK);
    }

    /** Pulls under a lease of {@code d} (null: without a lease); see the {@code lease} parameter. */
    public ClientConfig withLease(Duration d) {
        return with(c -> c.lease = d);
    }

    /** Pulls for data-parallel rank {@code r} (see the {@code rank} parameter). */
    public ClientConfig withRank(int r) {
        return with(c -> c.rank = r);
    }

    /** Whether pulls follow a redirect to the gateway of the node that holds the batches (see the parameter). */
    public ClientConfig withPullRedirects(boolean follow) {
        return with(c -> c.followPullRedirects = follow);
    }

    public ClientConfig withToken(String t) {
        return with(c -> c.token = t);
    }

    public ClientConfig withConnectTimeout(Duration d) {
        return with(c -> c.connectTimeout = d);
    }

    public ClientConfig withRequestTimeout(Duration d) {
        return with(c -> c.requestTimeout = d);
    }

    public ClientConfig withPublishTimeout(Duration d) {
        return with(c -> c.publishTimeout = d);
    }

    public ClientConfig withPollWait(Duration d) {
        return with(c -> c.pollWait = d);
    }

    public ClientConfig withReadIdleTimeout(Duration d) {
        return with(c -> c.readIdleTimeout = d);
    }

    /** The backoff between rounds over the contact points, and how long a call keeps retrying. */
    public ClientConfig withRetry(Duration initialBackoff, Duration maxBackoff, Duration deadline) {
        return with(c -> {
            c.retryInitialBackoff = initialBackoff;
            c.retryMaxBackoff = maxBackoff;
            c.retryDeadline = deadline;
        });
    }

    public ClientConfig withSslContext(SSLContext context) {
        return with(c -> c.sslContext = context);
    }

    /** A copy with {@code change} made to its fields, checked as any new config. */
    private ClientConfig with(Consumer<Fields> change) {
        Fields f = new Fields(this);
        change.accept(f);
        return f.config();
    }

    /** The fields of a config being copied, for the {@code with…} methods to change. */
    private static final class Fields {
        List<URI> contactPoints;
        String token;
        Duration connectTimeout;
        Duration requestTimeout;
        Duration publishTimeout;
        Duration pollWait;
        Duration readIdleTimeout;
        Duration retryInitialBackoff;
        Duration retryMaxBackoff;
        Duration retryDeadline;
        SSLContext sslContext;
        Duration lease;
        boolean followPullRedirects;
        int rank;

        Fields(ClientConfig c) {
            contactPoints = c.contactPoints;
            token = c.token;
            connectTimeout = c.connectTimeout;
            requestTimeout = c.requestTimeout;
            publishTimeout = c.publishTimeout;
            pollWait = c.pollWait;
            readIdleTimeout = c.readIdleTimeout;
            retryInitialBackoff = c.retryInitialBackoff;
            retryMaxBackoff = c.retryMaxBackoff;
            retryDeadline = c.retryDeadline;
            sslContext = c.sslContext;
            lease = c.lease;
            followPullRedirects = c.followPullRedirects;
            rank = c.rank;
        }

        ClientConfig config() {
            return new ClientConfig(
                    contactPoints,
                    token,
                    connectTimeout,
                    requestTimeout,
                    publishTimeout,
                    pollWait,
                    readIdleTimeout,
                    retryInitialBackoff,
                    retryMaxBackoff,
                    retryDeadline,
                    sslContext,
                    lease,
                    followPullRedirects,
                    rank);
        }
    }

    /**
     * Trusts the certificates in {@code trustStore} (PKCS12 or JKS, e.g. the gateway's own keystore
     * or one holding its self-signed certificate) for {@code https} contact points.
     *
     * @throws IllegalArgumentException when the store cannot be read; the message names the file
     */
    public ClientConfig withTrustStore(Path trustStore, String password) {
        try {
            KeyStore store = KeyStore.getInstance(trustStore.toFile(), password.toCharArray());
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(store);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, tmf.getTrustManagers(), null);
            return withSslContext(context);
        } catch (IOException | GeneralSecurityException | IllegalArgumentException e) {
            throw new IllegalArgumentException("cannot read the trust store " + trustStore + ": " + e.getMessage(), e);
        }
    }

    /** Never shows the token. */
    @Override
    public String toString() {
        return "ClientConfig{contact_points=" + contactPoints + ", token=" + (token == null ? "none" : "(set)")
                + ", connect_timeout=" + connectTimeout + ", request_timeout=" + requestTimeout
                + ", publish_timeout=" + publishTimeout + ", poll_wait=" + pollWait + ", read_idle_timeout="
                + readIdleTimeout + ", retry=" + retryInitialBackoff + ".." + retryMaxBackoff + " for "
                + retryDeadline + ", tls=" + (sslContext == null ? "default trust" : "custom") + ", lease="
                + (lease == null ? "none" : lease) + ", follow_pull_redirects=" + followPullRedirects
                + (rank == NO_RANK ? "" : ", rank=" + rank) + "}";
    }

    private static URI parse(String contactPoint) {
        Objects.requireNonNull(contactPoint, "contact point");
        try {
            return new URI(contactPoint.strip());
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException(
                    "contact point '" + contactPoint + "' is not a URL: " + e.getMessage(), e);
        }
    }

    /** http(s), a host, no query or fragment; the path loses its trailing slash. */
    private static URI checkContactPoint(URI uri) {
        Objects.requireNonNull(uri, "contact point");
        String scheme = uri.getScheme();
        if (scheme == null || !(scheme.equalsIgnoreCase("http") || scheme.equalsIgnoreCase("https"))) {
            throw new IllegalArgumentException(
                    "contact point '" + uri + "' must be an http:// or https:// URL of a trainer gateway");
        }
        if (uri.getHost() == null || uri.getPort() == 0) {
            throw new IllegalArgumentException("contact point '" + uri + "' must name a host and a port");
        }
        if (uri.getRawQuery() != null || uri.getRawFragment() != null) {
            throw new IllegalArgumentException("contact point '" + uri + "' must not have a query or fragment");
        }
        String path = uri.getRawPath() == null ? "" : uri.getRawPath();
        while (path.endsWith("/")) {
            path = path.substring(0, path.length() - 1);
        }
        try {
            return new URI(scheme.toLowerCase(Locale.ROOT) + "://" + uri.getRawAuthority() + path);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("contact point '" + uri + "': " + e.getMessage(), e);
        }
    }

    private static void positive(String key, Duration d) {
        Objects.requireNonNull(d, key);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(key + " must be > 0, got " + d);
        }
    }
}
