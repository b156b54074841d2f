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
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.random.RandomGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads new weights from disk on every server (§6.9 disk path, §9.3), in three phases, each fanned
 * out to all servers in parallel:
 *
 * <pre>
 *   1. pause     SGLang: POST /pause_generation {} then {"mode":"in_place"}   vLLM: POST /areal_pause_generation {}
 *   (pause_grace_period)
 *   2. update    SGLang: POST /update_weights_from_disk {model_path, abort_all_requests, weight_version}
 *                vLLM:   POST /areal_update_weights {model_path}
 *                — only on servers whose pause succeeded
 *   3. continue  SGLang: POST /continue_generation {}   vLLM: POST /areal_continue_generation {}
 *                — ALWAYS, to every server, in a finally: also when pause or update failed, timed
 *                  out or the caller was interrupted (AReaL #1160, prime-rl #2673)
 * </pre>
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
    private final int attempts;
    private final Backoff backoff;

    /** An updater for {@code config}'s backend and timeouts, over {@code client} (not closed by it). */
    public WeightUpdater(InferenceConfig config, HttpClient client) {
        this(config, client, new SplittableRandom());
    }

    /** As {@link #WeightUpdater(InferenceConfig, HttpClient)}, with the back-off jitter drawn from {@code random}. */
    public WeightUpdater(InferenceConfig config, HttpClient client, RandomGenerator random) {
        this.protocol = config.protocol();
        this.http = new HttpExchanges(Objects.requireNonNull(client, "client"));
        this.controlTimeout = config.controlTimeout();
        this.updateTimeout = config.requestTimeout();
        this.pauseGracePeriod = config.pauseGracePeriod();
        this.attempts = config.requestRetries();
        this.backoff = new Backoff(config.retryBackoffInitial(), config.retryBackoffMax(), random);
    }

    /**
     * Pauses every server, loads {@code modelPath} as {@code version} on each, and continues every
     * server. Never throws for a server's failure; see the report.
     *
     * @throws InterruptedException when interrupted during pause or update; continue has then
     *     still been sent to every server before this is thrown
     */
    public WeightUpdateReport update(List<ServerAddress> servers, Path modelPath, int version)
            throws InterruptedException {
        long start = System.nanoTime();
        int n = servers.size();
        ControlCall load = protocol.updateWeightsCall(modelPath, version);
        Step[] pauses = filled(n, new Step("interrupted before pausing", 0, false));
        Step[] loads = filled(n, NOT_SENT);
        InterruptedException interruption = null;
        try {
            pauses = inParallel(n, i -> run(servers.get(i), protocol.pauseCalls(), controlTimeout));
            if (!pauseGracePeriod.isZero()) {
                Thread.sleep(pauseGracePeriod);
            }
            Step[] paused = pauses;
            loads = inParallel(n, i -> paused[i].ok() ? run(servers.get(i), List.of(load), updateTimeout) : NOT_SENT);
        } catch (InterruptedException e) {
            interruption = e;
        }
        Step[] continues =
                inParallelToCompletion(n, i -> run(servers.get(i), List.of(protocol.continueCall()), controlTimeout));
        List<WeightUpdateReport.ServerOutcome> outcomes = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            outcomes.add(outcome(servers.get(i), pauses[i], loads[i], continues[i]));
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
        Step pause = NOT_SENT;
        Step load = NOT_SENT;
        InterruptedException interruption = null;
        try {
            if (modelPath != null) {
                pause = run(server, protocol.pauseCalls(), controlTimeout);
                if (pause.ok()) {
                    load = run(server, List.of(protocol.updateWeightsCall(modelPath, version)), updateTimeout);
                }
            }
        } catch (InterruptedException e) {
            interruption = e;
        }
        Step resume = inParallelToCompletion(1, i -> run(server, List.of(protocol.continueCall()), controlTimeout))[0];
        if (interruption != null) {
            Thread.interrupted();
            throw interruption;
        }
        return outcome(server, pause, load, resume);
    }

    private static WeightUpdateReport.ServerOutcome outcome(ServerAddress server, Step pause, Step load, Step resume) {
        List<String> errors = new ArrayList<>(3);
        for (Step s : new Step[] {pause, load, resume}) {
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

    /** One phase's work on the server at an index. */
    private interface ServerTask {
        Step run(int server) throws InterruptedException;
    }

    /** Runs {@code task} for every server on its own virtual thread; interrupting cancels them all. */
    private static Step[] inParallel(int n, ServerTask task) throws InterruptedException {
        ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
        try {
            List<Future<Step>> futures = submit(executor, n, task);
            Step[] out = new Step[n];
            for (int i = 0; i < out.length; i++) {
                out[i] = result(futures.get(i));
            }
            return out;
        } catch (InterruptedException e) {
            executor.shutdownNow();
            throw e;
        } finally {
            executor.close();
        }
    }

    /** As {@link #inParallel}, but waits for every task even when interrupted (then re-asserts the interrupt). */
    private static Step[] inParallelToCompletion(int n, ServerTask task) {
        boolean interrupted = Thread.interrupted();
        Step[] out = new Step[n];
        try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<Step>> futures = submit(executor, n, task);
            for (int i = 0; i < out.length; i++) {
                while (out[i] == null) {
                    try {
                        out[i] = result(futures.get(i));
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        return out;
    }

    private static List<Future<Step>> submit(ExecutorService executor, int n, ServerTask task) {
        List<Future<Step>> futures = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int server = i;
            futures.add(executor.submit(() -> {
                try {
                    return task.run(server);
                } catch (InterruptedException e) {
                    return new Step("interrupted", 0, true);
                }
            }));
        }
        return futures;
    }

    private static Step result(Future<Step> f) throws InterruptedException {
        try {
            return f.get();
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            return new Step("failed: " + c, 0, true);
        }
    }

    private static Step[] filled(int n, Step s) {
        Step[] a = new Step[n];
        Arrays.fill(a, s);
        return a;
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
