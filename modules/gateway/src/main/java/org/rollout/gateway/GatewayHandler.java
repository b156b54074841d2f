package org.rollout.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.rollout.api.TrainingBatch;
import org.rollout.trainer.BatchLease;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.WeightPublishException;
import org.rollout.trainer.wire.BatchWireFormat;
import org.rollout.trainer.wire.EncodedBatch;
import org.rollout.trainer.wire.EncodedBatchSource;
import org.rollout.trainer.wire.GatewayJson;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's endpoints, each a call on the engine-side {@link RolloutClient}. One exchange per
 * virtual thread; blocking is fine here.
 *
 * <pre>
 *   GET  /health                     no token; 200 {"status":"ok"} | 503 {"status":"degraded","problems":[..]}
 *   POST /v1/batches/next?wait=S     engine.nextBatch(min(S, max_poll_wait)) → 200 RBATCH stream | 204
 *        [&lease=L&holder=H]         held for H while H renews within L seconds (PullQuery)
 *   POST /v1/batches/{id}/ack        engine.acknowledge(id, task ids)       → 200 {"batch_id","known"}
 *        [{"task_ids": [..]}]
 *   POST /v1/leases/renew            engine.renewLease(holder, lease)       → 200 {"holder","lease_seconds","batch_ids"}
 *        {"holder", "lease"}
 *   POST /v1/weights                 engine.publishWeights(version, path)  → 200 | 409 | 502
 *        {"version", "tensors"}      (weight_transfer = nccl) the tensors' names, dtypes, shapes spooled
 *                                    as a manifest on this node, then published as above
 *   POST /v1/weights?version=N       (application/octet-stream: the weight file's bytes) spooled
 *                                    on this node, then published as above → 200 | 400 | 409 | 502
 *   GET  /v1/status                  engine.status()                        → 200
 *   GET  /v1/stats?since_version=N   engine.stats(N)                        → 200 {"lines","complete_below"} | 400
 *   GET  /v1/servers                 the inference servers, state, version → 200
 *   POST /v1/servers                 {"address": "host:port"}: added       → 201 | 200 (already there) | 400
 *   DELETE /v1/servers/{host:port}[?hand_over_after=S]  drained            → 202 | 200 (already) | 404 | 409
 * </pre>
 *
 * <p>Every error is {@code {"error": {"message", "code"}}} with its status. Nothing is swallowed: an
 * engine failure is a 500 carrying the engine's message (and logged with its stack); a trainer that
 * goes away mid-batch is logged, and its batch comes again after {@code batch_ack_timeout}.
 */
final class GatewayHandler implements HttpHandler {
    private static final Logger log = LoggerFactory.getLogger(GatewayHandler.class);
    private static final Pattern ACK = Pattern.compile("/v1/batches/([^/]+)/ack");
    private static final Pattern SERVER = Pattern.compile("/v1/servers/([^/]+)");
    /** How long a drained server may finish its segments before it hands them over, unless the request says. */
    static final Duration DEFAULT_HAND_OVER_AFTER = Duration.ofSeconds(60);

    private static final ObjectMapper JSON = new ObjectMapper();
    static final int MAX_REQUEST_BYTES = 64 * 1024;

    private final RolloutClient engine;
    private final BearerToken token;
    private final Duration maxPollWait;
    private final HandedOutBatches handedOut = new HandedOutBatches();
    private final java.util.function.Supplier<GatewayHealth> health;
    private final ServerDirectory servers;
    private final io.micrometer.core.instrument.DistributionSummary handoffBytes;
    private final io.micrometer.core.instrument.Timer handoffTime;
    /** Pulls served at once (waiting for a batch or streaming one), at most {@code gateway.max_waiting_pulls}. */
    private final java.util.concurrent.Semaphore pullSlots;

    private final int maxWaitingPulls;
    private final Duration writeTimeout;
    private final java.util.concurrent.atomic.AtomicLong pullsRefused = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong pullsAdmitted = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong writesTimedOut = new java.util.concurrent.atomic.AtomicLong();
    /** Batches whose connection closed before their last byte, handed back for the next pull. */
    private final java.util.concurrent.atomic.AtomicLong batchesReleased = new java.util.concurrent.atomic.AtomicLong();

    private final java.util.concurrent.atomic.AtomicLong refusalsLogged = new java.util.concurrent.atomic.AtomicLong();
    private volatile long lastRefusalLogNanos = System.nanoTime() - REFUSAL_LOG_EVERY.toNanos();
    /** Batch streams under way, watched for stalls ({@code gateway.write_timeout}). */
    private final java.util.Set<Stream> streams = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private static final Duration REFUSAL_LOG_EVERY = Duration.ofSeconds(10);

    GatewayHandler(RolloutClient engine, GatewayConfig config) {
        this(engine, config, GatewayExtras.NONE);
    }

    GatewayHandler(RolloutClient engine, GatewayConfig config, GatewayExtras extras) {
        this.engine = engine;
        this.token = config.token() == null ? null : new BearerToken(config.token());
        this.maxPollWait = config.maxPollWait();
        this.maxWaitingPulls = config.maxWaitingPulls();
        this.pullSlots = new java.util.concurrent.Semaphore(maxWaitingPulls);
        this.writeTimeout = config.writeTimeout();
        this.health = extras.health() == null ? () -> GatewayHealth.OK : extras.health();
        this.servers = extras.servers();
        if (extras.registry() != null) {
            handoffBytes = io.micrometer.core.instrument.DistributionSummary.builder("rollout_batch_handoff_size")
                    .description("bytes of one batch streamed to a trainer")
                    .baseUnit("bytes")
                    .register(extras.registry());
            handoffTime = io.micrometer.core.instrument.Timer.builder("rollout_batch_handoff_duration")
                    .description("time to stream one batch to a trainer, from the first byte to the last")
                    .register(extras.registry());
            io.micrometer.core.instrument.Gauge.builder(
                            "rollout_gateway_pulls", pullSlots, slots -> maxWaitingPulls - slots.availablePermits())
                    .description("pulls this gateway serves now (waiting for a batch or streaming one)")
                    .register(extras.registry());
            io.micrometer.core.instrument.FunctionCounter.builder(
                            "rollout_gateway_pulls_refused", pullsRefused, java.util.concurrent.atomic.AtomicLong::get)
                    .description("pulls answered 503 too_many_pulls: gateway.max_waiting_pulls were under way")
                    .register(extras.registry());
            io.micrometer.core.instrument.FunctionCounter.builder(
                            "rollout_gateway_batch_writes_timed_out",
                            writesTimedOut,
                            java.util.concurrent.atomic.AtomicLong::get)
                    .description("batch streams dropped after gateway.write_timeout without progress")
                    .register(extras.registry());
            io.micrometer.core.instrument.FunctionCounter.builder(
                            "rollout_gateway_batches_released",
                            batchesReleased,
                            java.util.concurrent.atomic.AtomicLong::get)
                    .description("batches whose connection closed before their last byte, given to the next pull")
                    .register(extras.registry());
        } else {
            handoffBytes = null;
            handoffTime = null;
        }
        Thread.ofVirtual().name("trainer-gateway-write-watch").start(this::watchStreams);
    }

    /** Pulls this gateway serves now. */
    int pullsUnderWay() {
        return maxWaitingPulls - pullSlots.availablePermits();
    }

    long pullsRefused() {
        return pullsRefused.get();
    }

    /** Pulls served (not refused) so far. */
    long pullsAdmitted() {
        return pullsAdmitted.get();
    }

    /** Batches whose connection closed before their last byte, handed back for the next pull. */
    long batchesReleased() {
        return batchesReleased.get();
    }

    long writesTimedOut() {
        return writesTimedOut.get();
    }

    /** One batch being streamed: its thread, and the bytes it has written so far. */
    private static final class Stream {
        final Thread thread = Thread.currentThread();
        final long batchId;
        final CountingStream out;
        long lastCount = -1;
        long lastProgress = System.nanoTime();
        boolean done;

        Stream(long batchId, CountingStream out) {
            this.batchId = batchId;
            this.out = out;
        }
    }

    /**
     * Drops every batch stream that wrote nothing for {@code gateway.write_timeout}: its thread is
     * interrupted, which closes its socket; the batch, unacknowledged, is delivered again after
     * {@code batch_ack_timeout} (docs/protocol.md). Runs until the gateway's handler is closed.
     */
    private void watchStreams() {
        long period = Math.max(50, Math.min(1000, writeTimeout.toMillis() / 4));
        while (!closing) {
            try {
                Thread.sleep(period);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            for (Stream s : streams) {
                synchronized (s) {
                    if (s.done) {
                        continue;
                    }
                    if (s.out.count != s.lastCount) {
                        s.lastCount = s.out.count;
                        s.lastProgress = now;
                    } else if (now - s.lastProgress > writeTimeout.toNanos()) {
                        s.done = true;
                        writesTimedOut.incrementAndGet();
                        log.warn(
                                "batch {}: the trainer read nothing for {} ms (gateway.write_timeout) after {} bytes;"
                                        + " the connection is dropped and the batch given to the next pull",
                                s.batchId,
                                writeTimeout.toMillis(),
                                s.out.count);
                        s.thread.interrupt();
                    }
                }
            }
        }
    }

    private volatile boolean closing;

    /** Stops the stall watch. */
    void stopWatching() {
        closing = true;
    }

    /** An answer other than success, with its status and stable code. */
    private static final class Refusal extends Exception {
        final int status;
        final String code;
        final String allow;

        Refusal(int status, String code, String message) {
            this(status, code, message, null);
        }

        Refusal(int status, String code, String message, String allow) {
            super(message, null, false, false);
            this.status = status;
            this.code = code;
            this.allow = allow;
        }
    }

    @Override
    public void handle(HttpExchange ex) {
        String method = ex.getRequestMethod();
        String path = ex.getRequestURI().getRawPath();
        try {
            if (path.equals("/v1/weights") && isUpload(ex)) {
                authorize(ex); // before a single byte is spooled
                expect(ex, "POST");
                upload(ex);
                return;
            }
            byte[] body = readBody(ex);
            if (path.equals("/health")) {
                expect(ex, "GET");
                GatewayHealth h = health.get();
                json(ex, h.ok() ? 200 : 503, h.ok() ? GatewayJson.health() : degraded(h));
                return;
            }
            authorize(ex);
            Matcher ack = ACK.matcher(path);
            Matcher server = SERVER.matcher(path);
            switch (path) {
                case "/v1/batches/next" -> {
                    expect(ex, "POST");
                    next(ex);
                }
                case "/v1/weights" -> {
                    expect(ex, "POST");
                    publish(ex, body);
                }
                case "/v1/leases/renew" -> {
                    expect(ex, "POST");
                    renewLease(ex, body);
                }
                case "/v1/status" -> {
                    expect(ex, "GET");
                    json(ex, 200, GatewayJson.status(engine.status()));
                }
                case "/v1/stats" -> {
                    expect(ex, "GET");
                    int since = sinceVersionOf(ex.getRequestURI().getRawQuery());
                    try {
                        json(ex, 200, GatewayJson.stats(engine.stats(since)));
                    } catch (UnsupportedOperationException e) {
                        throw new Refusal(501, "not_implemented", e.getMessage());
                    }
                }
                case "/v1/servers" -> {
                    ServerDirectory directory = directory();
                    if (ex.getRequestMethod().equals("GET")) {
                        listServers(ex, directory);
                    } else {
                        expect(ex, "POST", "GET, POST");
                        addServer(ex, directory, body);
                    }
                }
                default -> {
                    if (server.matches()) {
                        expect(ex, "DELETE");
                        drainServer(ex, directory(), server.group(1));
                        return;
                    }
                    if (!ack.matches()) {
                        throw new Refusal(
                                404,
                                "not_found",
                                "no endpoint " + method + " " + path + " (endpoints: POST /v1/batches/next, POST"
                                        + " /v1/batches/{id}/ack, POST /v1/leases/renew, POST /v1/weights, GET /v1/status, GET /v1/stats,"
                                        + " GET|POST /v1/servers, DELETE /v1/servers/{host:port}, GET /health)");
                    }
                    expect(ex, "POST");
                    acknowledge(ex, ack.group(1), body);
                }
            }
        } catch (Refusal r) {
            if (r.status >= 500 && !r.code.equals(TOO_MANY_PULLS)) {
                log.warn("{} {}: {} {}", method, path, r.status, r.getMessage());
            }
            if (r.allow != null) {
                ex.getResponseHeaders().set("Allow", r.allow);
            }
            if (r.status == 401) {
                ex.getResponseHeaders().set("WWW-Authenticate", "Bearer realm=\"rollout\"");
            }
            if (r.code.equals(TOO_MANY_PULLS)) {
                ex.getResponseHeaders().set("Retry-After", "1");
            }
            respondQuietly(ex, r.status, GatewayJson.error(r.code, r.getMessage()));
        } catch (InterruptedException e) {
            // The gateway is closing: the trainer should try another contact point.
            respondQuietly(ex, 503, GatewayJson.error("unavailable", "the trainer gateway is shutting down"));
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            log.info("{} {}: the trainer went away: {}", method, path, e.toString());
        } catch (RuntimeException e) {
            log.warn("{} {}: the engine failed", method, path, e);
            respondQuietly(ex, 500, GatewayJson.error("engine_error", String.valueOf(e.getMessage())));
        } finally {
            ex.close();
        }
    }

    private void authorize(HttpExchange ex) throws Refusal {
        if (token == null) {
            return;
        }
        switch (token.check(ex.getRequestHeaders().getFirst("Authorization"))) {
            case ACCEPTED -> {}
            case MISSING ->
                throw new Refusal(
                        401, "unauthorized", "this gateway requires an 'Authorization: Bearer <token>' header");
            case WRONG -> throw new Refusal(401, "unauthorized", "the bearer token does not match");
        }
    }

    private static void expect(HttpExchange ex, String method) throws Refusal {
        expect(ex, method, method);
    }

    private static void expect(HttpExchange ex, String method, String allowed) throws Refusal {
        if (!ex.getRequestMethod().equals(method)) {
            throw new Refusal(
                    405,
                    "method_not_allowed",
                    ex.getRequestURI().getRawPath() + " takes " + allowed + ", not " + ex.getRequestMethod(),
                    allowed);
        }
    }

    /** The threads waiting in a pull now: {@link #interruptPulls} ends their waits when the gateway closes. */
    private final java.util.Set<Thread> waitingPulls = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /** Interrupts every pull waiting for a batch: each is answered 503, so its trainer tries another contact point. */
    void interruptPulls() {
        waitingPulls.forEach(Thread::interrupt);
    }

    private ServerDirectory directory() throws Refusal {
        if (servers == null) {
            throw new Refusal(404, "not_found", "this gateway has no inference server list (/v1/servers)");
        }
        return servers;
    }

    private static void listServers(HttpExchange ex, ServerDirectory directory) throws IOException {
        ObjectNode root = JSON.createObjectNode();
        ArrayNode list = root.putArray("servers");
        for (ServerDirectory.Entry e : directory.list()) {
            ObjectNode o = list.addObject();
            o.put("address", e.address());
            o.put("state", e.state());
            if (e.version() == null) {
                o.putNull("version");
            } else {
                o.put("version", e.version());
            }
            o.put("in_rotation", e.inRotation());
            o.put("outstanding", e.outstanding());
            o.put("requests", e.requests());
            if (e.lastError() == null) {
                o.putNull("last_error");
            } else {
                o.put("last_error", e.lastError());
            }
        }
        json(ex, 200, JSON.writeValueAsBytes(root));
    }

    private static void addServer(HttpExchange ex, ServerDirectory directory, byte[] body) throws Refusal, IOException {
        JsonNode request;
        try {
            request = JSON.readTree(body);
        } catch (IOException e) {
            throw new Refusal(400, "bad_request", "add server request: the body is not JSON (" + e.getMessage() + ")");
        }
        if (request == null || !request.isObject()) {
            throw new Refusal(400, "bad_request", "add server request: the body must be {\"address\": \"host:port\"}");
        }
        List<String> unknown = new ArrayList<>();
        request.fieldNames().forEachRemaining(f -> {
            if (!f.equals("address")) {
                unknown.add(f);
            }
        });
        if (!unknown.isEmpty()) {
            throw new Refusal(
                    400,
                    "bad_request",
                    "add server request: unknown field(s) " + unknown + " (the only field is 'address')");
        }
        JsonNode address = request.get("address");
        if (address == null || !address.isTextual() || address.asText().isBlank()) {
            throw new Refusal(
                    400,
                    "bad_request",
                    "add server request: field 'address' must be a string \"host:port\", got " + address);
        }
        boolean added;
        try {
            added = directory.add(address.asText());
        } catch (IllegalArgumentException e) {
            throw new Refusal(400, "bad_request", "add server request: field 'address': " + e.getMessage());
        } catch (ServerDirectory.NotReplicatedException e) {
            throw notReplicated(e);
        }
        ObjectNode answer = JSON.createObjectNode();
        answer.put("address", address.asText().strip());
        answer.put("added", added);
        json(ex, added ? 201 : 200, JSON.writeValueAsBytes(answer));
    }

    private static void drainServer(HttpExchange ex, ServerDirectory directory, String rawAddress)
            throws Refusal, IOException {
        String address = URLDecoder.decode(rawAddress, StandardCharsets.UTF_8);
        Duration handOverAfter = DEFAULT_HAND_OVER_AFTER;
        String query = ex.getRequestURI().getRawQuery();
        if (query != null && !query.isEmpty()) {
            for (String pair : query.split("&")) {
                int eq = pair.indexOf('=');
                String name = eq < 0 ? pair : pair.substring(0, eq);
                String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
                if (!name.equals("hand_over_after")) {
                    throw new Refusal(
                            400,
                            "bad_request",
                            "drain server request: unknown query parameter '" + name
                                    + "' (the only one is 'hand_over_after', in seconds)");
                }
                try {
                    double seconds = Double.parseDouble(value);
                    if (!(seconds >= 0) || Double.isInfinite(seconds)) {
                        throw new NumberFormatException();
                    }
                    handOverAfter = Duration.ofMillis(Math.round(seconds * 1000));
                } catch (NumberFormatException e) {
                    throw new Refusal(
                            400,
                            "bad_request",
                            "drain server request: query parameter 'hand_over_after' must be seconds >= 0, got '"
                                    + value + "'");
                }
            }
        }
        boolean draining;
        try {
            draining = directory.drain(address, handOverAfter);
        } catch (NoSuchElementException e) {
            throw new Refusal(404, "unknown_server", e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new Refusal(400, "bad_request", "drain server request: address '" + address + "': " + e.getMessage());
        } catch (ServerDirectory.NotReplicatedException e) {
            throw notReplicated(e);
        } catch (IllegalStateException e) {
            throw new Refusal(409, "last_server", e.getMessage());
        }
        ObjectNode answer = JSON.createObjectNode();
        answer.put("address", address);
        answer.put("draining", true);
        answer.put("hand_over_after_seconds", handOverAfter.toMillis() / 1000.0);
        json(ex, draining ? 202 : 200, JSON.writeValueAsBytes(answer));
    }

    private static Refusal notReplicated(ServerDirectory.NotReplicatedException e) {
        return new Refusal(
                503,
                "not_replicated",
                e.getMessage() + "; it holds on this node only and is lost if this node is downed: repeat it"
                        + " through another node's gateway");
    }

    private void renewLease(HttpExchange ex, byte[] body) throws Refusal, IOException, InterruptedException {
        BatchLease lease;
        try {
            lease = GatewayJson.parseRenewRequest(body);
        } catch (IllegalArgumentException e) {
            throw new Refusal(400, "bad_request", e.getMessage());
        }
        json(ex, 200, GatewayJson.renewed(lease, engine.renewLease(lease)));
    }

    static final String TOO_MANY_PULLS = "too_many_pulls";

    private void next(HttpExchange ex) throws Refusal, IOException, InterruptedException {
        PullQuery query;
        try {
            query = PullQuery.parse(
                    ex.getRequestURI().getRawQuery(), maxPollWait, String.valueOf(ex.getRemoteAddress()));
        } catch (IllegalArgumentException e) {
            throw new Refusal(400, "bad_request", e.getMessage());
        }
        if (!pullSlots.tryAcquire()) {
            long refused = pullsRefused.incrementAndGet();
            long now = System.nanoTime();
            if (now - lastRefusalLogNanos >= REFUSAL_LOG_EVERY.toNanos()) {
                lastRefusalLogNanos = now;
                long since = refused - refusalsLogged.getAndSet(refused);
                log.warn(
                        "{} pull(s) refused (503 {}) since the last report: {} pulls under way, the limit"
                                + " gateway.max_waiting_pulls (node flag --gateway-max-waiting-pulls)",
                        since,
                        TOO_MANY_PULLS,
                        maxWaitingPulls);
            }
            throw new Refusal(
                    503,
                    TOO_MANY_PULLS,
                    "this gateway already serves " + maxWaitingPulls + " pulls, its limit gateway.max_waiting_pulls"
                            + " (node flag --gateway-max-waiting-pulls): read the answers of the pulls already"
                            + " open, or try again later or on another gateway");
        }
        pullsAdmitted.incrementAndGet();
        try {
            pull(ex, query);
        } finally {
            pullSlots.release();
        }
    }

    private void pull(HttpExchange ex, PullQuery query) throws IOException, InterruptedException {
        Optional<EncodedBatch> next;
        waitingPulls.add(Thread.currentThread());
        try {
            next = nextEncoded(query);
        } finally {
            waitingPulls.remove(Thread.currentThread());
        }
        if (next.isEmpty()) {
            ex.sendResponseHeaders(204, -1);
            return;
        }
        try (EncodedBatch body = next.get()) {
            send(ex, body);
        }
    }

    /**
     * The engine's next batch in RBATCH form: relayed from the node that holds it when the engine
     * can ({@link EncodedBatchSource}), else encoded here.
     */
    private Optional<EncodedBatch> nextEncoded(PullQuery q) throws InterruptedException {
        if (engine instanceof EncodedBatchSource source) {
            return source.nextEncodedBatch(q.maxWait(), q.holder(), q.lease());
        }
        Optional<TrainingBatch> next =
                q.lease() == null ? engine.nextBatch(q.maxWait()) : engine.nextBatch(q.maxWait(), q.lease());
        if (next.isEmpty()) {
            return Optional.empty();
        }
        try {
            return Optional.of(EncodedBatch.of(next.get()));
        } catch (IOException e) {
            engine.release(next.get().batchId());
            throw new IllegalStateException(
                    "batch " + next.get().batchId() + ": encoding its groups' metadata failed: " + e.getMessage(), e);
        }
    }

    private void send(HttpExchange ex, EncodedBatch body) throws IOException {
        handedOut.add(body.batchId(), body.taskIds());
        ex.getResponseHeaders().set("Content-Type", BatchWireFormat.CONTENT_TYPE);
        ex.getResponseHeaders().set("X-Rollout-Batch-Id", Long.toString(body.batchId()));
        ex.getResponseHeaders().set("X-Rollout-Groups", Integer.toString(body.groups()));
        // The exact length up front (the metadata is encoded once for it): a plain body, encoded through
        // a 1 MiB buffer and handed to the socket in large writes (the stall watch counts each), where
        // chunked encoding would cut it into 4 KiB chunks. The tensors still go out as they are encoded
        // (or as they arrive from the node that holds the batch); nothing holds the whole body.
        ex.sendResponseHeaders(200, body.length());
        CountingStream out = new CountingStream(ex.getResponseBody());
        long started = System.nanoTime();
        Stream watched = new Stream(body.batchId(), out);
        streams.add(watched);
        try {
            body.writeTo(out);
            out.close();
            if (handoffBytes != null) {
                handoffBytes.record(out.count);
                handoffTime.record(System.nanoTime() - started, java.util.concurrent.TimeUnit.NANOSECONDS);
            }
        } catch (IOException e) {
            String who = e instanceof EncodedBatch.SourceFailedException
                    ? "the node holding it failed"
                    : "the trainer went away";
            if (out.count < body.length()) {
                // Not received whole, so never trained on: the next pull takes it, not one after
                // batch_ack_timeout (a pull whose client left while it waited shows only here).
                engine.release(body.batchId());
                batchesReleased.incrementAndGet();
                log.info(
                        "batch {} ({} groups): {} after {} of {} bytes ({}); the next pull takes it",
                        body.batchId(),
                        body.groups(),
                        who,
                        out.count,
                        body.length(),
                        e.toString());
            } else {
                log.info(
                        "batch {} ({} groups): {} after the last byte ({}); it is delivered again after"
                                + " batch_ack_timeout unless acknowledged",
                        body.batchId(),
                        body.groups(),
                        who,
                        e.toString());
            }
        } finally {
            streams.remove(watched);
            synchronized (watched) {
                if (watched.done) {
                    // Dropped by the stall watch: the interrupt was for this stream only.
                    Thread.interrupted();
                }
                watched.done = true;
            }
        }
    }

    /**
     * {@code since_version} of {@code GET /v1/stats}: an integer ≥ 0, 0 when absent. Any other
     * parameter is refused by name, so a misspelt one does not silently answer every version.
     */
    private static int sinceVersionOf(String rawQuery) throws Refusal {
        String value = null;
        if (rawQuery != null && !rawQuery.isEmpty()) {
            for (String pair : rawQuery.split("&")) {
                int eq = pair.indexOf('=');
                String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
                if (!name.equals("since_version")) {
                    throw new Refusal(
                            400,
                            "bad_request",
                            "unknown query parameter '" + name + "' (GET /v1/stats takes since_version)");
                }
                value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            }
        }
        if (value == null) {
            return 0;
        }
        try {
            int v = Integer.parseInt(value.strip());
            if (v >= 0) {
                return v;
            }
        } catch (NumberFormatException e) {
            // Described below.
        }
        throw new Refusal(
                400,
                "bad_request",
                "query parameter 'since_version' must be an integer version >= 0, got '" + value + "'");
    }

    /**
     * Acknowledges batch {@code rawId} with the task ids this gateway recorded when it handed the
     * batch out, or else those of the body ({@code {"task_ids": [..]}}, sent by a trainer whose
     * call failed over from the gateway that handed it out): with them the engine retires the tasks
     * even when the batch was handed out by a collector lost with its node.
     */
    private void acknowledge(HttpExchange ex, String rawId, byte[] body)
            throws Refusal, IOException, InterruptedException {
        long id;
        try {
            id = Long.parseLong(rawId);
        } catch (NumberFormatException e) {
            throw new Refusal(400, "bad_request", "batch id must be an integer, got '" + rawId + "'");
        }
        List<Long> fromTrainer;
        try {
            fromTrainer = GatewayJson.parseAckRequest(body);
        } catch (IllegalArgumentException e) {
            throw new Refusal(400, "bad_request", "batch " + id + ": " + e.getMessage());
        }
        List<Long> taskIds = handedOut.remove(id);
        boolean known = taskIds != null;
        if (taskIds == null && !fromTrainer.isEmpty()) {
            taskIds = fromTrainer;
        }
        if (taskIds != null) {
            engine.acknowledge(id, taskIds);
        } else {
            engine.acknowledge(id);
        }
        json(ex, 200, GatewayJson.ack(id, known));
    }

    private void publish(HttpExchange ex, byte[] body) throws Refusal, IOException, InterruptedException {
        GatewayJson.PublishRequest request;
        Path path;
        try {
            request = GatewayJson.parsePublishRequest(body);
            if (request.tensors() != null) {
                publishTensors(ex, request);
                return;
            }
            path = Path.of(request.path());
        } catch (IllegalArgumentException e) { // also InvalidPathException
            throw new Refusal(400, "bad_request", e.getMessage());
        }
        if (!path.isAbsolute()) {
            throw new Refusal(
                    400,
                    "bad_request",
                    "publish request: field 'path' must be absolute, got '" + request.path()
                            + "' (the servers read the file; a relative path would resolve against the engine's"
                            + " working directory)");
        }
        PublishResult result;
        try {
            result = engine.publishWeights(request.version(), path);
        } catch (WeightPublishException e) {
            if (refused(e, request.version())) {
                throw new Refusal(409, "version_refused", e.getMessage());
            }
            throw new Refusal(502, "weights_not_loaded", e.getMessage());
        }
        json(ex, 200, GatewayJson.publishResult(result));
    }

    /**
     * {@code POST /v1/weights {"version", "tensors"}} ({@code weight_transfer = nccl}): writes the
     * tensors' names, dtypes and shapes as a manifest file in the spool on this node and publishes
     * that file as the version, with the path publish's fencing and answers; the engine reads the
     * manifest and tells the servers to receive those tensors from the trainer's broadcast.
     */
    private void publishTensors(HttpExchange ex, GatewayJson.PublishRequest request)
            throws Refusal, IOException, InterruptedException {
        int version = request.version();
        Files.createDirectories(spool);
        Path file = Files.createTempFile(spool, "v" + version + "-", ".tensors.json");
        boolean published = false;
        try {
            Files.write(file, GatewayJson.tensorManifest(request.tensors()));
            PublishResult result;
            try {
                result = engine.publishWeights(version, file);
            } catch (WeightPublishException e) {
                if (refused(e, version)) {
                    throw new Refusal(409, "version_refused", e.getMessage());
                }
                throw new Refusal(502, "weights_not_loaded", e.getMessage());
            }
            published = true;
            synchronized (this) {
                if (lastUpload != null) {
                    Files.deleteIfExists(lastUpload);
                }
                lastUpload = file;
            }
            json(ex, 200, GatewayJson.publishResult(result));
        } finally {
            if (!published) {
                Files.deleteIfExists(file);
            }
        }
    }

    /** The upload spool: uploaded weight files until a newer upload is published. */
    private final Path spool = Path.of(System.getProperty("java.io.tmpdir"), "rollout-gateway-uploads");

    /** The last upload published, kept: servers that restart are re-synced from it. */
    private Path lastUpload;

    private static boolean isUpload(HttpExchange ex) {
        String type = ex.getRequestHeaders().getFirst("Content-Type");
        return type != null && type.toLowerCase(Locale.ROOT).startsWith("application/octet-stream");
    }

    /**
     * {@code POST /v1/weights?version=N} with the weight file's bytes: streams them to a file in the
     * spool on this node and publishes that file as {@code N}, with the path publish's fencing and
     * answers. A failed publish deletes its file; a successful one deletes the previous upload.
     */
    private void upload(HttpExchange ex) throws Refusal, IOException, InterruptedException {
        int version = versionOf(ex.getRequestURI().getRawQuery());
        Files.createDirectories(spool);
        Path file = Files.createTempFile(spool, "v" + version + "-", ".weights");
        boolean published = false;
        try {
            long bytes;
            try (InputStream in = ex.getRequestBody()) {
                bytes = Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            }
            if (bytes == 0) {
                throw new Refusal(
                        400, "bad_request", "weight upload: the body is empty (send the weight file's bytes)");
            }
            PublishResult result;
            try {
                result = engine.publishWeights(version, file);
            } catch (WeightPublishException e) {
                if (refused(e, version)) {
                    throw new Refusal(409, "version_refused", e.getMessage());
                }
                throw new Refusal(502, "weights_not_loaded", e.getMessage());
            }
            published = true;
            log.info("weight upload: {} bytes published as version {} from {}", bytes, version, file);
            synchronized (this) {
                if (lastUpload != null) {
                    Files.deleteIfExists(lastUpload);
                }
                lastUpload = file;
            }
            json(ex, 200, GatewayJson.publishResult(result));
        } finally {
            if (!published) {
                Files.deleteIfExists(file);
            }
        }
    }

    private static int versionOf(String rawQuery) throws Refusal {
        String value = null;
        for (String pair : rawQuery == null ? new String[0] : rawQuery.split("&")) {
            int eq = pair.indexOf('=');
            String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
            if (name.equals("version")) {
                value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            } else if (!name.isEmpty()) {
                throw new Refusal(400, "bad_request", "weight upload: unknown query parameter '" + name + "'");
            }
        }
        if (value == null || !value.matches("\\d{1,9}")) {
            throw new Refusal(
                    400,
                    "bad_request",
                    "weight upload: query parameter 'version' must be an integer >= 0, got "
                            + (value == null ? "none" : "'" + value + "'"));
        }
        return Integer.parseInt(value);
    }

    /**
     * Whether a failed publish was refused by fencing. An engine client that does not say is judged
     * by the engine's version now: versions never go back, so a fencing refusal of {@code version}
     * leaves the engine at {@code version} or above, while a load failure leaves it below (unless
     * another publish overtook it, and then publishing {@code version} can never succeed either).
     */
    private boolean refused(WeightPublishException e, int version) throws InterruptedException {
        return switch (e.kind()) {
            case REFUSED -> true;
            case NOT_LOADED -> false;
            case UNSPECIFIED -> engine.status().version() >= version;
        };
    }

    /** {@code {"status":"degraded","problems":[{"check","message"}, …]}}. */
    private static byte[] degraded(GatewayHealth h) {
        var body = new java.util.LinkedHashMap<String, Object>();
        body.put("status", "degraded");
        body.put(
                "problems",
                h.problems().stream()
                        .map(p -> java.util.Map.of("check", p.check(), "message", p.message()))
                        .toList());
        try {
            return HEALTH_JSON.writeValueAsBytes(body);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException("a map of strings always serializes", e);
        }
    }

    private static final com.fasterxml.jackson.databind.ObjectMapper HEALTH_JSON =
            new com.fasterxml.jackson.databind.ObjectMapper();

    private static byte[] readBody(HttpExchange ex) throws IOException, Refusal {
        try (InputStream in = ex.getRequestBody()) {
            byte[] body = in.readNBytes(MAX_REQUEST_BYTES + 1);
            if (body.length > MAX_REQUEST_BYTES) {
                throw new Refusal(
                        413, "payload_too_large", "request bodies are limited to " + MAX_REQUEST_BYTES + " bytes");
            }
            return body;
        }
    }

    private static void json(HttpExchange ex, int status, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(status, body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    /** Sends an error unless a response has begun (then the connection just closes). */
    private static void respondQuietly(HttpExchange ex, int status, byte[] body) {
        if (ex.getResponseCode() != -1) {
            return;
        }
        try {
            json(ex, status, body);
        } catch (IOException e) {
            log.debug("could not send HTTP {} to a trainer that went away: {}", status, e.toString());
        }
    }

    /**
     * Counts what reached the response stream, for the log line of a trainer that went away and for
     * the stall watch; writes go through in pieces of at most {@link #PIECE} bytes, so a large
     * tensor read slowly still shows progress.
     */
    private static final class CountingStream extends FilterOutputStream {
        static final int PIECE = 64 * 1024;
        volatile long count;

        CountingStream(OutputStream out) {
            super(out);
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            for (int done = 0; done < len; ) {
                int n = Math.min(PIECE, len - done);
                out.write(b, off + done, n);
                done += n;
                count += n;
            }
        }
    }
}
