package org.rollout.inference;

import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.random.RandomGenerator;
import org.rollout.api.GenerationConfig;
import org.rollout.api.GenerationException;
import org.rollout.api.InferenceEngine;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.ScoredTokens;
import org.rollout.api.StatsRecorder;
import org.rollout.api.StopReason;
import org.rollout.api.WorkflowContext;
import org.rollout.config.InferenceConfig;
import org.rollout.config.InterruptMode;
import org.rollout.config.ServerAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Interruptible generation against SGLang or vLLM servers over HTTP: AReaL's
 * {@code RemoteInfEngine.agenerate} (semantics §2.1), with failover, load-aware routing and cancellation.
 *
 * <pre>
 *   generate(request)
 *     check n_samples == 1, the backend's support, the budget B = min(max_tokens − prompt, max_new_tokens) &gt; 0
 *     loop while stop reason ∉ {stop, length, tool_calls} and tokens &lt; B:
 *       ┌ pause gate (pause() / a weight update): wait, interruptibly
 *       │ ServerPool.acquire(rid, servers that failed this segment)
 *       │ pin the version                                  ◄── semantics §2.3
 *       │ POST prompt + tokens so far, max_new_tokens = B − tokens, same rid
 *       │ 2xx: parse → append tokens, logprobs, one pinned version per token
 *       └ failure: eject (5xx, timeout, connection error, malformed) and retry the SAME segment on
 *         another server, up to request_retries attempts in total; back-off only on a server
 *         that already failed this segment
 *     abort → next segment (interrupt_mode = discard: tokens so far dropped, back to the prompt and B)
 *     a leftover abort when B is spent → length
 * </pre>
 *
 * <p><b>Threading.</b> Thread-safe; meant to be shared by every workflow of a node, each calling
 * {@link #generate} from its own (virtual) thread. One {@link HttpClient} (HTTP/1.1, pooled
 * connections) serves all calls. A background virtual thread probes servers out of rotation.
 *
 * <p><b>Cancellation.</b> Interrupting a thread inside {@link #generate} makes it throw
 * {@link InterruptedException} promptly: at the gate, while waiting for a server, during a back-off,
 * or during the HTTP exchange. In the last case the exchange is cancelled (its connection closed,
 * which is vLLM's abort) and, for SGLang, {@code POST /abort_request {"rid"}} is sent to that server
 * without waiting for the answer (best effort, 2 s timeout; a failure is logged).
 *
 * <p><b>Versions.</b> {@link #version()} starts at 0; {@link #setVersion} never goes backwards.
 * {@link #updateWeights} runs the training-step order of semantics §6.9: gate closed → {@link WeightUpdater}
 * → {@code setVersion} → gate reopened (in a finally).
 *
 * <p><b>Pitfalls.</b> Tokens are labelled with the version read just before their segment was
 * sent, so a label is never newer than the weights that produced the tokens. {@link #close()} fails
 * generations in progress with {@link IllegalStateException}. See docs/inference.md for every
 * difference from AReaL.
 *
 * <p>This class checks requests, loops over segments and holds the version and the gate; a segment
 * is sent with failover by {@link SegmentSender}, weights are kept in sync on the servers by {@link
 * WeightSync}, a drain runs in {@link ServerDrain}.
 */
public final class RemoteInferenceEngine implements InferenceEngine, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(RemoteInferenceEngine.class);
    private static final Duration MAX_CONNECT_TIMEOUT = Duration.ofSeconds(30);
    private static final int INITIAL_OUTPUT_CAPACITY = 256;

    private final InferenceConfig config;
    private final ServerProtocol protocol;
    private final HttpExchanges http;
    private final boolean ownsClient;
    private final ServerPool pool;
    private final Backoff backoff;
    private final HealthChecker healthChecker;
    private final PauseGate gate = new PauseGate();
    private final AtomicInteger version = new AtomicInteger();
    private final SegmentSender segments;
    private final WeightSync weights;
    private final ServerDrain drains;

    private volatile boolean closed;
    private final boolean discardOnAbort;
    private final LongAdder discardedTokens = new LongAdder();
    private volatile InferenceMetrics metrics = InferenceMetrics.NONE;

    /** An engine with its own HTTP client, closed by {@link #close()}. */
    public RemoteInferenceEngine(InferenceConfig config) {
        this(config, newHttpClient(config), true, new SplittableRandom());
    }

    /**
     * An engine over an existing client (e.g. one shared with a benchmark's raw calls). The client
     * stays the caller's: {@link #close()} does not close it.
     */
    public RemoteInferenceEngine(InferenceConfig config, HttpClient client) {
        this(config, client, false, new SplittableRandom());
    }

    /**
     * As {@link #RemoteInferenceEngine(InferenceConfig, HttpClient)}, with the round-robin start
     * index and the back-off jitter drawn from {@code random} (for reproducible routing).
     */
    public RemoteInferenceEngine(InferenceConfig config, HttpClient client, RandomGenerator random) {
        this(config, client, false, random);
    }

    /** An engine with its own HTTP client and the given randomness (tests: deterministic routing). */
    RemoteInferenceEngine(InferenceConfig config, RandomGenerator random) {
        this(config, newHttpClient(config), true, random);
    }

    private RemoteInferenceEngine(
            InferenceConfig config, HttpClient client, boolean ownsClient, RandomGenerator random) {
        this.config = Objects.requireNonNull(config, "config");
        this.protocol = ServerProtocol.of(config);
        this.discardOnAbort = config.interruptMode() == InterruptMode.DISCARD;
        this.http = new HttpExchanges(Objects.requireNonNull(client, "client"));
        this.ownsClient = ownsClient;
        this.pool = ServerPool.of(config, random);
        WeightUpdater updater = new WeightUpdater(config, client, random);
        this.backoff = new Backoff(config.retryBackoffInitial(), config.retryBackoffMax(), random);
        this.segments = new SegmentSender(
                config, protocol, http, pool, backoff, gate, version, () -> metrics, () -> closed, this::ensureOpen);
        this.weights = new WeightSync(
                config, protocol, http, pool, updater, backoff, gate, version, this::setVersion, () -> metrics);
        this.drains = new ServerDrain(config, protocol, http, pool, () -> closed);
        this.healthChecker = new HealthChecker(
                pool, protocol, http, config.healthCheckInterval(), config.healthCheckTimeout(), weights::onHealthy);
        healthChecker.start();
    }

    /**
     * Registers this engine's meters in {@code registry} (docs/observability.md): per server its
     * requests in flight, whether it is in rotation, segments sent and failed, ejections and the
     * latency of each segment; segments aborted and resumed; weight updates and each server's part
     * of them. Call once, before generating.
     */
    public void bindMetrics(MeterRegistry registry) {
        metrics = new InferenceMetrics(Objects.requireNonNull(registry, "registry"), pool, this);
    }

    /**
     * The HTTP client an engine creates for itself: HTTP/1.1 with pooled keep-alive connections and
     * a connect timeout of {@code min(request_timeout, 30 s)}.
     */
    public static HttpClient newHttpClient(InferenceConfig config) {
        Duration connect = config.requestTimeout().compareTo(MAX_CONNECT_TIMEOUT) < 0
                ? config.requestTimeout()
                : MAX_CONNECT_TIMEOUT;
        return HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(connect)
                .build();
    }

    /**
     * Waits until every server answers {@code GET /health} with 2xx, polling every
     * {@code min(1 s, health_check_interval)} for up to {@code setup_timeout}.
     *
     * @throws GenerationException naming each server that never came up and its last error
     * @throws InterruptedException when interrupted while waiting
     */
    public void initialize() throws InterruptedException {
        initialize(message -> log.info("{}", message));
    }

    /**
     * {@link #initialize()}, saying to {@code waiting} what it waits for: once after a second
     * without every server ready, then every {@link #WAITING_EVERY}, naming the servers not ready,
     * why, and how long is left of {@code setup_timeout}.
     */
    public void initialize(Consumer<String> waiting) throws InterruptedException {
        ensureOpen();
        long start = System.nanoTime();
        long nextSay = start + Duration.ofSeconds(1).toNanos();
        long deadline = System.nanoTime() + config.setupTimeout().toNanos();
        Duration poll = config.healthCheckInterval().compareTo(Duration.ofSeconds(1)) < 0
                ? config.healthCheckInterval()
                : Duration.ofSeconds(1);
        Map<ServerAddress, String> notReady = new LinkedHashMap<>();
        for (ServerAddress s : pool.servers()) {
            notReady.put(s, "not probed");
        }
        while (true) {
            for (Map.Entry<ServerAddress, String> e :
                    healthChecker.probe(List.copyOf(notReady.keySet())).entrySet()) {
                if (e.getValue() == null) {
                    notReady.remove(e.getKey());
                } else {
                    notReady.put(e.getKey(), e.getValue());
                }
            }
            if (notReady.isEmpty()) {
                log.info("{} inference server(s) ready: {}", pool.servers().size(), pool.servers());
                return;
            }
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                List<String> parts = new ArrayList<>();
                notReady.forEach((s, err) -> parts.add(s + " (" + err + ")"));
                throw new GenerationException("inference servers not ready after "
                        + HttpExchanges.seconds(config.setupTimeout()) + " s (setup_timeout): "
                        + String.join("; ", parts));
            }
            long now = System.nanoTime();
            if (now - nextSay >= 0) {
                nextSay = now + WAITING_EVERY.toNanos();
                List<String> parts = new ArrayList<>();
                notReady.forEach((s, err) -> parts.add(s + " (" + err + ")"));
                waiting.accept("waiting for " + notReady.size() + " of "
                        + pool.servers().size()
                        + " inference server(s) to be ready, " + HttpExchanges.seconds(Duration.ofNanos(now - start))
                        + " s so far, at most " + HttpExchanges.seconds(config.setupTimeout())
                        + " s (setup_timeout): " + String.join("; ", parts));
            }
            Thread.sleep(Duration.ofNanos(Math.min(remaining, poll.toNanos())));
        }
    }

    /** How often {@link #initialize(Consumer)} says what it still waits for. */
    static final Duration WAITING_EVERY = Duration.ofSeconds(10);

    @Override
    public ModelResponse generate(ModelRequest request) throws InterruptedException {
        long start = System.nanoTime();
        ensureOpen();
        GenerationConfig g = request.gconfig();
        String rid = request.rid();
        if (g.nSamples() != 1) {
            throw new IllegalArgumentException("n_samples is " + g.nSamples() + " for rid " + rid
                    + ", but inference engines do not support n_samples > 1: the caller must make "
                    + g.nSamples() + " generate calls, one per sample");
        }
        protocol.checkSupported(g);
        int promptLength = request.inputLength();
        int budget = (int) Math.min((long) g.maxTokens() - promptLength, g.maxNewTokens());
        if (budget <= 0) {
            throw new IllegalArgumentException("no token budget for rid " + rid + ": min(max_tokens " + g.maxTokens()
                    + " - prompt length " + promptLength + ", max_new_tokens " + g.maxNewTokens() + ") = " + budget
                    + " <= 0");
        }
        int[] prompt = request.inputIds();
        GeneratedTokens out = new GeneratedTokens(Math.min(budget, INITIAL_OUTPUT_CAPACITY));
        StopReason reason = null;
        int emptyAborts = 0;
        // Aborts sent to servers where an attempt of this rid timed out: the rid is not sent there
        // again before its abort has been answered (the server would refuse it as still in flight).
        Map<ServerAddress, CompletableFuture<?>> pendingAborts = new HashMap<>(2);
        WorkflowContext context = config.deterministicSampling() ? WorkflowContext.current() : null;
        int segmentIndex = 0;
        long promptTokensSent = 0;
        int firstCached = -1;
        long cachedTokens = 0;
        while ((reason == null || !reason.isFinal()) && out.size < budget) {
            if (emptyAborts >= 2) {
                // Repeated aborts with no tokens: the server is pausing without our gate being
                // closed (another client's update). Back off rather than spin; never fail for it.
                backoff.sleep(emptyAborts - 1);
            }
            int maxNewTokens = budget - out.size;
            GenerationConfig sg = g;
            if (context != null) {
                // deterministic_sampling: this segment's seed, stable across reruns (SamplingSeeds).
                Long seed = SamplingSeeds.seedFor(g, context, prompt, segmentIndex);
                sg = Objects.equals(seed, g.seed())
                        ? g
                        : g.toBuilder().seed(seed).build();
            }
            segmentIndex++;
            int sent = prompt.length + out.size;
            SegmentSender.Segment segment =
                    segments.runSegment(rid, request.metadata(), prompt, out, sg, maxNewTokens, pendingAborts);
            if (segment.generated().cachedTokens().isPresent()) {
                if (promptTokensSent == 0) {
                    firstCached = segment.generated().cachedTokens().getAsInt();
                }
                promptTokensSent += sent;
                cachedTokens +=
                        Math.min(sent, segment.generated().cachedTokens().getAsInt());
            }
            out.append(segment.generated(), segment.version());
            reason = segment.generated().stopReason();
            if (reason == StopReason.ABORT) {
                metrics.aborted();
                if (out.size < budget) {
                    metrics.resumed();
                }
            }
            if (reason == StopReason.ABORT && discardOnAbort && out.size < budget) {
                // interrupt_mode = discard: throw the interrupted work away and start over from the
                // prompt with the whole budget (what engines without interruptible generation do).
                discardedTokens.add(out.size);
                out.size = 0;
            }
            emptyAborts = reason == StopReason.ABORT && segment.generated().length() == 0 ? emptyAborts + 1 : 0;
        }
        if (reason == StopReason.ABORT) {
            reason = StopReason.LENGTH;
        }
        if (promptTokensSent > 0) {
            // The episode's statistics (stats.jsonl, per version and scope): the prefix cache's hit
            // rate is the ratio of the two means, taken over the same generations.
            StatsRecorder stats = WorkflowContext.current().stats();
            stats.scalar("prompt_tokens", promptTokensSent);
            stats.scalar("cached_prompt_tokens", cachedTokens);
        }
        return ModelResponse.of(
                        prompt,
                        out.tokens(),
                        out.logprobs(),
                        out.versions(),
                        reason,
                        Duration.ofNanos(System.nanoTime() - start))
                .withCachedTokens(firstCached);
    }

    /**
     * Scores {@code tokens} on one server (the scoring call of docs/protocol.md, "Scoring"): waits
     * at the pause gate, routes like a segment, fails over on the same failures as a segment
     * (ejecting the server likewise) for up to {@code request_retries} attempts. The version is the
     * server's {@code weight_version} when it reports one, else the engine's version read before
     * sending.
     */
    @Override
    public ScoredTokens score(int[] tokens, GenerationConfig gconfig) throws InterruptedException {
        ensureOpen();
        Objects.requireNonNull(tokens, "tokens");
        Objects.requireNonNull(gconfig, "gconfig");
        if (tokens.length < 2) {
            throw new IllegalArgumentException(
                    "scoring needs at least 2 tokens (the first has nothing to be predicted from), got "
                            + tokens.length);
        }
        String rid = ModelRequest.newRid();
        int[] sent = tokens.clone();
        byte[] body = PromptScoring.body(config.backend(), rid, sent, gconfig);
        List<String> failures = new ArrayList<>();
        Map<ServerAddress, Integer> failed = new HashMap<>();
        Exception cause = null;
        for (int attempt = 1; attempt <= config.requestRetries(); attempt++) {
            gate.awaitOpen();
            ServerPool.Lease lease = pool.acquire(rid, failed.keySet(), config.requestTimeout());
            ServerAddress server = lease.address();
            String failure;
            boolean eject;
            try {
                int earlier = failed.getOrDefault(server, 0);
                if (earlier > 0) {
                    backoff.sleep(earlier);
                    gate.awaitOpen();
                }
                int pinned = version.get();
                HttpResponse<byte[]> response = segments.exchange(server, rid, body);
                if (HttpExchanges.isSuccess(response.statusCode())) {
                    PromptScoring.Scores s = PromptScoring.parse(config.backend(), response.body(), server, rid, sent);
                    return new ScoredTokens(
                            sent, s.logprobs(), s.serverVersion().orElse(pinned));
                }
                failure = "HTTP " + response.statusCode() + ": " + MalformedResponseException.excerpt(response.body());
                eject = response.statusCode() < 400 || response.statusCode() >= 500;
                cause = null;
            } catch (MalformedResponseException e) {
                failure = e.getMessage();
                eject = true;
                cause = e;
            } catch (IOException e) {
                ensureOpen();
                failure = HttpExchanges.describe(e, config.requestTimeout());
                eject = true;
                cause = e;
            } finally {
                lease.close();
            }
            pool.recordFailure(server, failure, eject);
            failures.add("attempt " + attempt + " on " + server + ": " + failure);
            failed.merge(server, 1, Integer::sum);
        }
        throw new GenerationException(
                "scoring " + tokens.length + " tokens (rid " + rid + ") failed: " + failures.size() + " attempt"
                        + (failures.size() == 1 ? "" : "s") + " of POST " + protocol.generatePath()
                        + " (request_retries=" + config.requestRetries() + "): " + String.join("; ", failures),
                cause);
    }

    @Override
    public int version() {
        return version.get();
    }

    /**
     * Sets the weight version that tokens generated from now on carry (AReaL's {@code set_version}).
     * Setting the current version again is allowed.
     *
     * @throws IllegalArgumentException when {@code newVersion} is below the current version, naming both
     */
    public void setVersion(int newVersion) {
        while (true) {
            int current = version.get();
            if (newVersion < current) {
                throw new IllegalArgumentException("weight version must not go backwards: the engine is at version "
                        + current + ", asked to set " + newVersion);
            }
            if (version.compareAndSet(current, newVersion)) {
                return;
            }
        }
    }

    /** Closes the gate: no generation sends a new segment until {@link #resume()}. In-flight segments run on. */
    public void pause() {
        gate.pause();
    }

    /** Reopens the gate closed by {@link #pause()} (a weight update in progress still holds it). */
    public void resume() {
        gate.resume();
    }

    /** True while segments are held: after {@link #pause()}, or during {@link #updateWeights}. */
    public boolean isPaused() {
        return gate.isClosed();
    }

    /** How many generations are waiting at the gate now. */
    public int waitingAtGate() {
        return gate.waiting();
    }

    /**
     * Loads the weights at {@code modelPath} as version {@code newVersion} on every server, in the
     * training-step order of semantics §6.9: close the gate (no new segments), {@link WeightUpdater#update}
     * (pause, load, continue — continue always), {@link #setVersion}, reopen the gate (in a finally).
     * In-flight segments are aborted by the servers and resume afterwards with the new version.
     *
     * <p>A server where any step failed serves stale weights (or is still paused): it leaves
     * rotation and returns only after the health checker has re-sent this update to it
     * successfully. When no server loaded the weights, the version is left unchanged and
     * {@link WeightUpdateException} is thrown. When interrupted, continue has still been sent; the
     * engine then rolls forward: it takes the new version and re-sends the update to every server
     * before it serves again.
     *
     * @throws IllegalArgumentException when {@code newVersion} is not above the current version
     * @throws WeightUpdateException when no server loaded the new weights
     */
    public WeightUpdateReport updateWeights(Path modelPath, int newVersion) throws InterruptedException {
        Objects.requireNonNull(modelPath, "modelPath");
        ensureOpen();
        return weights.updateWeights(modelPath, newVersion);
    }

    /**
     * Records that another engine (the node running the cluster's weight update) loaded
     * {@code path} as {@code newVersion} on the servers. This engine loads nothing now; when it
     * re-syncs a restarted server it sends the newest weights it knows of, its own or these.
     * Without this, an engine that never ran an update would re-admit a restarted server with
     * its launch weights after a bare continue, and eject it again at its first token.
     */
    public void weightsLoadedElsewhere(Path path, int newVersion) {
        weights.weightsLoadedElsewhere(path, newVersion);
    }

    /**
     * Tokens thrown away so far because {@code interrupt_mode = discard} restarted an interrupted
     * generation from its prompt (always 0 under {@code resume}).
     */
    public long discardedTokens() {
        return discardedTokens.sum();
    }

    /** A snapshot of every server: outstanding requests, rotation, draining, version, last error, counts. */
    public List<ServerStats> serverStats() {
        return pool.stats();
    }

    /**
     * Adds {@code server} to the pool at run time. It takes no segment before the engine has loaded
     * the current weights on it: it joins waiting for a re-sync, so the health checker probes it and,
     * once it answers, re-sends the last update to it ([pause →] load → continue; only the continue
     * when no update has loaded yet) and puts it into rotation. Adding a draining server cancels
     * its drain.
     *
     * @return false when it was already in the pool and not draining
     */
    public boolean addServer(ServerAddress server) {
        ensureOpen();
        return pool.add(server);
    }

    /**
     * Drains {@code server}: no new segment goes to it; the segments in flight on it finish and it
     * leaves the pool when the last one ends. When {@code handOverAfter} passes first, the server is
     * asked to abort what it runs (the protocol's abort-mode pause, then continue): each aborted
     * segment returns its partial output and the generation resumes on another server with its
     * tokens kept, as after a weight update's abort.
     *
     * @return immediately; the drain completes in the background ({@link #serverStats()} shows it
     *     as draining until it has left)
     * @throws IllegalArgumentException when the server is not in the pool or is the last active one
     */
    public boolean drainServer(ServerAddress server, Duration handOverAfter) {
        ensureOpen();
        Objects.requireNonNull(handOverAfter, "handOverAfter");
        if (!pool.drain(server)) {
            return false;
        }
        drains.start(server, handOverAfter);
        return true;
    }

    public InferenceConfig config() {
        return config;
    }

    /**
     * Stops the health checker, fails generations waiting at the gate or for a server with
     * {@link IllegalStateException}, and, when the engine created its HTTP client, shuts it down
     * (aborting exchanges in flight). Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        gate.close();
        pool.close();
        healthChecker.close();
        if (ownsClient) {
            HttpClient client = http.client();
            client.shutdownNow();
            try {
                if (!client.awaitTermination(Duration.ofSeconds(5))) {
                    log.warn("the HTTP client did not terminate within 5 s of shutdownNow");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("the inference engine is closed");
        }
    }
}
