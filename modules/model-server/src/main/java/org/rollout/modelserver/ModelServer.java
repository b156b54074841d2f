package org.rollout.modelserver;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.file.Path;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.rollout.http.Http1Server;
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
 * <p>This class starts, stops and routes; the endpoints are {@link GenerateEndpoint}, {@link
 * ControlEndpoints}, {@link WeightEndpoints}, {@link WeightGroupEndpoints}, {@link LoraEndpoints} and
 * {@link InfoEndpoints}.
 *
 * <p>Thread-safe.
 */
public final class ModelServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ModelServer.class);
    static final long CLOSE_TIMEOUT_MILLIS = 10_000;

    private final ModelServerConfig config;
    private final GenerationScheduler scheduler;
    private final FaultInjector faults;
    private final Http1Server http;
    private final CompletableFuture<Void> stopped = new CompletableFuture<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean crashed;
    private volatile String modelPath;
    private final LoraEndpoints lora = new LoraEndpoints(this);
    private final GenerateEndpoint generate;
    private final ControlEndpoints control;
    private final WeightEndpoints weightFiles = new WeightEndpoints(this);
    private final WeightGroupEndpoints weightGroups = new WeightGroupEndpoints(this, weightFiles);
    private final InfoEndpoints info;

    private ModelServer(ModelServerConfig config, TinyLmWeights weights, String modelPath) throws IOException {
        this.config = config;
        this.modelPath = modelPath;
        this.faults = new FaultInjector(config.faults());
        this.scheduler = new GenerationScheduler(
                weights,
                config.latency(),
                config.maxRunningRequests(),
                config.outputLengths(),
                config.prefixCacheTokens(),
                "model-server-scheduler");
        this.scheduler.start();
        this.generate = new GenerateEndpoint(this, scheduler, faults, lora, stopped);
        this.control = new ControlEndpoints(scheduler, faults);
        this.info = new InfoEndpoints(this, config, scheduler, faults);
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
    public InetSocketAddress address() {
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

    /** The prefix cache's counters, as {@code /get_server_info} serves them under {@code prefix_cache}. */
    public PrefixCacheStats prefixCacheStats() {
        return scheduler.prefixCacheStats();
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
        weightGroups.closeAll();
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

    /** The model path {@code /get_model_info} reports from now on. */
    void setModelPath(String path) {
        modelPath = path;
    }

    /** Whether {@link #crash()} stopped the server (then nothing in flight is answered). */
    boolean crashed() {
        return crashed;
    }

    // ---------------------------------------------------------------- routing

    private Http1Server.Response route(Http1Server.Request req, Http1Server.Exchange exchange) {
        String path = req.path();
        try {
            return switch (path) {
                case "/generate" -> post(req, () -> generate.generate(req, exchange, true));
                case "/v1/completions" -> post(req, () -> generate.generate(req, exchange, false));
                case "/pause_generation" -> post(req, () -> control.pause(req, false));
                case "/areal_pause_generation" -> post(req, () -> control.pause(req, true));
                case "/continue_generation", "/areal_continue_generation" -> post(req, () -> control.resume(req));
                case "/abort_request" -> post(req, () -> control.abortRequest(req));
                case "/update_weights_from_disk" -> post(req, () -> weightFiles.updateWeights(req, false));
                case "/areal_update_weights" -> post(req, () -> weightFiles.updateWeights(req, true));
                case "/update_weights_from_bytes" -> post(req, () -> weightFiles.updateWeightsFromBytes(req));
                // The NCCL control plane (SGLang's routes, AReaL's vLLM extension routes); the tensors
                // come over the group's TCP stand-in (WeightGroup).
                case "/init_weights_update_group", "/areal_init_weights_update_group" ->
                    post(req, () -> weightGroups.initWeightsUpdateGroup(req));
                case "/update_weights_from_distributed" ->
                    post(req, () -> weightGroups.updateWeightsFromDistributed(req));
                case "/areal_set_update_weight_meta" -> post(req, () -> weightGroups.setUpdateWeightMeta(req));
                case "/areal_update_weights_xccl" -> post(req, weightGroups::updateWeightsXccl);
                // Upstream vLLM's own control routes (its dev-mode RLHF API), besides AReaL's /areal_* ones.
                case "/pause" -> post(req, () -> control.upstreamPause(req));
                case "/resume" -> post(req, control::upstreamResume);
                case "/is_paused" -> get(req, control::isPaused);
                case "/collective_rpc" -> post(req, () -> weightFiles.collectiveRpc(req));
                case "/load_lora_adapter", "/v1/load_lora_adapter" -> post(req, () -> lora.loadLora(req));
                case "/unload_lora_adapter", "/v1/unload_lora_adapter" -> post(req, () -> lora.unloadLora(req));
                case "/health" -> get(req, () -> new Http1Server.Response(200, null, new byte[0]));
                case "/get_model_info" -> get(req, info::modelInfo);
                case "/get_server_info" -> get(req, info::serverInfo);
                case "/_admin/faults" -> info.adminFaults(req);
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

    /**
     * Whether a client connected from this host's own network stack: a loopback address, or an
     * address of one of this host's interfaces (a server that listens on a bridge's address is
     * reached from that address). Clients in other network namespaces or on other machines are not.
     */
    static boolean fromThisHost(InetAddress remote) {
        if (remote.isLoopbackAddress()) {
            return true;
        }
        try {
            return NetworkInterface.getByInetAddress(remote) != null;
        } catch (SocketException e) {
            return false;
        }
    }

    @Override
    public String toString() {
        return "ModelServer{" + baseUrl() + ", weight_version=" + weightVersion() + ", running=" + isRunning() + "}";
    }
}
