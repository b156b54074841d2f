package org.rollout.inference;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.random.RandomGenerator;
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;
import org.rollout.config.WeightTransfer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads new weights from disk on every server (semantics §6.9 disk path, semantics §9.3): every server in parallel on
 * its own virtual thread, each running its own chain, so that a fast server does not wait for a
 * slow one between steps:
 *
 * <pre>
 *   1. pause     vLLM: POST /areal_pause_generation {}
 *                SGLang: none (see below); with pause_grace_period &gt; 0: POST /pause_generation {} then {"mode":"in_place"}
 *   (pause_grace_period)
 *   2. update    SGLang: POST /update_weights_from_disk {model_path, abort_all_requests, weight_version}
 *                vLLM:   POST /areal_update_weights {model_path}
 *                — only when the pause succeeded
 *   3. continue  SGLang: POST /continue_generation {}   vLLM: POST /areal_continue_generation {}
 *                — ALWAYS, to every server, in a finally: also when pause or update failed, timed
 *                  out or the caller was interrupted (AReaL #1160, prime-rl #2673)
 * </pre>
 *
 * <p>With {@code weight_transfer = nccl} a server that is not yet in the weight-update group is
 * first sent {@code init_weights_update_group} (before the pause), and the load is {@code
 * update_weights_from_distributed} (SGLang) or {@code areal_set_update_weight_meta} then {@code
 * areal_update_weights_xccl} (vLLM) naming the tensors the trainer broadcasts
 * ({@link ServerProtocol#distributedUpdateCalls}).
 *
 * <p><b>The pause before the load</b> is sent only where the load call does not itself stop
 * generation ({@link ServerProtocol#updateHoldsGeneration()}). SGLang's {@code
 * update_weights_from_disk} with {@code "abort_all_requests": true} aborts every request in flight
 * (partial output, {@code abort}, exactly as the abort-mode pause does) and loads under the model
 * update writer lock, which holds every new request until the load is done; AReaL's pause pair
 * would only add two round trips. This sequence stays valid against a real SGLang server: it is
 * the update call AReaL sends, without the pause around it, and {@code continue_generation} on a
 * server that is not paused only clears a flag that is not set. When {@code pause_grace_period} is
 * set the pause pair is sent as AReaL does (a grace period only means something after a pause). No
 * generation runs on a mix of old and new weights either way (the abort and the swap are atomic on
 * the server), and the aborted requests return their partial output, which the engine resumes
 * once its own gate (held by the caller for the whole update) opens.
 *
 * <p>There is no barrier between servers: each server's continue follows its own load. That is
 * safe because nothing is sent to any server during an update (the engines' gates are closed), and
 * each server switches weights atomically.
 *
 * <p>Every call has a timeout (pause and continue: {@code control_timeout}; the load:
 * {@code request_timeout}) and up to {@code request_retries} attempts with jittered exponential
 * back-off. Connection errors, timeouts and 5xx are retried; a 4xx or {@code "success": false} is
 * the server's answer and is not. Failures never throw: they are reported per server in the
 * {@link WeightUpdateReport}; what to do with a server that failed is the caller's decision
 * ({@link RemoteInferenceEngine#updateWeights} takes it out of rotation).
 *
 * <p>Thread-safe; one update at a time is the caller's business (the engine serialises them).
 */
public final class WeightUpdater {
    private static final Logger log = LoggerFactory.getLogger(WeightUpdater.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Step NOT_SENT = new Step(null, 0, false);

    private final ServerProtocol protocol;
    private final HttpExchanges http;
    private final Duration controlTimeout;
    private final Duration updateTimeout;
    private final Duration pauseGracePeriod;
    private final List<ControlCall> pauseCalls;
    private final int attempts;
    private final Backoff backoff;

    /** An updater for {@code config}'s backend and timeouts, over {@code client} (not closed by it). */
    private final WeightTransfer weightTransfer;

    private final InferenceConfig config;

    public WeightUpdater(InferenceConfig config, HttpClient client) {
        this(config, client, new SplittableRandom());
    }

    /** As {@link #WeightUpdater(InferenceConfig, HttpClient)}, with the back-off jitter drawn from {@code random}. */
    public WeightUpdater(InferenceConfig config, HttpClient client, RandomGenerator random) {
        this.protocol = ServerProtocol.of(config);
        this.http = new HttpExchanges(Objects.requireNonNull(client, "client"));
        this.controlTimeout = config.controlTimeout();
        this.updateTimeout = config.requestTimeout();
        this.pauseGracePeriod = config.pauseGracePeriod();
        // An adapter load neither aborts nor holds generation: with use_lora the pause always comes first.
        this.pauseCalls = config.useLora() ? protocol.pauseCalls() : pauseCalls(protocol, pauseGracePeriod);
        this.attempts = config.requestRetries();
        this.backoff = new Backoff(config.retryBackoffInitial(), config.retryBackoffMax(), random);
        this.weightTransfer = config.weightTransfer();
        this.config = config;
    }

    /**
     * The load calls: the path for the servers to read, or the file's bytes ({@code weight_transfer});
     * with {@code use_lora}, the file loaded as the version's adapter; with {@code weight_transfer =
     * nccl}, {@code modelPath} is a {@link TensorManifest} and the calls tell the servers to receive
     * those tensors from the group.
     */
    private List<ControlCall> loadCalls(ServerAddress server, Path modelPath, int version) {
        if (config.useLora()) {
            return List.of(protocol.loadLoraCall(config.loraAdapter(version), modelPath));
        }
        return switch (weightTransfer) {
            case HTTP ->
                List.of(
                        sharesDisk(server)
                                ? protocol.updateWeightsCall(modelPath.toAbsolutePath(), version)
                                : protocol.uploadWeightsCall(modelPath, version));
            case DISK -> List.of(protocol.updateWeightsCall(modelPath, version));
            case NCCL ->
                protocol.distributedUpdateCalls(TensorManifest.read(modelPath), config.ncclGroupName(), version);
        };
    }

    /**
     * With {@code weight_transfer = http}: whether {@code server} reads this node's disk
     * ({@code shared_disk_servers}), so that it is sent {@code update_weights_from_disk} with the
     * node-local path (the file the engine would otherwise stream) instead of the bytes. SGLang and
     * vLLM have no route for a weight file's bytes; a server they run on this node loads it this way.
     */
    boolean sharesDisk(ServerAddress server) {
        return switch (config.sharedDiskServers()) {
            case InferenceConfig.SHARED_DISK_NONE -> false;
            case InferenceConfig.SHARED_DISK_LOCAL ->
                config.launchedServers().contains(server) || LocalHost.isLocal(server.host());
            default -> config.launchedServers().contains(server);
        };
    }

    /** With {@code weight_transfer = nccl}: each server's rank in the weight-update group, once it joined. */
    private final Map<ServerAddress, Integer> groupRanks = new ConcurrentHashMap<>();

    /** The next rank to hand out (rank 0 is the trainer). */
    private int nextRank = 1;

    /** Whether {@code server} has joined the weight-update group ({@code weight_transfer = nccl}). */
    public boolean inGroup(ServerAddress server) {
        return groupRanks.containsKey(server);
    }

    /**
     * The group call for {@code server}, or null when it already joined or the transfer is not
     * {@code nccl}. Ranks go by first join, in the order of the servers given (AReaL: rank {@code 1 +
     * i} for the i-th address); a server keeps its rank across a failed join. {@code worldSize} is
     * sent as {@code 1 +} the number of servers given plus those that joined before and are not among them.
     */
    private synchronized ControlCall joinCall(ServerAddress server, int fleetSize) {
        if (weightTransfer != WeightTransfer.NCCL || groupRanks.containsKey(server)) {
            return null;
        }
        Integer rank = reservedRanks.get(server);
        if (rank == null) {
            rank = nextRank++;
            reservedRanks.put(server, rank);
        }
        return protocol.initWeightsUpdateGroupCall(
                config.ncclMasterAddress(),
                config.ncclMasterPort(),
                rank,
                Math.max(fleetSize, nextRank - 1) + 1,
                config.ncclGroupName());
    }

    /** Ranks handed out, joined or not. */
    private final Map<ServerAddress, Integer> reservedRanks = new HashMap<>();

    /**
     * Makes {@code server} join the weight-update group now when it has not ({@code weight_transfer =
     * nccl}; a server added at run time joins before its first update).
     *
     * @return null when it is in the group (or there is no group), else the error
     */
    String join(ServerAddress server, int fleetSize) throws InterruptedException {
        ControlCall call = joinCall(server, fleetSize);
        if (call == null) {
            return null;
        }
        String error = callWithRetries(server, call, updateTimeout);
        if (error == null) {
            groupRanks.put(server, reservedRanks(server));
        }
        return error;
    }

    /**
     * The calls a weight update sends before its load: none when the load call itself aborts and
     * holds generation and no grace period is asked for, else the protocol's pause calls.
     */
    public static List<ControlCall> pauseCalls(ServerProtocol protocol, Duration pauseGracePeriod) {
        return protocol.updateHoldsGeneration() && pauseGracePeriod.isZero() ? List.of() : protocol.pauseCalls();
    }

    /**
     * Pauses every server where needed, loads {@code modelPath} as {@code version} on each, and
     * continues every server. Never throws for a server's failure; see the report.
     *
     * @throws InterruptedException when interrupted during pause or update; continue has then
     *     still been sent to every server before this is thrown
     */
    public WeightUpdateReport update(List<ServerAddress> servers, Path modelPath, int version)
            throws InterruptedException {
        long start = System.nanoTime();
        int n = servers.size();
        List<ServerRun> runs = new ArrayList<>(n);
        for (ServerAddress server : servers) {
            runs.add(new ServerRun(server, loadCalls(server, modelPath, version), joinCall(server, n)));
        }
        InterruptedException interruption = runAll(runs);
        List<WeightUpdateReport.ServerOutcome> outcomes = new ArrayList<>(n);
        for (ServerRun r : runs) {
            outcomes.add(r.outcome());
        }
        WeightUpdateReport report =
                new WeightUpdateReport(modelPath, version, outcomes, Duration.ofNanos(System.nanoTime() - start));
        if (report.allSucceeded()) {
            log.info("{} in {} ms", report.summary(), report.elapsed().toMillis());
        } else {
            log.warn("{} in {} ms", report.summary(), report.elapsed().toMillis());
        }
        if (interruption != null) {
            Thread.interrupted();
            throw interruption;
        }
        return report;
    }

    /**
     * Re-sends an update to one server that missed it: pause, load {@code modelPath} (skipped when
     * null: only the continue is owed), continue (always).
     */
    WeightUpdateReport.ServerOutcome resync(ServerAddress server, Path modelPath, int version)
            throws InterruptedException {
        ServerRun run = new ServerRun(server, modelPath == null ? null : loadCalls(server, modelPath, version), null);
        InterruptedException interruption = runAll(List.of(run));
        if (interruption != null) {
            Thread.interrupted();
            throw interruption;
        }
        return run.outcome();
    }

    /**
     * Runs every server's chain on its own virtual thread and waits for all of them. When the
     * caller is interrupted, the chains still pausing or loading are interrupted; every chain still
     * sends its continue, and this waits for those before returning the interruption.
     *
     * @return the interruption to re-throw once the report is built, or null
     */
    private InterruptedException runAll(List<ServerRun> runs) {
        InterruptedException interruption = null;
        List<Thread> threads = new ArrayList<>(runs.size());
        for (ServerRun r : runs) {
            threads.add(Thread.ofVirtual().name("weight-update-" + r.server).start(r));
        }
        for (Thread t : threads) {
            while (true) {
                try {
                    t.join();
                    break;
                } catch (InterruptedException e) {
                    if (interruption == null) {
                        interruption = e;
                        runs.forEach(ServerRun::interruptUnlessContinuing);
                    }
                }
            }
        }
        return interruption;
    }

    /**
     * One server's chain: pause (when needed) → grace → load (when the pause succeeded and there is
     * something to load) → continue (always; never interrupted).
     */
    private final class ServerRun implements Runnable {
        private final ServerAddress server;
        private final List<ControlCall> load;
        private final ControlCall joinCall;
        private Step joined = NOT_SENT;
        private Step pause = NOT_SENT;
        private Step loaded = NOT_SENT;
        private Step resume;
        private Thread thread;
        private boolean continuing;
        private boolean interrupted;

        /**
         * @param load the load calls, or null when only the continue is owed
         * @param joinCall the group call to send before the load ({@code weight_transfer = nccl}), or null
         */
        ServerRun(ServerAddress server, List<ControlCall> load, ControlCall joinCall) {
            this.server = server;
            this.load = load;
            this.joinCall = joinCall;
        }

        @Override
        public void run() {
            synchronized (this) {
                thread = Thread.currentThread();
                if (interrupted) {
                    thread.interrupt();
                }
            }
            try {
                if (load != null && joinCall != null) {
                    // AReaL's order: the server is in the group before any update reaches it.
                    joined = new Step("interrupted while joining the weight-update group", 0, true);
                    joined = WeightUpdater.this.run(server, List.of(joinCall), updateTimeout);
                    if (joined.ok()) {
                        groupRanks.put(server, reservedRanks(server));
                    }
                }
                if (load != null && joined.ok()) {
                    if (!pauseCalls.isEmpty()) {
                        pause = new Step("interrupted while pausing", 0, true);
                        pause = WeightUpdater.this.run(server, pauseCalls, controlTimeout);
                        if (pause.ok() && !pauseGracePeriod.isZero()) {
                            Thread.sleep(pauseGracePeriod);
                        }
                    }
                    if (pause.ok()) {
                        loaded = new Step("interrupted while loading", 0, true);
                        loaded = WeightUpdater.this.run(server, load, updateTimeout);
                    }
                }
            } catch (InterruptedException e) {
                // The step in progress keeps its "interrupted" record; the continue follows.
            } finally {
                synchronized (this) {
                    continuing = true;
                    Thread.interrupted();
                }
                resume = continueUninterrupted();
            }
        }

        synchronized void interruptUnlessContinuing() {
            interrupted = true;
            if (thread != null && !continuing) {
                thread.interrupt();
            }
        }

        private Step continueUninterrupted() {
            try {
                return WeightUpdater.this.run(server, List.of(protocol.continueCall()), controlTimeout);
            } catch (InterruptedException e) {
                // Nothing interrupts a chain once it is continuing; were it to happen, report it.
                Thread.currentThread().interrupt();
                return new Step("interrupted", 0, true);
            }
        }

        WeightUpdateReport.ServerOutcome outcome() {
            return WeightUpdater.outcome(server, joined, pause, loaded, resume);
        }
    }

    private synchronized Integer reservedRanks(ServerAddress server) {
        return reservedRanks.get(server);
    }

    private static WeightUpdateReport.ServerOutcome outcome(
            ServerAddress server, Step joined, Step pause, Step load, Step resume) {
        List<String> errors = new ArrayList<>(4);
        for (Step s : new Step[] {joined, pause, load, resume}) {
            if (s.error() != null) {
                errors.add(s.error());
            }
        }
        return new WeightUpdateReport.ServerOutcome(
                server, load.sent() && load.ok(), resume.ok(), errors, pause.time(), load.time(), resume.time());
    }

    /** Sends {@code calls} in order, stopping at the first failure. */
    private Step run(ServerAddress server, List<ControlCall> calls, Duration timeout) throws InterruptedException {
        long start = System.nanoTime();
        for (ControlCall call : calls) {
            String error = callWithRetries(server, call, timeout);
            if (error != null) {
                return new Step(error, System.nanoTime() - start, true);
            }
        }
        return new Step(null, System.nanoTime() - start, true);
    }

    /** Null on success, else what went wrong, naming the call. */
    private String callWithRetries(ServerAddress server, ControlCall call, Duration timeout)
            throws InterruptedException {
        String lastError = null;
        for (int attempt = 1; attempt <= attempts; attempt++) {
            if (attempt > 1) {
                backoff.sleep(attempt - 1);
            }
            try {
                HttpResponse<byte[]> response = http.call(server, call, timeout);
                String refusal = refusal(response);
                if (refusal == null) {
                    return null;
                }
                if (response.statusCode() < 500) {
                    return call.method() + " " + call.path() + ": " + refusal;
                }
                lastError = refusal;
            } catch (IOException e) {
                lastError = HttpExchanges.describe(e, timeout);
            }
        }
        return call.method() + " " + call.path() + " failed after " + attempts + " attempt" + (attempts == 1 ? "" : "s")
                + ": " + lastError;
    }

    /** Null when the response is a success; otherwise why not (status or {@code "success": false}). */
    static String refusal(HttpResponse<byte[]> response) {
        byte[] body = response.body();
        if (!HttpExchanges.isSuccess(response.statusCode())) {
            return "HTTP " + response.statusCode() + ": " + MalformedResponseException.excerpt(body);
        }
        if (body == null || body.length == 0 || body[0] != '{') {
            return null;
        }
        try {
            JsonNode node = JSON.readTree(body);
            JsonNode success = node.get("success");
            if (success != null && success.isBoolean() && !success.booleanValue()) {
                JsonNode message = node.get("message");
                return "success=false: "
                        + (message != null && message.isTextual()
                                ? message.textValue()
                                : MalformedResponseException.excerpt(body));
            }
            return null;
        } catch (JsonProcessingException e) {
            // A 2xx with a body that is not JSON (e.g. "OK") is still the server saying yes.
            return null;
        } catch (IOException e) {
            throw new UncheckedIOException("reading from memory cannot fail", e);
        }
    }

    /** One phase on one server: its error (null when it succeeded), its time, and whether it was sent. */
    private record Step(String error, long nanos, boolean sent) {
        boolean ok() {
            return error == null;
        }

        Duration time() {
            return Duration.ofNanos(nanos);
        }
    }
}
