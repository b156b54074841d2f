package org.rollout.trainer;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.rollout.api.TrainingBatch;
import org.rollout.trainer.wire.BatchFormatException;
import org.rollout.trainer.wire.BatchWireFormat;
import org.rollout.trainer.wire.GatewayJson;

/**
 * A {@link RolloutClient} for a trainer outside the engine: HTTP/1.1 to the trainer gateways at
 * the configured contact points ({@link RolloutClient#connect}). One pooled {@link HttpClient}; a
 * batch pull over plain {@code http} reads its response from a socket of its own ({@link
 * PlainHttpExchange}), so that the batch's bytes go from the socket to the decoder in the pulling
 * thread.
 *
 * <pre>
 *   nextBatch()      POST /v1/batches/next?wait=poll_wait[&lease=L&holder=H]   repeated until a batch comes (200), 204 = none yet
 *   acknowledge(b)   POST /v1/batches/{id}/ack {"task_ids": [..]}
 *   (a thread)       POST /v1/leases/renew {"holder", "lease"}  every lease/3 while a batch is held
 *   publishWeights   POST /v1/weights {"version", "path"}   409 → REFUSED, 502 → NOT_LOADED
 *   status()         GET  /v1/status
 *   stats(v)         GET  /v1/stats?since_version=v
 * </pre>
 *
 * <p>Batches are read from the response as it arrives (RBATCH v1, {@link BatchWireFormat}) straight
 * into tensor builders: the client holds the decoded batch and a small buffer, and a trainer that
 * reads slowly slows the gateway down through TCP. A body from which nothing arrives for {@code
 * read_idle_timeout} is abandoned.
 *
 * <p>Failures: a contact point that refuses the connection, times out, breaks the connection (also
 * mid-batch) or answers 503 is left for the next; rounds over all of them back off until {@code
 * retry_deadline} (then {@link EngineUnreachableException}). Every call is safe to repeat: pulling
 * again after a broken batch stream gets the next batch, and the broken one comes again after the
 * engine's {@code batch_ack_timeout}; acknowledging is idempotent; a publish repeated after its
 * first attempt broke off is fenced by its version (the 409 then says that the first attempt may
 * have been applied). Answers that retrying cannot change (401, 400, 404, 500) are {@link
 * GatewayRequestException}s.
 *
 * <p>Redelivery: a batch delivered again has the same id and is returned as is; the trainer
 * decides (acknowledge again without training twice).
 *
 * <p>Thread safety: safe for concurrent use. Every blocking call honours interruption: it throws
 * {@link InterruptedException}, and a batch whose pull is interrupted comes again after {@code
 * batch_ack_timeout}. After {@link #close()}, calls throw {@link IllegalStateException}.
 */
public final class HttpRolloutClient implements RolloutClient {
    private static final System.Logger log = System.getLogger(HttpRolloutClient.class.getName());
    private static final int MAX_SMALL_BODY = 1 << 20;
    private static final Duration FOREVER = Duration.ofDays(365L * 100);
    private static final String USER_AGENT = "rollout-trainer-client/1";

    private final ClientConfig config;
    private final HttpClient http;
    private final ScheduledExecutorService watchdog;
    private final AtomicInteger preferred = new AtomicInteger();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Connections of batch pulls in flight over plain sockets: closed by {@link #close()}. */
    private final Set<SocketChannel> plainOpen = ConcurrentHashMap.newKeySet();
    /** Renews the lease of pulled batches until they are acknowledged; null without a lease. */
    private final LeaseKeeper leases;

    HttpRolloutClient(ClientConfig config) {
        this.config = Objects.requireNonNull(config, "config");
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
        this.leases = config.lease() == null
                ? null
                : new LeaseKeeper(new BatchLease(holderName(), config.lease()), this::renewLease);
    }

    /** This process's name as a batch holder: host, process id and a nonce for each client. */
    private static String holderName() {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            host = "localhost";
        }
        return host + ":" + ProcessHandle.current().pid() + ":"
                + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);
    }

    /** The configuration this client was connected with. */
    public ClientConfig config() {
        return config;
    }

    @Override
    public TrainingBatch nextBatch() throws InterruptedException {
        long started = System.nanoTime();
        long nextReport = started + WaitReport.FIRST.toNanos();
        while (true) {
            Optional<TrainingBatch> b = pull(config.pollWait());
            if (b.isPresent()) {
                return b.get();
            }
            if (System.nanoTime() - nextReport >= 0) {
                nextReport = System.nanoTime() + WaitReport.EVERY.toNanos();
                reportWait((System.nanoTime() - started) / 1e9);
            }
        }
    }

    /** Says in the log why no batch comes: who holds the batches handed out, and until when. */
    private void reportWait(double waitedSeconds) throws InterruptedException {
        String line;
        try {
            line = WaitReport.line(
                    waitedSeconds,
                    status(),
                    leases == null ? "" : leases.lease().holder());
        } catch (RuntimeException e) {
            line = String.format(
                    Locale.ROOT, "no batch for %.0f s (the status could not be read: %s)", waitedSeconds, e);
        }
        log.log(System.Logger.Level.INFO, line);
    }

    @Override
    public Optional<TrainingBatch> nextBatch(Duration timeout) throws InterruptedException {
        // Saturated: a timeout of years must neither overflow toNanos() nor the deadline arithmetic.
        long nanos = timeout.isNegative() ? 0 : timeout.compareTo(FOREVER) > 0 ? FOREVER.toNanos() : timeout.toNanos();
        long deadline = System.nanoTime() + nanos;
        while (true) {
            long remaining = Math.max(0, deadline - System.nanoTime());
            Optional<TrainingBatch> b =
                    pull(Duration.ofNanos(Math.min(remaining, config.pollWait().toNanos())));
            if (b.isPresent() || System.nanoTime() - deadline >= 0) {
                return b;
            }
        }
    }

    private Optional<TrainingBatch> pull(Duration wait) throws InterruptedException {
        String seconds = String.format(Locale.ROOT, "%.3f", wait.toNanos() / 1e9);
        String path = "/v1/batches/next?wait=" + seconds
                + (leases == null
                        ? ""
                        : String.format(
                                        Locale.ROOT,
                                        "&lease=%.3f",
                                        leases.lease().duration().toMillis() / 1000.0)
                                + "&holder="
                                + URLEncoder.encode(leases.lease().holder(), StandardCharsets.UTF_8));
        Duration timeout = wait.plus(config.requestTimeout());
        Sender viaHttpClient = viaHttpClient(base -> request(base, path, timeout)
                .POST(HttpRequest.BodyPublishers.noBody())
                .build());
        return call(
                "pull a batch",
                // A batch body is read from a plain socket by this thread (PlainHttpExchange); TLS
                // goes through java.net.http.
                base -> "http".equalsIgnoreCase(base.getScheme())
                        ? plain(base, path, timeout)
                        : viaHttpClient.send(base),
                (base, status, body, ambiguous) -> switch (status) {
                    case 204 -> {
                        body.transferTo(OutputStream.nullOutputStream());
                        yield Optional.empty();
                    }
                    case 200 -> {
                        TrainingBatch batch = BatchWireFormat.read(body);
                        if (body.read() != -1) {
                            throw new BatchFormatException(
                                    "batch " + batch.batchId() + ": bytes follow the trailer; the body must end there");
                        }
                        if (leases != null) {
                            leases.holding(batch.batchId());
                        }
                        yield Optional.of(batch);
                    }
                    default -> throw requestError("pull a batch", base, status, body);
                });
    }

    /** Acknowledges with the batch's task ids, so that any gateway can retire its tasks (below). */
    @Override
    public void acknowledge(TrainingBatch batch) throws InterruptedException {
        acknowledge(
                batch.batchId(), batch.groups().stream().map(g -> g.taskId()).toList());
    }

    @Override
    public void acknowledge(long batchId) throws InterruptedException {
        acknowledge(batchId, List.of());
    }

    /**
     * {@inheritDoc}
     *
     * <p>The task ids travel in the request's body ({@code {"task_ids": [..]}}). A gateway other
     * than the one that handed the batch out (that one's node is gone, the call failed over) does
     * not know the batch; with the ids it still retires its tasks, also on a collector that took
     * over from one lost with its node. Without them (an empty list) such an acknowledgement would
     * be answered {@code known: false} and the tasks delivered again.
     */
    @Override
    public void acknowledge(long batchId, List<Long> taskIds) throws InterruptedException {
        String what = "acknowledge batch " + batchId;
        HttpRequest.BodyPublisher ids = taskIds.isEmpty()
                ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofByteArray(GatewayJson.ackRequest(taskIds));
        GatewayJson.AckReply reply = call(
                what,
                viaHttpClient(base -> request(base, "/v1/batches/" + batchId + "/ack", config.requestTimeout())
                        .header("Content-Type", "application/json")
                        .POST(ids)
                        .build()),
                (base, status, body, ambiguous) -> {
                    if (status != 200) {
                        throw requestError(what, base, status, body);
                    }
                    return parse(what, base, body, GatewayJson::parseAck);
                });
        if (leases != null) {
            leases.done(batchId);
        }
        if (!reply.known()) {
            log.log(
                    System.Logger.Level.DEBUG,
                    "batch {0} was not outstanding at the gateway (acknowledged before, or handed out by another gateway)",
                    batchId);
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>{@code weights} is sent as an absolute path (resolved against this process's working
     * directory), since the servers read it.
     */
    @Override
    public PublishResult publishWeights(int version, Path weights) throws InterruptedException {
        return publish(
                "publish weights version " + version,
                GatewayJson.publishRequest(version, weights.toAbsolutePath().toString()));
    }

    /**
     * Publishes {@code version} under {@code rollout.weight_transfer = nccl}: {@code POST /v1/weights
     * {"version", "tensors": [{"name", "dtype", "shape"}, ..]}}. The engine tells every server to
     * receive these tensors from the weight-update group; this trainer's rank 0 must broadcast them
     * (in this order) while the call is in progress, so call it from another thread than the one
     * broadcasting. Answers and errors as {@link #publishWeights}.
     */
    public PublishResult publishTensors(int version, List<TensorSpec> tensors) throws InterruptedException {
        return publish(
                "publish tensors of weights version " + version, GatewayJson.publishTensorsRequest(version, tensors));
    }

    private PublishResult publish(String what, byte[] json) throws InterruptedException {
        return call(
                what,
                viaHttpClient(base -> request(base, "/v1/weights", config.publishTimeout())
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofByteArray(json))
                        .build()),
                (base, status, body, ambiguous) -> switch (status) {
                    case 200 -> parse(what, base, body, GatewayJson::parsePublishResult);
                    case 409 -> {
                        String reason = errorOf(body).message();
                        throw new WeightPublishException(
                                WeightPublishException.Kind.REFUSED,
                                reason
                                        + (ambiguous == null
                                                ? ""
                                                : " (an earlier attempt of this publish broke off with '" + ambiguous
                                                        + "' and may have been applied)"));
                    }
                    case 502 ->
                        throw new WeightPublishException(
                                WeightPublishException.Kind.NOT_LOADED,
                                errorOf(body).message());
                    default -> throw requestError(what, base, status, body);
                });
    }

    /**
     * {@inheritDoc}
     *
     * <p>{@code POST /v1/leases/renew {"holder", "lease"}}. A client configured with a lease
     * ({@link ClientConfig#lease()}) calls this itself while it holds batches.
     */
    @Override
    public List<Long> renewLease(BatchLease lease) throws InterruptedException {
        byte[] json = GatewayJson.renewRequest(lease);
        return call(
                "renew the lease of " + lease.holder(),
                viaHttpClient(base -> request(base, "/v1/leases/renew", config.requestTimeout())
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofByteArray(json))
                        .build()),
                (base, status, body, ambiguous) -> {
                    if (status != 200) {
                        throw requestError("renew a lease", base, status, body);
                    }
                    return parse("renew a lease", base, body, GatewayJson::parseRenewed);
                });
    }

    /** The batches this client holds under its lease and renews (empty without a lease). */
    public Set<Long> leasedBatches() {
        return leases == null ? Set.of() : leases.held();
    }

    @Override
    public RolloutStatus status() throws InterruptedException {
        return call(
                "read status",
                viaHttpClient(base -> request(base, "/v1/status", config.requestTimeout())
                        .GET()
                        .build()),
                (base, status, body, ambiguous) -> {
                    if (status != 200) {
                        throw requestError("read status", base, status, body);
                    }
                    return parse("read status", base, body, GatewayJson::parseStatus);
                });
    }

    @Override
    public StatsPage stats(int sinceVersion) throws InterruptedException {
        if (sinceVersion < 0) {
            throw new IllegalArgumentException("sinceVersion must be >= 0, got " + sinceVersion);
        }
        return call(
                "read statistics",
                viaHttpClient(base -> request(base, "/v1/stats?since_version=" + sinceVersion, config.requestTimeout())
                        .GET()
                        .build()),
                (base, status, body, ambiguous) -> {
                    if (status != 200) {
                        throw requestError("read statistics", base, status, body);
                    }
                    return parse("read statistics", base, body, GatewayJson::parseStats);
                });
    }

    /** Stops every request in flight and the connection pool; never throws; idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            if (leases != null) {
                leases.close();
            }
            http.shutdownNow();
            for (SocketChannel c : plainOpen) {
                try {
                    c.close();
                } catch (IOException e) {
                    log.log(System.Logger.Level.DEBUG, "closing a pull's connection: {0}", e);
                }
            }
            watchdog.shutdownNow();
        }
    }

    @Override
    public String toString() {
        return "HttpRolloutClient" + config.contactPoints();
    }

    /** Reads a response; {@code ambiguous} is the error of an earlier attempt that may have reached a gateway. */
    @FunctionalInterface
    private interface ResponseReader<T> {
        T read(URI base, int status, InputStream body, String ambiguous) throws IOException;
    }

    /** A response's status and body. */
    private record Reply(int status, InputStream body) {}

    /** Sends one request to a contact point. */
    private interface Sender {
        Reply send(URI base) throws IOException, InterruptedException;
    }

    private Sender viaHttpClient(Function<URI, HttpRequest> request) {
        return base -> {
            HttpResponse<InputStream> response =
                    http.send(request.apply(base), HttpResponse.BodyHandlers.ofInputStream());
            return new Reply(response.statusCode(), response.body());
        };
    }

    /** {@code POST path} with no body over a plain socket ({@link PlainHttpExchange}). */
    private Reply plain(URI base, String path, Duration timeout) throws IOException {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("User-Agent", USER_AGENT);
        if (config.token() != null) {
            headers.put("Authorization", "Bearer " + config.token());
        }
        String prefix = base.getRawPath() == null ? "" : base.getRawPath().replaceAll("/+$", "");
        PlainHttpExchange exchange =
                PlainHttpExchange.post(base, prefix + path, headers, config.connectTimeout(), timeout, plainOpen);
        return new Reply(exchange.status(), exchange.body());
    }

    /**
     * Sends the request to the preferred contact point, failing over and backing off as the class
     * comment says, and reads the response with {@code reader}.
     */
    private <T> T call(String what, Sender sender, ResponseReader<T> reader) throws InterruptedException {
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
                    try (InputStream body = new IdleGuardedStream(response.body(), base, what)) {
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

    private HttpRequest.Builder request(URI base, String path, Duration timeout) {
        HttpRequest.Builder b =
                HttpRequest.newBuilder(URI.create(base + path)).timeout(timeout).header("User-Agent", USER_AGENT);
        if (config.token() != null) {
            b.header("Authorization", "Bearer " + config.token());
        }
        return b;
    }

    private static <T> T parse(String what, URI base, InputStream body, Function<byte[], T> parser) throws IOException {
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

    private static GatewayJson.ErrorBody errorOf(InputStream body) throws IOException {
        return GatewayJson.parseError(body.readNBytes(MAX_SMALL_BODY));
    }

    private static GatewayRequestException requestError(String what, URI base, int status, InputStream body)
            throws IOException {
        GatewayJson.ErrorBody e = errorOf(body);
        return new GatewayRequestException(what, base, status, e.code(), e.message());
    }

    /** Interruption surfaces from the HTTP client as an IOException with the flag set or an InterruptedException cause. */
    private static void throwIfInterrupted(IOException e) throws InterruptedException {
        boolean interrupted = Thread.interrupted()
                || (e instanceof InterruptedIOException && !(e instanceof SocketTimeoutException))
                || e.getCause() instanceof InterruptedException;
        if (interrupted) {
            InterruptedException ie = new InterruptedException("interrupted: " + e.getMessage());
            ie.initCause(e);
            throw ie;
        }
    }

    private static String describe(IOException e) {
        String m = e.getMessage();
        if (e instanceof ConnectException && (m == null || m.isBlank())) {
            return "connection refused";
        }
        return e.getClass().getSimpleName() + (m == null || m.isBlank() ? "" : ": " + m);
    }

    /**
     * Abandons a body from which no byte arrives for {@code read_idle_timeout}: closing the HTTP
     * client's stream wakes the blocked reader, which then fails with a message saying so.
     */
    private final class IdleGuardedStream extends FilterInputStream {
        private final URI base;
        private final String what;
        private final ScheduledFuture<?> check;
        private volatile long lastProgress = System.nanoTime();
        private volatile boolean expired;

        IdleGuardedStream(InputStream in, URI base, String what) {
            super(in);
            this.base = base;
            this.what = what;
            long period = Math.max(10, Math.min(1000, config.readIdleTimeout().toMillis() / 4));
            this.check = watchdog.scheduleWithFixedDelay(this::checkIdle, period, period, TimeUnit.MILLISECONDS);
        }

        private void checkIdle() {
            if (System.nanoTime() - lastProgress > config.readIdleTimeout().toNanos()) {
                expired = true;
                check.cancel(false);
                try {
                    in.close();
                } catch (IOException e) {
                    log.log(System.Logger.Level.DEBUG, "closing a stalled body from {0}: {1}", base, e);
                }
            }
        }

        @Override
        public int read() throws IOException {
            try {
                int b = super.read();
                lastProgress = System.nanoTime();
                return b;
            } catch (IOException e) {
                throw stalled(e);
            }
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            try {
                int n = super.read(b, off, len);
                lastProgress = System.nanoTime();
                return n;
            } catch (IOException e) {
                throw stalled(e);
            }
        }

        private IOException stalled(IOException e) {
            if (!expired) {
                return e;
            }
            return new IOException(
                    "no data from " + base + " for " + config.readIdleTimeout().toMillis()
                            + " ms (read_idle_timeout) while trying to " + what,
                    e);
        }

        @Override
        public void close() throws IOException {
            check.cancel(false);
            super.close();
        }
    }
}
