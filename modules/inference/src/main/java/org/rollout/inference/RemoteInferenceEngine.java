package org.rollout.inference;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.random.RandomGenerator;
import org.rollout.api.GenerationConfig;
import org.rollout.api.GenerationException;
import org.rollout.api.InferenceEngine;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.ScoredTokens;
import org.rollout.api.StopReason;
import org.rollout.api.WorkflowContext;
import org.rollout.config.InferenceConfig;
import org.rollout.config.InterruptMode;
import org.rollout.config.ServerAddress;
import org.rollout.config.WeightTransfer;
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
 */
public final class RemoteInferenceEngine implements InferenceEngine, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(RemoteInferenceEngine.class);
    private static final Duration ABORT_TIMEOUT = Duration.ofSeconds(2);
    private static final Duration ABORT_GRACE = Duration.ofSeconds(1);
    private static final Duration MAX_CONNECT_TIMEOUT = Duration.ofSeconds(30);
    private static final int INITIAL_OUTPUT_CAPACITY = 256;

    private final InferenceConfig config;
    private final ServerProtocol protocol;
    private final HttpExchanges http;
    private final boolean ownsClient;
    private final ServerPool pool;
    private final WeightUpdater updater;
    private final Backoff backoff;
    private final HealthChecker healthChecker;
    private final PauseGate gate = new PauseGate();
    private final Map<ServerAddress, URI> generateUris;
    private final AtomicInteger version = new AtomicInteger();
    private final ReentrantLock updateLock = new ReentrantLock();
    private final Map<ServerAddress, ResyncBackoff> resyncBackoff = new ConcurrentHashMap<>();
    private volatile LoadedWeights lastLoaded;
    /** The newest weights another engine loaded on the servers (another node's, in a cluster). */
    private final AtomicReference<LoadedWeights> loadedElsewhere = new AtomicReference<>();

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
        this.updater = new WeightUpdater(config, client, random);
        this.backoff = new Backoff(config.retryBackoffInitial(), config.retryBackoffMax(), random);
        this.generateUris = new ConcurrentHashMap<>();
        this.healthChecker = new HealthChecker(
                pool, protocol, http, config.healthCheckInterval(), config.healthCheckTimeout(), this::onHealthy);
        healthChecker.start();
    }

    /**
     * Registers this engine's meters in {@code registry} (docs/observability.md): per server its
     * requests in flight, whether it is in rotation, segments sent and failed, ejections and the
     * latency of each segment; segments aborted and resumed; weight updates and each server's part
     * of them. Call once, before generating.
     */
    public void bindMetrics(io.micrometer.core.instrument.MeterRegistry registry) {
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
    public void initialize(java.util.function.Consumer<String> waiting) throws InterruptedException {
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

    /** How often {@link #initialize(java.util.function.Consumer)} says what it still waits for. */
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
        Output out = new Output(Math.min(budget, INITIAL_OUTPUT_CAPACITY));
        StopReason reason = null;
        int emptyAborts = 0;
        // Aborts sent to servers where an attempt of this rid timed out: the rid is not sent there
        // again before its abort has been answered (the server would refuse it as still in flight).
        Map<ServerAddress, CompletableFuture<?>> pendingAborts = new HashMap<>(2);
        WorkflowContext context = config.deterministicSampling() ? WorkflowContext.current() : null;
        int segmentIndex = 0;
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
            Segment segment = runSegment(rid, prompt, out, sg, maxNewTokens, pendingAborts);
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
        return ModelResponse.of(
                prompt,
                out.tokens(),
                out.logprobs(),
                out.versions(),
                reason,
                Duration.ofNanos(System.nanoTime() - start));
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
                HttpResponse<byte[]> response = exchange(server, rid, body);
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

    /** One segment, with failover: returns the first successful response and its pinned version. */
    private Segment runSegment(
            String rid,
            int[] prompt,
            Output out,
            GenerationConfig g,
            int maxNewTokens,
            Map<ServerAddress, CompletableFuture<?>> pendingAborts)
            throws InterruptedException {
        List<String> failures = null;
        Map<ServerAddress, Integer> failuresByServer = Map.of();
        for (int attempt = 1; ; attempt++) {
            gate.awaitOpen();
            ServerPool.Lease lease;
            try {
                lease = pool.acquire(rid, failuresByServer.keySet(), config.requestTimeout());
            } catch (GenerationException e) {
                throw failures == null
                        ? e
                        : new GenerationException(
                                e.getMessage() + "; earlier attempts: " + String.join("; ", failures), e);
            }
            ServerAddress server = lease.address();
            String failure;
            boolean eject;
            Exception cause;
            try {
                int earlierFailures = failuresByServer.getOrDefault(server, 0);
                if (earlierFailures > 0) {
                    backoff.sleep(earlierFailures);
                    gate.awaitOpen();
                }
                CompletableFuture<?> abort = pendingAborts.remove(server);
                if (abort != null) {
                    awaitAbort(abort, server, rid);
                }
                int pinned = version.get();
                byte[] body = protocol.generateBody(
                        rid, prompt, out.tokens, out.size, g, maxNewTokens, config.loraAdapter(pinned));
                try {
                    long sent = System.nanoTime();
                    HttpResponse<byte[]> response = exchange(server, rid, body);
                    metrics.segment(server, System.nanoTime() - sent);
                    int status = response.statusCode();
                    GeneratedSegment generated = HttpExchanges.isSuccess(status)
                            ? protocol.parseGenerate(response.body(), server, rid, maxNewTokens)
                            : null;
                    if (generated != null && !servesOlderWeights(pinned, generated)) {
                        return new Segment(generated, labelVersion(pinned, generated, server, rid));
                    }
                    if (generated != null) {
                        // The server generated with weights older than the engine's: it restarted
                        // since the last update (and came back with its initial weights) or missed
                        // one unnoticed. Its tokens would carry a version older than the group's
                        // dispatch version (invariant 2 of docs/reliability.md): drop them, owe it a re-sync (the
                        // health checker re-sends the last update before re-admitting it), and
                        // continue elsewhere.
                        int behind = generated.serverVersion().getAsInt();
                        pool.markResyncPending(
                                server,
                                "it generated with weight version " + behind + ", behind the engine's " + pinned);
                        failure = "generated with weight version " + behind + " but the engine is at " + pinned
                                + " (restarted?); its " + generated.tokens().length + " tokens are dropped";
                        eject = true;
                    } else {
                        failure = "HTTP " + status + ": " + MalformedResponseException.excerpt(response.body());
                        // 4xx is the server judging the request, not the server being broken: retry
                        // (elsewhere if possible) as AReaL does, but keep the server in rotation.
                        eject = status < 400 || status >= 500;
                    }
                    cause = null;
                } catch (MalformedResponseException e) {
                    failure = e.getMessage();
                    eject = true;
                    cause = e;
                } catch (IOException e) {
                    ensureOpen();
                    if (e instanceof HttpTimeoutException) {
                        // The server may still be generating this rid: abort it there, and remember
                        // the abort so that a later attempt on that server waits for it.
                        pendingAborts.put(server, abortOnServer(server, rid, "the request timed out"));
                    }
                    failure = HttpExchanges.describe(e, config.requestTimeout());
                    eject = true;
                    cause = e;
                }
            } finally {
                lease.close();
            }
            pool.recordFailure(server, failure, eject);
            if (failures == null) {
                failures = new ArrayList<>(config.requestRetries());
                failuresByServer = new HashMap<>();
            }
            failures.add("attempt " + attempt + " on " + server + ": " + failure);
            failuresByServer.merge(server, 1, Integer::sum);
            if (attempt >= config.requestRetries()) {
                throw new GenerationException(
                        "generation of rid " + rid + " failed: " + attempt + " attempt" + (attempt == 1 ? "" : "s")
                                + " of POST " + protocol.generatePath() + " (request_retries=" + config.requestRetries()
                                + "): " + String.join("; ", failures),
                        cause);
            }
            log.info(
                    "rid {}: attempt {} on {} failed ({}); retrying with {} tokens kept",
                    rid,
                    attempt,
                    server,
                    failure,
                    out.size);
        }
    }

    /**
     * Sends one segment and waits for its response; on interruption, aborts it on the server (a
     * timeout's abort is sent by the caller, which keeps it to wait for).
     */
    private HttpResponse<byte[]> exchange(ServerAddress server, String rid, byte[] body)
            throws IOException, InterruptedException {
        Duration timeout = config.requestTimeout();
        try {
            return HttpExchanges.await(
                    http.post(generateUris.computeIfAbsent(server, a -> a.uri(protocol.generatePath())), body, timeout),
                    timeout);
        } catch (InterruptedException e) {
            abortOnServer(server, rid, "the caller was interrupted");
            throw e;
        }
    }

    /**
     * Best effort, never blocking: asks {@code server} to drop {@code rid} (SGLang); logs a failure.
     *
     * @return completes (never exceptionally) when the abort was answered or failed; at once when
     *     the protocol cancels by closing the connection (vLLM)
     */
    private CompletableFuture<?> abortOnServer(ServerAddress server, String rid, String why) {
        Optional<ControlCall> call = protocol.abortCall(rid);
        if (call.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        try {
            return http.start(server, call.get(), ABORT_TIMEOUT).handle((r, err) -> {
                if (err != null && closed) {
                    // Shutting down: the engine's own client is closing under the abort; the servers
                    // drop the request when its connection goes.
                    log.debug("abort of rid {} on {} dropped at shutdown: {}", rid, server, err.toString());
                } else if (err != null) {
                    log.warn("could not abort rid {} on {} ({}): {}", rid, server, why, err.toString());
                } else if (!HttpExchanges.isSuccess(r.statusCode())) {
                    log.warn("abort of rid {} on {} ({}) answered HTTP {}", rid, server, why, r.statusCode());
                }
                return null;
            });
        } catch (RuntimeException e) {
            log.warn("could not send the abort of rid {} to {} ({}): {}", rid, server, why, e.toString());
            return CompletableFuture.completedFuture(null);
        }
    }

    /**
     * Waits for an abort of {@code rid} sent earlier to {@code server} to be answered, so that the
     * rid is not sent there while still in flight (the server would refuse it with HTTP 400). The
     * abort's own timeout bounds the wait; the grace covers a response that stalls after its headers.
     */
    private static void awaitAbort(CompletableFuture<?> abort, ServerAddress server, String rid)
            throws InterruptedException {
        try {
            abort.get(ABORT_TIMEOUT.plus(ABORT_GRACE).toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            log.warn(
                    "the abort of rid {} on {} was not answered within {} s; sending the rid there again anyway",
                    rid,
                    server,
                    HttpExchanges.seconds(ABORT_TIMEOUT.plus(ABORT_GRACE)));
        } catch (ExecutionException e) {
            throw new IllegalStateException("an abort's future completes normally by construction", e);
        }
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
        updateLock.lockInterruptibly();
        try {
            int current = version.get();
            if (newVersion <= current) {
                throw new IllegalArgumentException("weight update to version " + newVersion
                        + " refused: the engine is at version " + current + " and versions must increase");
            }
            gate.hold();
            try {
                WeightUpdateReport report;
                try {
                    report = updater.update(pool.servers(), modelPath, newVersion);
                } catch (InterruptedException e) {
                    lastLoaded = new LoadedWeights(modelPath, newVersion);
                    setVersion(newVersion);
                    for (ServerAddress s : pool.servers()) {
                        pool.markResyncPending(s, "weight update to version " + newVersion + " was interrupted");
                    }
                    throw e;
                }
                metrics.weightUpdate(report);
                if (!report.anyLoaded()) {
                    for (WeightUpdateReport.ServerOutcome o : report.servers()) {
                        if (!o.continued()) {
                            pool.markResyncPending(o.server(), String.join(", ", o.errors()));
                        }
                    }
                    throw new WeightUpdateException(report, current);
                }
                lastLoaded = new LoadedWeights(modelPath, newVersion);
                unloadStaleAdapter(current);
                for (WeightUpdateReport.ServerOutcome o : report.servers()) {
                    if (o.ok()) {
                        resyncBackoff.remove(o.server());
                        pool.setServerVersion(o.server(), newVersion);
                        pool.clearResyncPending(o.server());
                    } else {
                        pool.markResyncPending(o.server(), String.join(", ", o.errors()));
                    }
                }
                setVersion(newVersion);
                return report;
            } finally {
                gate.release();
            }
        } finally {
            updateLock.unlock();
        }
    }

    /** With use_lora: the version before {@code previous} whose adapter is still loaded, or 0. */
    private int adapterBeforePrevious;

    /**
     * With {@code use_lora}, after an update from {@code previous}: unloads, best effort and without
     * waiting, the adapter of the version before {@code previous} on every server. The previous
     * version's adapter stays: a segment pinned to it just before the update may still reach a
     * server after it.
     */
    private void unloadStaleAdapter(int previous) {
        if (!config.useLora()) {
            return;
        }
        String stale = config.loraAdapter(adapterBeforePrevious);
        adapterBeforePrevious = previous;
        if (stale == null) {
            return;
        }
        ControlCall unload = protocol.unloadLoraCall(stale);
        for (ServerAddress s : pool.servers()) {
            http.start(s, unload, config.controlTimeout()).whenComplete((r, e) -> {
                if (e != null || !HttpExchanges.isSuccess(r.statusCode())) {
                    log.info(
                            "unloading LoRA adapter {} on {} failed ({}); it stays loaded",
                            stale,
                            s,
                            e != null ? e.toString() : "HTTP " + r.statusCode());
                }
            });
        }
    }

    /**
     * Records that another engine (the node running the cluster's weight update) loaded
     * {@code path} as {@code newVersion} on the servers. This engine loads nothing now; when it
     * re-syncs a restarted server it sends the newest weights it knows of, its own or these.
     * Without this, an engine that never ran an update would re-admit a restarted server with
     * its launch weights after a bare continue, and eject it again at its first token.
     */
    public void weightsLoadedElsewhere(Path path, int newVersion) {
        Objects.requireNonNull(path, "path");
        LoadedWeights told = new LoadedWeights(path, newVersion);
        loadedElsewhere.accumulateAndGet(
                told, (known, t) -> known == null || t.version() > known.version() ? t : known);
    }

    /** The newest weights loaded on the servers, by this engine or, as far as it knows, by another. */
    private LoadedWeights newestWeights() {
        LoadedWeights own = lastLoaded;
        LoadedWeights other = loadedElsewhere.get();
        if (own == null) {
            return other;
        }
        return other != null && other.version() > own.version() ? other : own;
    }

    /** The health checker's verdict on a server out of rotation: re-sync its weights if owed, then re-admit. */
    private void onHealthy(ServerAddress server) throws InterruptedException {
        if (!pool.isResyncPending(server)) {
            pool.readmit(server);
            return;
        }
        ResyncBackoff rb = resyncBackoff.computeIfAbsent(server, s -> new ResyncBackoff());
        if (System.nanoTime() < rb.notBefore) {
            return;
        }
        if (!updateLock.tryLock()) {
            // A fan-out is running; it includes this server. Probing the others matters more than waiting.
            return;
        }
        try {
            if (!pool.isResyncPending(server)) {
                pool.readmit(server);
                return;
            }
            LoadedWeights own = lastLoaded;
            if (config.weightTransfer() == WeightTransfer.NCCL && own != null) {
                // Only the trainer holds the tensors: the server joins the group now and is loaded
                // by the next update's broadcast; until then it stays out of rotation. An engine
                // that never loaded an update (another node's, or before the first one) sends no
                // group call: the next update's chain joins the server before its load.
                String error = updater.join(server, pool.servers().size());
                if (error != null) {
                    rb.failures++;
                    rb.notBefore =
                            System.nanoTime() + backoff.delay(rb.failures).toNanos();
                    pool.markResyncPending(server, "joining the weight-update group failed: " + error);
                }
                return;
            }
            // Over NCCL no file is sent; from disk, the newest weights any engine loaded.
            LoadedWeights w = config.weightTransfer() == WeightTransfer.NCCL ? own : newestWeights();
            int resyncVersion = w == null ? version.get() : w.version();
            WeightUpdateReport.ServerOutcome o = updater.resync(server, w == null ? null : w.path(), resyncVersion);
            if (o.ok()) {
                resyncBackoff.remove(server);
                pool.setServerVersion(server, resyncVersion);
                pool.clearResyncPending(server);
                pool.readmit(server);
            } else {
                rb.failures++;
                rb.notBefore = System.nanoTime() + backoff.delay(rb.failures).toNanos();
                pool.markResyncPending(server, "weight re-sync failed: " + String.join(", ", o.errors()));
            }
        } finally {
            updateLock.unlock();
        }
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
        Thread.ofVirtual().name("inference-drain-" + server).start(() -> {
            try {
                if (pool.awaitRemoved(server, handOverAfter) || closed || !pool.contains(server)) {
                    return;
                }
                if (!pool.stats(server).draining()) {
                    return; // added again while draining
                }
                log.info(
                        "inference server {} still runs segments {} s into its drain: asking it to hand them over",
                        server,
                        handOverAfter.toMillis() / 1000.0);
                handOver(server);
                if (!pool.awaitRemoved(server, config.requestTimeout())) {
                    log.warn("inference server {} has not finished its segments after the hand-over", server);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException e) {
                log.warn("drain of inference server {} failed", server, e);
            }
        });
        return true;
    }

    /**
     * Aborts every request on {@code server} with the protocol's first pause call (abort mode: each
     * returns its partial output with {@code abort}), then sends continue, so the server is left
     * serving. Best effort: failures are logged.
     */
    private void handOver(ServerAddress server) throws InterruptedException {
        for (ControlCall call : List.of(protocol.pauseCalls().get(0), protocol.continueCall())) {
            try {
                HttpResponse<byte[]> r =
                        HttpExchanges.await(http.start(server, call, config.controlTimeout()), config.controlTimeout());
                if (!HttpExchanges.isSuccess(r.statusCode())) {
                    log.warn("hand-over on draining server {}: {} answered HTTP {}", server, call, r.statusCode());
                }
            } catch (IOException e) {
                log.warn("hand-over on draining server {}: {} failed: {}", server, call, e.toString());
            }
        }
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

    /** A segment's parsed response and the version pinned before it was sent. */
    private record Segment(GeneratedSegment generated, int version) {}

    /**
     * The version a segment's tokens are labelled with: the one pinned before sending (semantics §2.3),
     * unless the server says which weights produced them. The two differ only in a narrow race —
     * a segment that passed the gate just before an update closed it reaches the server after its
     * pause, waits there, and runs after the load under the new weights. The server's word is the
     * truth, so the versions tensor stays truthful (invariant 2 of docs/reliability.md); AReaL labels such a segment
     * with the pinned version. (A server behind the pinned version, restarted or missing an update,
     * never gets here: its segment is dropped and the server re-synced, see {@code runSegment}.)
     */
    private int labelVersion(int pinned, GeneratedSegment generated, ServerAddress server, String rid) {
        if (config.useLora()) {
            return pinned; // the adapter named is the pinned version's; the server's label is its base model's
        }
        if (generated.serverVersion().isEmpty() || generated.serverVersion().getAsInt() == pinned) {
            return pinned;
        }
        int reported = generated.serverVersion().getAsInt();
        log.debug(
                "rid {}: {} generated this segment with weight version {}, not the pinned {}; labelling it {}",
                rid,
                server,
                reported,
                pinned,
                reported);
        return reported;
    }

    /** Whether the server says it generated {@code generated} with weights older than the pinned version. */
    private boolean servesOlderWeights(int pinned, GeneratedSegment generated) {
        // With use_lora the server's weight_version is its base model's, which adapters do not change.
        return !config.useLora()
                && generated.serverVersion().isPresent()
                && generated.serverVersion().getAsInt() < pinned;
    }

    /** The weights of the last update that loaded on at least one server. */
    private record LoadedWeights(Path path, int version) {}

    /** When the next weight re-sync of a server may be tried. */
    private static final class ResyncBackoff {
        volatile int failures;
        volatile long notBefore = Long.MIN_VALUE;
    }

    /** The tokens, logprobs and versions accumulated across segments; owned by one generate call. */
    private static final class Output {
        int[] tokens;
        float[] logprobs;
        int[] versions;
        int size;

        Output(int capacity) {
            tokens = new int[capacity];
            logprobs = new float[capacity];
            versions = new int[capacity];
        }

        void append(GeneratedSegment s, int version) {
            int n = s.length();
            int needed = size + n;
            if (needed > tokens.length) {
                int capacity = Math.max(needed, tokens.length * 2);
                tokens = Arrays.copyOf(tokens, capacity);
                logprobs = Arrays.copyOf(logprobs, capacity);
                versions = Arrays.copyOf(versions, capacity);
            }
            s.copyTokensTo(tokens, size);
            s.copyLogprobsTo(logprobs, size);
            Arrays.fill(versions, size, needed, version);
            size = needed;
        }

        int[] tokens() {
            return Arrays.copyOf(tokens, size);
        }

        float[] logprobs() {
            return Arrays.copyOf(logprobs, size);
        }

        int[] versions() {
            return Arrays.copyOf(versions, size);
        }
    }
}
