package org.rollout.trainer;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.rollout.trainer.wire.BatchFormatException;
import org.rollout.trainer.wire.GatewayJson;

/**
 * The calls of an {@link HttpRolloutClient} to the trainer gateways: one request at a time to the
 * preferred contact point, failing over to the next on a refused or broken connection, a timeout
 * or a 503, and backing off between rounds over all of them until {@code retry_deadline}. Owns
 * the pooled {@link HttpClient}, the plain sockets of batch pulls (in flight, and kept alive
 * between pulls: {@link PlainHttpExchange.Pool}) and the watchdog that abandons idle bodies
 * ({@link IdleGuardedStream}).
 */
final class GatewayCalls {
    private static final System.Logger log = System.getLogger(HttpRolloutClient.class.getName());
    private static final int MAX_SMALL_BODY = 1 << 20;
    private static final String USER_AGENT = "rollout-trainer-client/1";
    /** The pull's header saying the trainer follows a 307 to the node that holds the batches. */
    static final String FOLLOW_HEADER = "X-Rollout-Follow-Redirect";

    private final ClientConfig config;
    private final HttpClient http;
    private final ScheduledExecutorService watchdog;
    private final AtomicInteger preferred = new AtomicInteger();
    private final AtomicBoolean closed = new AtomicBoolean();
    /**
     * The plain sockets of batch pulls: those of pulls in flight and those kept alive between pulls
     * (HTTP/1.1 keep-alive); all closed by {@link #shutdown()}.
     */
    private final PlainHttpExchange.Pool plainPool = new PlainHttpExchange.Pool();

    GatewayCalls(ClientConfig config) {
        this.config = config;
        HttpClient.Builder b = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(config.connectTimeout())
                .followRedirects(HttpClient.Redirect.NEVER);
        if (config.sslContext() != null) {
            b.sslContext(config.sslContext());
        }
        this.http = b.build();
        this.watchdog = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "rollout-client-read-watchdog");
            t.setDaemon(true);
            return t;
        });
    }

    /** Reads a response; {@code ambiguous} is the error of an earlier attempt that may have reached a gateway. */
    @FunctionalInterface
    interface ResponseReader<T> {
        T read(URI base, int status, InputStream body, String ambiguous) throws IOException;
    }

    /** A response's status and body, and its {@code Location} header (null when none). */
    record Reply(int status, InputStream body, String location) {
        Reply(int status, InputStream body) {
            this(status, body, null);
        }

        /** Reads what is left of the body (a small one: a redirect's, an error's) and closes it. */
        void discard() {
            try (InputStream in = body) {
                in.readNBytes(MAX_SMALL_BODY);
            } catch (IOException e) {
                log.log(System.Logger.Level.DEBUG, "dropping an answer''s body: {0}", e);
            }
        }
    }

    /** Sends one request to a contact point. */
    interface Sender {
        Reply send(URI base) throws IOException, InterruptedException;
    }

    Sender viaHttpClient(Function<URI, HttpRequest> request) {
        return base -> {
            HttpResponse<InputStream> response =
                    http.send(request.apply(base), HttpResponse.BodyHandlers.ofInputStream());
            return new Reply(response.statusCode(), response.body());
        };
    }

    /**
     * {@code POST url} with no body, for a batch pull: over a plain socket kept alive between pulls
     * for {@code http} ({@link PlainHttpExchange}), through {@code java.net.http} for {@code https}.
     * With {@code follow}, the request says the trainer follows a redirect to the gateway of the
     * node that holds the batches ({@code X-Rollout-Follow-Redirect: 1}).
     */
    Reply pull(URI url, Duration timeout, boolean follow) throws IOException, InterruptedException {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("User-Agent", USER_AGENT);
        if (config.token() != null) {
            headers.put("Authorization", "Bearer " + config.token());
        }
        if (follow) {
            headers.put(FOLLOW_HEADER, "1");
        }
        if ("http".equalsIgnoreCase(url.getScheme())) {
            String target = (url.getRawPath() == null || url.getRawPath().isEmpty() ? "/" : url.getRawPath())
                    + (url.getRawQuery() == null ? "" : "?" + url.getRawQuery());
            PlainHttpExchange exchange =
                    PlainHttpExchange.post(url, target, headers, config.connectTimeout(), timeout, plainPool);
            return new Reply(exchange.status(), exchange.body(), exchange.header("Location"));
        }
        HttpRequest.Builder b = HttpRequest.newBuilder(url).timeout(timeout).POST(HttpRequest.BodyPublishers.noBody());
        headers.forEach(b::header);
        HttpResponse<InputStream> response = http.send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
        return new Reply(
                response.statusCode(),
                response.body(),
                response.headers().firstValue("Location").orElse(null));
    }

    /** Plain connections this client opened for pulls so far (one kept alive counts once). */
    long pullConnectionsOpened() {
        return plainPool.opened();
    }

    /**
     * Sends the request to the preferred contact point, failing over and backing off as {@link
     * HttpRolloutClient}'s class comment says, and reads the response with {@code reader}.
     */
    <T> T call(String what, Sender sender, ResponseReader<T> reader) throws InterruptedException {
        if (closed.get()) {
            throw new IllegalStateException("could not " + what + ": the client is closed");
        }
        var contacts = config.contactPoints();
        Map<URI, String> lastErrors = new LinkedHashMap<>();
        String ambiguous = null;
        long firstFailure = 0;
        boolean failed = false;
        long backoff = config.retryInitialBackoff().toNanos();
        while (true) {
            int start = preferred.get();
            for (int i = 0; i < contacts.size(); i++) {
                int index = (start + i) % contacts.size();
                URI base = contacts.get(index);
                try {
                    Reply response = sender.send(base);
                    if (response.status() == 503) {
                        try (InputStream body = response.body()) {
                            GatewayJson.ErrorBody e = errorOf(body);
                            lastErrors.put(base, "HTTP 503 " + e.code() + ": " + e.message());
                        }
                        continue;
                    }
                    preferred.set(index);
                    try (InputStream body =
                            new IdleGuardedStream(response.body(), base, what, config.readIdleTimeout(), watchdog)) {
                        return reader.read(base, response.status(), body, ambiguous);
                    }
                } catch (BatchFormatException e) {
                    throwIfInterrupted(e);
                    throw new IllegalStateException(
                            "could not " + what + ": the trainer gateway at " + base + " sent a malformed batch: "
                                    + e.getMessage(),
                            e);
                } catch (IOException e) {
                    throwIfInterrupted(e);
                    if (closed.get()) {
                        throw new IllegalStateException("could not " + what + ": the client was closed", e);
                    }
                    String error = describe(e);
                    lastErrors.put(base, error);
                    if (!(e instanceof ConnectException || e instanceof HttpConnectTimeoutException)) {
                        ambiguous = error;
                    }
                    log.log(System.Logger.Level.DEBUG, "could not {0} at {1}: {2}", what, base, error);
                }
            }
            long now = System.nanoTime();
            if (!failed) {
                failed = true;
                firstFailure = now;
            }
            if (now - firstFailure + backoff > config.retryDeadline().toNanos()) {
                Map<URI, String> ordered = new LinkedHashMap<>();
                for (URI c : contacts) {
                    ordered.put(c, lastErrors.getOrDefault(c, "not tried"));
                }
                throw new EngineUnreachableException(what, Duration.ofNanos(now - firstFailure), ordered);
            }
            log.log(
                    System.Logger.Level.INFO,
                    "could not {0}: no trainer gateway answered ({1}); trying again in {2} ms",
                    what,
                    lastErrors,
                    TimeUnit.NANOSECONDS.toMillis(backoff));
            TimeUnit.NANOSECONDS.sleep(backoff);
            backoff = Math.min(backoff * 2, config.retryMaxBackoff().toNanos());
        }
    }

    HttpRequest.Builder request(URI base, String path, Duration timeout) {
        HttpRequest.Builder b =
                HttpRequest.newBuilder(URI.create(base + path)).timeout(timeout).header("User-Agent", USER_AGENT);
        if (config.token() != null) {
            b.header("Authorization", "Bearer " + config.token());
        }
        return b;
    }

    /** Marks the calls closed (later calls throw); true only for the first caller. */
    boolean markClosed() {
        return closed.compareAndSet(false, true);
    }

    /** Stops every request in flight and the connection pool; never throws. */
    void shutdown() {
        http.shutdownNow();
        plainPool.close();
        watchdog.shutdownNow();
    }

    static <T> T parse(String what, URI base, InputStream body, Function<byte[], T> parser) throws IOException {
        byte[] bytes = body.readNBytes(MAX_SMALL_BODY);
        try {
            return parser.apply(bytes);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(
                    "could not " + what + ": the trainer gateway at " + base + " answered with a malformed body: "
                            + e.getMessage(),
                    e);
        }
    }

    static GatewayJson.ErrorBody errorOf(InputStream body) throws IOException {
        return GatewayJson.parseError(body.readNBytes(MAX_SMALL_BODY));
    }

    static GatewayRequestException requestError(String what, URI base, int status, InputStream body)
            throws IOException {
        GatewayJson.ErrorBody e = errorOf(body);
        return new GatewayRequestException(what, base, status, e.code(), e.message());
    }

    /** Interruption surfaces from the HTTP client as an IOException with the flag set or an InterruptedException cause. */
    static void throwIfInterrupted(IOException e) throws InterruptedException {
        boolean interrupted = Thread.interrupted()
                || (e instanceof InterruptedIOException && !(e instanceof SocketTimeoutException))
                || e.getCause() instanceof InterruptedException;
        if (interrupted) {
            InterruptedException ie = new InterruptedException("interrupted: " + e.getMessage());
            ie.initCause(e);
            throw ie;
        }
    }

    static String describe(IOException e) {
        String m = e.getMessage();
        if (e instanceof ConnectException && (m == null || m.isBlank())) {
            return "connection refused";
        }
        return e.getClass().getSimpleName() + (m == null || m.isBlank() ? "" : ": " + m);
    }
}
