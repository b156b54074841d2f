package org.rollout.modelserver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.OptionalInt;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The built-in model server: a real tiny language model ({@link TinyLm}) behind the SGLang HTTP
 * protocol of {@code docs/protocol.md}, plus AReaL's vLLM-extension routes over the same engine.
 * It needs no GPU and no download, so the whole product runs on a laptop and in CI.
 *
 * <pre>
 *   HTTP/1.1 (virtual threads) ──► routes ──► GenerationScheduler (one thread, continuous batching)
 *     /generate, /v1/completions       │            └─ TinyLm + TokenSampler, weights swapped between steps
 *     pause / continue / abort         │
 *     update_weights_from_disk, …      └─ FaultInjector (error, hang, crash, slow, malformed)
 * </pre>
 *
 * <p>Use: {@code try (ModelServer s = ModelServer.start(ModelServerConfig.defaults())) { …
 * s.baseUrl() … }}. Endpoints, the latency model and faults are described in {@code
 * docs/model-server.md}.
 *
 * <p>Lifecycle: {@link #close()} is graceful: it stops accepting, answers every request in flight
 * with {@code abort} and its partial output, then closes the connections. {@link #crash()} is
 * abrupt: the listening socket closes and every connection is reset; nothing in flight is ever
 * answered. Both are idempotent; after either, the handle still reports its last state.
 *
 * <p>Thread-safe.
 */
public final class ModelServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ModelServer.class);
    private static final long CLOSE_TIMEOUT_MILLIS = 10_000;

    private final ModelServerConfig config;
    private final GenerationScheduler scheduler;
    private final FaultInjector faults;
    private final Http1Server http;
    private final CompletableFuture<Void> stopped = new CompletableFuture<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean crashed;
    private volatile String modelPath;
    /** Loaded LoRA adapters by name (docs/model-server.md, "LoRA adapters"). */
    private final ConcurrentHashMap<String, LoraAdapter> adapters = new ConcurrentHashMap<>();

    private ModelServer(ModelServerConfig config, TinyLmWeights weights, String modelPath) throws IOException {
        this.config = config;
        this.modelPath = modelPath;
        this.faults = new FaultInjector(config.faults());
        this.scheduler = new GenerationScheduler(
                weights,
                config.latency(),
                config.maxRunningRequests(),
                config.outputLengths(),
                "model-server-scheduler");
        this.scheduler.start();
        try {
            this.http = Http1Server.start(config.host(), config.port(), this::route, "model-server");
        } catch (IOException e) {
            try {
                scheduler.crash(new GenerationScheduler.StoppedException("the model server failed to start"));
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
            }
            throw new IOException("cannot listen on " + config.host() + ":" + config.port() + ": " + e, e);
        }
    }

    /**
     * Starts a server and returns once it accepts connections.
     *
     * @throws WeightFileException when {@code config.weightsPath()} is not a usable weight file
     * @throws IOException when the address cannot be bound
     */
    public static ModelServer start(ModelServerConfig config) throws IOException {
        TinyLmWeights weights;
        String path;
        if (config.weights() != null) {
            weights = config.weights();
            path = "builtin:tiny-lm (in-memory weights)";
        } else if (config.weightsPath() != null) {
            weights = TinyLmWeights.read(config.weightsPath());
            path = config.weightsPath().toAbsolutePath().toString();
        } else {
            weights = TinyLmWeights.seeded(config.seed());
            path = "builtin:tiny-lm?seed=" + config.seed();
        }
        ModelServer server = new ModelServer(config, weights, path);
        log.info("model server listening on {} (weights {}, version {})", server.baseUrl(), path, weights.version());
        return server;
    }

    /** The bound port (the real one when the config asked for 0). */
    public int port() {
        return http.port();
    }

    /** The address and port it listens on: 127.0.0.1 unless the config names another host. */
    public java.net.InetSocketAddress address() {
        return http.address();
    }

    /** {@code http://host:port}, IPv6 hosts bracketed. */
    public String baseUrl() {
        String host = config.host().contains(":") ? "[" + config.host() + "]" : config.host();
        return "http://" + host + ":" + port();
    }

    /** The weights served now (and their version). */
    public TinyLmWeights weights() {
        return scheduler.weights();
    }

    /** The served weight version. */
    public int weightVersion() {
        return scheduler.weights().version();
    }

    /** The model path reported by {@code /get_model_info}: the last loaded file, or a builtin: name. */
    public String modelPath() {
        return modelPath;
    }

    /** The live counters, as {@code /get_server_info} serves them. */
    public ModelServerStats stats() {
        return scheduler.stats(faults.hungRequests());
    }

    /** The fault plan in force. */
    public FaultPlan faults() {
        return faults.plan();
    }

    /** Replaces the fault plan (restarting its random stream and request count). */
    public void setFaults(FaultPlan plan) {
        faults.set(plan);
        log.info("model server {}: faults set to {}", baseUrl(), plan);
    }

    /** {@code setFaults(FaultPlan.NONE)}: also releases requests held by hang. */
    public void clearFaults() {
        setFaults(FaultPlan.NONE);
    }

    /**
     * Loads a weight file and serves it from the next scheduler step, as {@code
     * /update_weights_from_disk} does.
     *
     * @param version the version to serve; empty means the file's own
     * @param abortAll abort every request in flight first (they return partial output with abort)
     * @return the weights now served
     * @throws WeightFileException naming the path and the defect; the served weights are unchanged
     */
    public TinyLmWeights updateWeightsFromDisk(Path path, OptionalInt version, boolean abortAll) throws IOException {
        // Servers in one JVM loading the same unchanged file share one read and check.
        TinyLmWeights loaded = WeightFileCache.read(path);
        TinyLmWeights served = version.isPresent() ? loaded.withVersion(version.getAsInt()) : loaded;
        try {
            scheduler.swapWeights(served, abortAll).get(CLOSE_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while swapping in " + path, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IOException("the model server could not swap in " + path + ": " + e, e);
        }
        modelPath = path.toAbsolutePath().toString();
        log.info("model server {}: serving {} as weight version {}", baseUrl(), modelPath, served.version());
        return served;
    }

    /** Graceful stop: in-flight requests are answered with abort, then connections close. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        http.stopAccepting();
        stopped.complete(null);
        faults.set(FaultPlan.NONE); // releases held requests; they see the server stopped and get no answer
        try {
            scheduler.close(CLOSE_TIMEOUT_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        http.close(CLOSE_TIMEOUT_MILLIS);
        for (WeightGroup g : groups.values()) {
            try {
                g.close();
            } catch (IOException e) {
                log.debug("model server {}: closing weight group {}: {}", baseUrl(), g.name(), e.toString());
            }
        }
        log.info("model server {} closed", baseUrl());
    }

    /** Abrupt stop: stops listening and resets every connection; in-flight requests are never answered. */
    public void crash() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        crashed = true;
        http.reset();
        stopped.complete(null);
        faults.set(FaultPlan.NONE);
        try {
            scheduler.crash(new GenerationScheduler.StoppedException("the model server crashed"));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        log.warn("model server {} crashed on purpose", baseUrl());
    }

    /** True until {@link #close()} or {@link #crash()}. */
    public boolean isRunning() {
        return !closed.get();
    }

    // ---------------------------------------------------------------- routing

    private Http1Server.Response route(Http1Server.Request req, Http1Server.Exchange exchange) {
        String path = req.path();
        try {
            return switch (path) {
                case "/generate" -> post(req, () -> generate(req, exchange, true));
                case "/v1/completions" -> post(req, () -> generate(req, exchange, false));
                case "/pause_generation" -> post(req, () -> pause(req, false));
                case "/areal_pause_generation" -> post(req, () -> pause(req, true));
                case "/continue_generation", "/areal_continue_generation" -> post(req, () -> resume(req));
                case "/abort_request" -> post(req, () -> abortRequest(req));
                case "/update_weights_from_disk" -> post(req, () -> updateWeights(req, false));
                case "/areal_update_weights" -> post(req, () -> updateWeights(req, true));
                case "/update_weights_from_bytes" -> post(req, () -> updateWeightsFromBytes(req));
                // The NCCL control plane (SGLang's routes, AReaL's vLLM extension routes); the tensors
                // come over the group's TCP stand-in (WeightGroup).
                case "/init_weights_update_group", "/areal_init_weights_update_group" ->
                    post(req, () -> initWeightsUpdateGroup(req));
                case "/update_weights_from_distributed" -> post(req, () -> updateWeightsFromDistributed(req));
                case "/areal_set_update_weight_meta" -> post(req, () -> setUpdateWeightMeta(req));
                case "/areal_update_weights_xccl" -> post(req, () -> updateWeightsXccl());
                // Upstream vLLM's own control routes (its dev-mode RLHF API), besides AReaL's /areal_* ones.
                case "/pause" -> post(req, () -> upstreamPause(req));
                case "/resume" -> post(req, () -> upstreamResume());
                case "/is_paused" -> get(req, this::isPaused);
                case "/collective_rpc" -> post(req, () -> collectiveRpc(req));
                case "/load_lora_adapter", "/v1/load_lora_adapter" -> post(req, () -> loadLora(req));
                case "/unload_lora_adapter", "/v1/unload_lora_adapter" -> post(req, () -> unloadLora(req));
                case "/health" -> get(req, () -> new Http1Server.Response(200, null, new byte[0]));
                case "/get_model_info" -> get(req, this::modelInfo);
                case "/get_server_info" -> get(req, this::serverInfo);
                case "/_admin/faults" -> adminFaults(req);
                default ->
                    Http1Server.Response.json(
                            404,
                            Json.errorBody(404, "no route for " + req.method() + " " + path + " on the model server"));
            };
        } catch (BadRequestException e) {
            boolean generation = path.equals("/generate") || path.equals("/v1/completions");
            return Http1Server.Response.json(
                    400, generation ? Json.errorBody(400, e.getMessage()) : Json.failureBody(e.getMessage()));
        } catch (GenerationScheduler.StoppedException e) {
            return Http1Server.Response.json(503, Json.errorBody(503, e.getMessage()));
        }
    }

    private interface Route {
        Http1Server.Response run();
    }

    private static Http1Server.Response post(Http1Server.Request req, Route route) {
        if (!req.method().equals("POST")) {
            return Http1Server.Response.json(
                    405, Json.errorBody(405, req.method() + " " + req.path() + " is not allowed: use POST"));
        }
        return route.run();
    }

    private static Http1Server.Response get(Http1Server.Request req, Route route) {
        if (!req.method().equals("GET")) {
            return Http1Server.Response.json(
                    405, Json.errorBody(405, req.method() + " " + req.path() + " is not allowed: use GET"));
        }
        return route.run();
    }

    private static Http1Server.Response ok(ObjectNode body) {
        return Http1Server.Response.json(200, Json.bytes(body));
    }

    private static Http1Server.Response success(String message) {
        ObjectNode o = Json.object();
        o.put("success", true);
        o.put("message", message);
        return ok(o);
    }

    // ---------------------------------------------------------------- generation

    private Http1Server.Response generate(Http1Server.Request req, Http1Server.Exchange exchange, boolean sglang) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        GenerateRequests.Parsed parsed = sglang ? GenerateRequests.sglang(body) : GenerateRequests.vllm(body);
        FaultInjector.Decision fault = faults.onGenerate();
        if (fault.crash()) {
            log.warn("model server {}: crash_after fault strikes at rid '{}'", baseUrl(), parsed.rid());
            crash();
            return null;
        }
        if (fault.error()) {
            return Http1Server.Response.json(
                    500, Json.errorBody(500, "injected fault: internal server error for rid '" + parsed.rid() + "'"));
        }
        if (fault.hangUntil() != null) {
            faults.holding(() -> CompletableFuture.anyOf(fault.hangUntil(), exchange.disconnected, stopped)
                    .join());
            if (stopped.isDone() || !exchange.isOpen()) {
                return null;
            }
        }
        LoraAdapter adapter = parsed.lora() == null ? null : adapters.get(parsed.lora());
        if (adapter == null && parsed.lora() != null && parsed.loraRequired()) {
            throw new BadRequestException(
                    "lora_path",
                    "lora_path '" + parsed.lora() + "' is not a loaded LoRA adapter (loaded: "
                            + new TreeSet<>(adapters.keySet()) + ")");
        }
        Generation g = new Generation(
                parsed.rid(),
                parsed.prompt(),
                parsed.params(),
                GenerateRequests.seedOf(parsed.params()),
                parsed.inputLogprobStart(),
                adapter,
                parsed.promptLogprobs(),
                parsed.topLogprobs());
        CompletableFuture<GenerationResult> result;
        try {
            result = scheduler.submit(g);
        } catch (GenerationScheduler.DuplicateRidException e) {
            throw new BadRequestException(sglang ? "rid" : "request_id", e.getMessage());
        }
        exchange.onDisconnect(() -> scheduler.abort(g, "Aborted: the client disconnected"));
        GenerationResult r;
        try {
            r = result.join();
        } catch (CompletionException e) {
            if (crashed) {
                return null;
            }
            Throwable cause = e.getCause() == null ? e : e.getCause();
            if (cause instanceof GenerationScheduler.StoppedException stoppedCause) {
                return Http1Server.Response.json(503, Json.errorBody(503, stoppedCause.getMessage()));
            }
            return Http1Server.Response.json(
                    500, Json.errorBody(500, "generation of rid '" + parsed.rid() + "' failed: " + cause));
        }
        ObjectNode json = sglang ? ResponseBodies.sglang(r, parsed) : ResponseBodies.vllm(r, parsed, modelPath);
        byte[] bytes = fault.malformed() == null
                ? Json.bytes(json)
                : ResponseBodies.malformed(json, fault.malformed(), sglang);
        if (!fault.slow().isZero()) {
            try {
                CompletableFuture.anyOf(exchange.disconnected, stopped)
                        .get(fault.slow().toNanos(), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                // The injected delay has passed: answer now.
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException e) {
                throw new IllegalStateException("a completion signal cannot fail", e);
            }
            if (crashed) {
                return null;
            }
        }
        return Http1Server.Response.json(200, bytes);
    }

    // ---------------------------------------------------------------- control

    private Http1Server.Response pause(Http1Server.Request req, boolean vllm) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        boolean abortMode = true;
        if (!vllm) {
            JsonNode mode = body.get("mode");
            String m = mode == null || mode.isNull() ? "abort" : mode.asText();
            if (mode != null && !mode.isNull() && !mode.isTextual()) {
                throw new BadRequestException("mode", "mode must be a string: abort, in_place or retract");
            }
            abortMode = switch (m) {
                case "abort" -> true;
                case "in_place", "retract" -> false;
                default ->
                    throw new BadRequestException("mode", "mode '" + m + "' is not one of abort, in_place, retract");
            };
        }
        int aborted = await(scheduler.pause(abortMode), "pause");
        return success("Generation paused (" + (abortMode ? "abort" : "in_place") + " mode); " + aborted
                + " requests aborted.");
    }

    /** Upstream vLLM {@code POST /pause?mode=abort|keep}: abort (the default) ends what runs with abort. */
    private Http1Server.Response upstreamPause(Http1Server.Request req) {
        String mode = "abort";
        for (String pair : req.query().split("&")) {
            if (pair.startsWith("mode=")) {
                mode = pair.substring("mode=".length());
            }
        }
        boolean abortMode = switch (mode) {
            case "abort" -> true;
            case "keep" -> false;
            default ->
                throw new BadRequestException(
                        "mode", "mode '" + mode + "' is not supported by the built-in server: abort or keep");
        };
        await(scheduler.pause(abortMode), "pause");
        ObjectNode o = Json.object();
        o.put("status", "paused");
        return ok(o);
    }

    /** Upstream vLLM {@code POST /resume}. */
    private Http1Server.Response upstreamResume() {
        await(scheduler.resume(), "resume");
        ObjectNode o = Json.object();
        o.put("status", "resumed");
        return ok(o);
    }

    /** Upstream vLLM {@code GET /is_paused}. */
    private Http1Server.Response isPaused() {
        ObjectNode o = Json.object();
        o.put("is_paused", stats().paused());
        return ok(o);
    }

    /**
     * Upstream vLLM {@code POST /collective_rpc}: of the worker methods, {@code reload_weights}
     * with {@code kwargs.weights_path} (the weight file, loaded as from disk, nothing aborted).
     */
    private Http1Server.Response collectiveRpc(Http1Server.Request req) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        JsonNode method = body.get("method");
        if (method == null || !method.isTextual()) {
            throw new BadRequestException("method", "Missing 'method' in request body");
        }
        if (!method.asText().equals("reload_weights")) {
            throw new BadRequestException(
                    "method", "method '" + method.asText() + "' is not served by the built-in server: reload_weights");
        }
        JsonNode path = body.path("kwargs").get("weights_path");
        if (path == null || !path.isTextual() || path.asText().isEmpty()) {
            throw new BadRequestException("kwargs.weights_path", "kwargs.weights_path must be a non-empty string");
        }
        try {
            updateWeightsFromDisk(Path.of(path.asText()), OptionalInt.empty(), false);
        } catch (WeightFileException e) {
            log.warn("model server {}: weight reload refused: {}", baseUrl(), e.getMessage());
            return Http1Server.Response.json(400, Json.failureBody(e.getMessage()));
        } catch (IOException e) {
            return Http1Server.Response.json(500, Json.failureBody(e.getMessage()));
        }
        ObjectNode o = Json.object();
        o.putArray("results").addNull();
        return ok(o);
    }

    private Http1Server.Response resume(Http1Server.Request req) {
        Json.parseObject(req.body(), req.path());
        await(scheduler.resume(), "continue");
        return success("Generation continued.");
    }

    private Http1Server.Response abortRequest(Http1Server.Request req) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        JsonNode all = body.get("abort_all");
        if (all != null && !all.isNull() && !all.isBoolean()) {
            throw new BadRequestException("abort_all", "abort_all must be true or false, got " + all);
        }
        if (all != null && all.asBoolean()) {
            int n = await(scheduler.abortAllRequests("Aborted by abort_request (abort_all)"), "abort_all");
            return success("Aborted " + n + " requests.");
        }
        JsonNode rid = body.get("rid");
        if (rid == null || rid.isNull() || !rid.isTextual() || rid.asText().isEmpty()) {
            throw new BadRequestException("rid", "abort_request needs a non-empty string rid or abort_all: true");
        }
        boolean found = await(scheduler.abort(rid.asText()), "abort");
        return success(found ? "Aborted rid '" + rid.asText() + "'." : "rid '" + rid.asText() + "' is not in flight.");
    }

    private Http1Server.Response updateWeights(Http1Server.Request req, boolean vllm) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        JsonNode pathNode = body.get("model_path");
        if (pathNode == null || !pathNode.isTextual() || pathNode.asText().isEmpty()) {
            throw new BadRequestException("model_path", "model_path must be a non-empty string (a weight file)");
        }
        boolean abortAll = vllm;
        JsonNode abortNode = body.get("abort_all_requests");
        if (abortNode != null && !abortNode.isNull()) {
            if (!abortNode.isBoolean()) {
                throw new BadRequestException("abort_all_requests", "abort_all_requests must be true or false");
            }
            abortAll = abortNode.asBoolean();
        }
        OptionalInt version = OptionalInt.empty();
        JsonNode v = body.get("weight_version");
        if (v != null && !v.isNull()) {
            version = OptionalInt.of(parseVersion(v));
        }
        Path path = Path.of(pathNode.asText());
        TinyLmWeights served;
        try {
            served = updateWeightsFromDisk(path, version, abortAll);
        } catch (WeightFileException e) {
            log.warn("model server {}: weight update refused: {}", baseUrl(), e.getMessage());
            return Http1Server.Response.json(400, Json.failureBody(e.getMessage()));
        } catch (IOException e) {
            return Http1Server.Response.json(500, Json.failureBody(e.getMessage()));
        }
        ObjectNode o = Json.object();
        o.put("success", true);
        o.put(
                "message",
                "Succeeded to update model weights from " + path.toAbsolutePath() + " (weight version "
                        + served.version() + ").");
        o.put("num_paused_requests", 0);
        return ok(o);
    }

    /**
     * {@code POST /update_weights_from_bytes?weight_version=N&abort_all_requests=true}: the body is
     * a weight file's bytes (docs/model-server.md). They are written to a file of this server's own
     * (under the JVM's temporary directory), loaded as from disk, and the file deleted: the sender
     * needs no disk in common with the server.
     */
    private Http1Server.Response updateWeightsFromBytes(Http1Server.Request req) {
        OptionalInt version = OptionalInt.empty();
        boolean abortAll = false;
        for (String pair : req.query().isEmpty() ? new String[0] : req.query().split("&")) {
            int eq = pair.indexOf('=');
            String name = eq < 0 ? pair : pair.substring(0, eq);
            String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            switch (name) {
                case "weight_version" -> version = OptionalInt.of(parseVersion(TextNode.valueOf(value)));
                case "abort_all_requests" -> {
                    if (!value.equals("true") && !value.equals("false")) {
                        throw new BadRequestException("abort_all_requests", "abort_all_requests must be true or false");
                    }
                    abortAll = Boolean.parseBoolean(value);
                }
                default -> throw new BadRequestException(name, "unknown query parameter '" + name + "'");
            }
        }
        if (req.body().length == 0) {
            throw new BadRequestException("body", "the body must be a weight file's bytes, got none");
        }
        TinyLmWeights served;
        try {
            served = loadWeightBytes(req.body(), "weights-", "uploaded weights", version, abortAll);
        } catch (BytesRefused r) {
            return r.response;
        }
        modelPath = "upload:" + req.body().length + "-bytes";
        ObjectNode o = Json.object();
        o.put("success", true);
        o.put(
                "message",
                "Succeeded to update model weights from " + req.body().length + " uploaded bytes (weight version "
                        + served.version() + ").");
        o.put("num_paused_requests", 0);
        return ok(o);
    }

    /** A reply that refuses weights received as bytes, in place of the weights. */
    private static final class BytesRefused extends Exception {
        final Http1Server.Response response;

        BytesRefused(Http1Server.Response response) {
            super(null, null, false, false);
            this.response = response;
        }
    }

    /**
     * Weights received as bytes (an upload, a group's broadcast), stored in a temporary file and
     * loaded as a weight file is; {@code what} names them in the log and in the refusal.
     */
    private TinyLmWeights loadWeightBytes(
            byte[] bytes, String filePrefix, String what, OptionalInt version, boolean abortAll) throws BytesRefused {
        Path file;
        try {
            Path dir = Files.createDirectories(
                    Path.of(System.getProperty("java.io.tmpdir"), "rollout-model-server-uploads"));
            file = Files.createTempFile(dir, filePrefix, ".rlm");
            Files.write(file, bytes);
        } catch (IOException e) {
            throw new BytesRefused(
                    Http1Server.Response.json(500, Json.failureBody("cannot store the " + what + ": " + e)));
        }
        try {
            return updateWeightsFromDisk(file, version, abortAll);
        } catch (WeightFileException e) {
            log.warn("model server {}: {} refused: {}", baseUrl(), what, e.getMessage());
            throw new BytesRefused(Http1Server.Response.json(400, Json.failureBody(what + ": " + e.getMessage())));
        } catch (IOException e) {
            throw new BytesRefused(Http1Server.Response.json(500, Json.failureBody(e.getMessage())));
        } finally {
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                log.warn("model server {}: could not delete {}: {}", baseUrl(), file, e.toString());
            }
        }
    }

    /** How long joining a weight-update group, and waiting for one tensor's bytes, may take. */
    private static final int GROUP_TIMEOUT_MILLIS = 120_000;

    /** The weight-update groups joined, by name. */
    private final java.util.Map<String, WeightGroup> groups = new ConcurrentHashMap<>();

    /** vLLM: the tensors announced by {@code /areal_set_update_weight_meta} for the next xccl update. */
    private volatile PendingUpdate pendingMeta;

    private record PendingUpdate(String group, java.util.List<WeightGroup.Tensor> tensors) {}

    /**
     * {@code POST /init_weights_update_group} (SGLang) and {@code /areal_init_weights_update_group}
     * (AReaL's vLLM extension): {@code {"master_address", "master_port", "rank_offset",
     * "world_size", "backend", "group_name"}}. Joins the group's TCP stand-in at
     * master_address:master_port as rank {@code rank_offset} (a server of one rank); joining a group
     * of the same name again replaces the old connection.
     */
    private Http1Server.Response initWeightsUpdateGroup(Http1Server.Request req) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        String address = nonEmpty(body, "master_address");
        int port = intField(body, "master_port", 1, 65535);
        int rank = intField(body, "rank_offset", 1, Integer.MAX_VALUE);
        int worldSize = intField(body, "world_size", 2, Integer.MAX_VALUE);
        String group = nonEmpty(body, "group_name");
        JsonNode backend = body.get("backend");
        if (backend != null && !backend.isNull() && !backend.isTextual()) {
            throw new BadRequestException("backend", "backend must be a string such as nccl");
        }
        if (rank >= worldSize) {
            throw new BadRequestException(
                    "rank_offset", "rank_offset " + rank + " must be below world_size " + worldSize);
        }
        WeightGroup joined;
        try {
            joined = WeightGroup.join(address, port, group, rank, worldSize, GROUP_TIMEOUT_MILLIS);
        } catch (IOException e) {
            log.warn("model server {}: joining weight group '{}' failed: {}", baseUrl(), group, e.toString());
            return Http1Server.Response.json(
                    500,
                    Json.failureBody("Failed to init weights update group '" + group + "' at " + address + ":" + port
                            + ": " + e.getMessage()));
        }
        WeightGroup old = groups.put(group, joined);
        if (old != null) {
            try {
                old.close();
            } catch (IOException e) {
                log.debug("model server {}: closing replaced group: {}", baseUrl(), e.toString());
            }
        }
        log.info("model server {}: joined weight group '{}' as rank {} of {}", baseUrl(), group, rank, worldSize);
        return success("Succeeded to init weights update group '" + group + "' as rank " + rank + ".");
    }

    /**
     * {@code POST /update_weights_from_distributed} (SGLang): {@code {"names", "dtypes", "shapes",
     * "group_name", "flush_cache", "abort_all_requests", "weight_version"}}. Receives the tensors
     * rank 0 broadcasts and loads their bytes as a weight file.
     */
    private Http1Server.Response updateWeightsFromDistributed(Http1Server.Request req) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        java.util.List<WeightGroup.Tensor> tensors = tensors(body);
        String group = nonEmpty(body, "group_name");
        boolean abortAll = false;
        JsonNode abortNode = body.get("abort_all_requests");
        if (abortNode != null && !abortNode.isNull()) {
            if (!abortNode.isBoolean()) {
                throw new BadRequestException("abort_all_requests", "abort_all_requests must be true or false");
            }
            abortAll = abortNode.asBoolean();
        }
        JsonNode flush = body.get("flush_cache");
        if (flush != null && !flush.isNull() && !flush.isBoolean()) {
            throw new BadRequestException("flush_cache", "flush_cache must be true or false");
        }
        OptionalInt version = OptionalInt.empty();
        JsonNode v = body.get("weight_version");
        if (v != null && !v.isNull()) {
            version = OptionalInt.of(parseVersion(v));
        }
        return receiveAndLoad(group, tensors, version, abortAll);
    }

    /** {@code POST /areal_set_update_weight_meta} (AReaL's vLLM extension): the next update's tensors. */
    private Http1Server.Response setUpdateWeightMeta(Http1Server.Request req) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        pendingMeta = new PendingUpdate(nonEmpty(body, "group_name"), tensors(body));
        return success("Set the meta of " + pendingMeta.tensors().size() + " tensors.");
    }

    /** {@code POST /areal_update_weights_xccl {}}: receives the tensors announced by the meta call. */
    private Http1Server.Response updateWeightsXccl() {
        PendingUpdate meta = pendingMeta;
        if (meta == null) {
            return Http1Server.Response.json(
                    400, Json.failureBody("no tensors announced: send /areal_set_update_weight_meta first"));
        }
        pendingMeta = null;
        return receiveAndLoad(meta.group(), meta.tensors(), OptionalInt.empty(), true);
    }

    private Http1Server.Response receiveAndLoad(
            String group, java.util.List<WeightGroup.Tensor> tensors, OptionalInt version, boolean abortAll) {
        WeightGroup g = groups.get(group);
        if (g == null) {
            return Http1Server.Response.json(
                    400,
                    Json.failureBody("this server has not joined weight update group '" + group
                            + "' (send /init_weights_update_group first; joined: " + new TreeSet<>(groups.keySet())
                            + ")"));
        }
        byte[] bytes;
        synchronized (g) {
            try {
                bytes = g.receive(tensors);
            } catch (IllegalArgumentException e) {
                log.warn("model server {}: distributed update refused: {}", baseUrl(), e.getMessage());
                return Http1Server.Response.json(400, Json.failureBody("distributed weights: " + e.getMessage()));
            } catch (IOException e) {
                groups.remove(group, g);
                try {
                    g.close();
                } catch (IOException closing) {
                    log.debug("model server {}: closing broken group: {}", baseUrl(), closing.toString());
                }
                return Http1Server.Response.json(
                        500,
                        Json.failureBody("receiving the broadcast of group '" + group + "' failed (the group is"
                                + " left; join it again): " + e));
            }
        }
        TinyLmWeights served;
        try {
            served = loadWeightBytes(bytes, "distributed-", "distributed weights", version, abortAll);
        } catch (BytesRefused r) {
            return r.response;
        }
        modelPath = "distributed:" + group + ":" + bytes.length + "-bytes";
        ObjectNode o = Json.object();
        o.put("success", true);
        o.put(
                "message",
                "Succeeded to update model weights from " + tensors.size() + " tensors of group '" + group
                        + "' (weight version " + served.version() + ").");
        return ok(o);
    }

    /** The parallel arrays {@code names}, {@code dtypes}, {@code shapes} of a distributed update. */
    private static java.util.List<WeightGroup.Tensor> tensors(ObjectNode body) {
        JsonNode names = body.get("names");
        JsonNode dtypes = body.get("dtypes");
        JsonNode shapes = body.get("shapes");
        if (names == null || !names.isArray() || names.isEmpty()) {
            throw new BadRequestException("names", "names must be a non-empty array of tensor names");
        }
        if (dtypes == null || !dtypes.isArray() || dtypes.size() != names.size()) {
            throw new BadRequestException("dtypes", "dtypes must be an array as long as names (" + names.size() + ")");
        }
        if (shapes == null || !shapes.isArray() || shapes.size() != names.size()) {
            throw new BadRequestException("shapes", "shapes must be an array as long as names (" + names.size() + ")");
        }
        java.util.List<WeightGroup.Tensor> out = new java.util.ArrayList<>(names.size());
        for (int i = 0; i < names.size(); i++) {
            if (!names.get(i).isTextual() || !dtypes.get(i).isTextual()) {
                throw new BadRequestException("names", "names[" + i + "] and dtypes[" + i + "] must be strings");
            }
            try {
                WeightGroup.dtypeSize(dtypes.get(i).asText());
            } catch (IllegalArgumentException e) {
                throw new BadRequestException("dtypes", "dtypes[" + i + "]: " + e.getMessage());
            }
            JsonNode shape = shapes.get(i);
            if (!shape.isArray()) {
                throw new BadRequestException("shapes", "shapes[" + i + "] must be an array of integers >= 0");
            }
            java.util.List<Long> dims = new java.util.ArrayList<>();
            for (JsonNode d : shape) {
                if (!d.isIntegralNumber() || d.asLong() < 0) {
                    throw new BadRequestException("shapes", "shapes[" + i + "] must be an array of integers >= 0");
                }
                dims.add(d.asLong());
            }
            out.add(new WeightGroup.Tensor(names.get(i).asText(), dtypes.get(i).asText(), dims));
        }
        return out;
    }

    /** An integer field given as a number or a numeric string (AReaL sends master_port as a string). */
    private static int intField(ObjectNode body, String field, int min, int max) {
        JsonNode n = body.get(field);
        String text = n == null ? null : n.isTextual() ? n.asText().trim() : n.isIntegralNumber() ? n.asText() : null;
        try {
            if (text != null) {
                long v = Long.parseLong(text);
                if (v >= min && v <= max) {
                    return (int) v;
                }
            }
        } catch (NumberFormatException e) {
            // reported below with the value
        }
        throw new BadRequestException(
                field, field + " must be an integer in " + min + ".." + max + " (number or string), got " + n);
    }

    /** {@code POST /load_lora_adapter} (and vLLM's {@code /v1/load_lora_adapter}): {@code {"lora_name", "lora_path"}}. */
    private Http1Server.Response loadLora(Http1Server.Request req) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        String name = nonEmpty(body, "lora_name");
        String path = nonEmpty(body, "lora_path");
        LoraAdapter adapter;
        try {
            adapter = LoraAdapter.read(Path.of(path));
        } catch (IOException | InvalidPathException e) {
            throw new BadRequestException("lora_path", e.getMessage());
        }
        adapters.put(name, adapter);
        log.info("model server {}: LoRA adapter '{}' (rank {}) loaded from {}", baseUrl(), name, adapter.rank(), path);
        return success("Loaded LoRA adapter '" + name + "' (rank " + adapter.rank() + ") from " + path + ".");
    }

    /** {@code POST /unload_lora_adapter} (and vLLM's {@code /v1/unload_lora_adapter}): {@code {"lora_name"}}. */
    private Http1Server.Response unloadLora(Http1Server.Request req) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        String name = nonEmpty(body, "lora_name");
        if (adapters.remove(name) == null) {
            throw new BadRequestException(
                    "lora_name",
                    "lora_name '" + name + "' is not a loaded LoRA adapter (loaded: " + new TreeSet<>(adapters.keySet())
                            + ")");
        }
        return success("Unloaded LoRA adapter '" + name + "'.");
    }

    private static String nonEmpty(ObjectNode body, String field) {
        JsonNode n = body.get(field);
        if (n == null || !n.isTextual() || n.asText().isEmpty()) {
            throw new BadRequestException(field, field + " must be a non-empty string");
        }
        return n.asText();
    }

    private static int parseVersion(JsonNode v) {
        String text = v.isTextual() ? v.asText().trim() : v.isIntegralNumber() ? v.asText() : null;
        try {
            if (text != null) {
                int parsed = Integer.parseInt(text);
                if (parsed >= 0) {
                    return parsed;
                }
            }
        } catch (NumberFormatException e) {
            // reported below with the value
        }
        throw new BadRequestException(
                "weight_version", "weight_version must be a non-negative integer (string or number), got " + v);
    }

    private static <T> T await(CompletableFuture<T> f, String what) {
        try {
            return f.get(CLOSE_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new GenerationScheduler.StoppedException("interrupted while waiting for " + what);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof GenerationScheduler.StoppedException s) {
                throw s;
            }
            throw new IllegalStateException(what + " failed on the scheduler: " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException(
                    "the scheduler did not run " + what + " within " + CLOSE_TIMEOUT_MILLIS + " ms");
        }
    }

    // ---------------------------------------------------------------- info

    private Http1Server.Response modelInfo() {
        TinyLmWeights w = scheduler.weights();
        ObjectNode o = Json.object();
        o.put("model_path", modelPath);
        o.put("tokenizer_path", "builtin:byte-level");
        o.put("is_generation", true);
        o.putNull("preferred_sampling_params");
        o.put("weight_version", Integer.toString(w.version()));
        o.put("architecture", "TinyLm");
        o.put("vocab_size", w.vocabSize());
        o.put("decay", w.decay());
        o.put("weights_digest", w.parameterDigest());
        return ok(o);
    }

    private Http1Server.Response serverInfo() {
        ModelServerStats s = stats();
        ObjectNode o = Json.object();
        o.put("model_path", modelPath);
        o.put("host", config.host());
        o.put("port", port());
        o.put("weight_version", Integer.toString(s.weightVersion()));
        o.put("running_requests", s.running());
        o.put("queued_requests", s.queued());
        o.put("paused", s.paused());
        o.put("pause_mode", s.pauseMode());
        o.put("requests_total", s.requestsTotal());
        o.put("requests_finished", s.requestsFinished());
        o.put("requests_aborted", s.requestsAborted());
        o.put("tokens_generated", s.tokensGenerated());
        o.put("hung_requests", s.hungRequests());
        o.put("busy_fraction", s.busyFraction());
        o.put("uptime_s", s.uptimeSeconds());
        o.put("max_running_requests", config.maxRunningRequests());
        ObjectNode latency = o.putObject("latency_model");
        latency.put("prefill_us_per_token", config.latency().prefillPerToken().toNanos() / 1000.0);
        latency.put("decode_base_us", config.latency().decodeBase().toNanos() / 1000.0);
        latency.put(
                "decode_us_per_sequence", config.latency().decodePerSequence().toNanos() / 1000.0);
        o.set("faults", faults.plan().toJson());
        if (config.outputLengths() == null) {
            o.putNull("output_lengths");
        } else {
            ObjectNode lengths = o.putObject("output_lengths");
            lengths.put("distribution", config.outputLengths().distribution().spec());
            lengths.put("seed", config.outputLengths().seed());
        }
        return ok(o);
    }

    /**
     * Whether a client connected from this host's own network stack: a loopback address, or an
     * address of one of this host's interfaces (a server that listens on a bridge's address is
     * reached from that address). Clients in other network namespaces or on other machines are not.
     */
    static boolean fromThisHost(java.net.InetAddress remote) {
        if (remote.isLoopbackAddress()) {
            return true;
        }
        try {
            return java.net.NetworkInterface.getByInetAddress(remote) != null;
        } catch (java.net.SocketException e) {
            return false;
        }
    }

    private Http1Server.Response adminFaults(Http1Server.Request req) {
        if (!fromThisHost(req.remote())) {
            return Http1Server.Response.json(
                    403,
                    Json.errorBody(403, "/_admin/faults is served to clients on this host only, not " + req.remote()));
        }
        if (req.method().equals("POST")) {
            ObjectNode body = Json.parseObject(req.body(), req.path());
            setFaults(FaultPlan.fromJson(body));
        } else if (!req.method().equals("GET")) {
            return Http1Server.Response.json(
                    405, Json.errorBody(405, req.method() + " /_admin/faults is not allowed: use GET or POST"));
        }
        ObjectNode o = faults.plan().toJson();
        o.put("hung_requests", faults.hungRequests());
        return ok(o);
    }

    @Override
    public String toString() {
        return "ModelServer{" + baseUrl() + ", weight_version=" + weightVersion() + ", running=" + isRunning() + "}";
    }
}
