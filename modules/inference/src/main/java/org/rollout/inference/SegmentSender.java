package org.rollout.inference;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.rollout.api.GenerationConfig;
import org.rollout.api.GenerationException;
import org.rollout.api.WorkflowContext;
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends one segment of a generation with failover (semantics §2.1): waits at the pause gate, takes a
 * server from the pool, pins the version, posts the prompt and the tokens so far, and on a failure
 * ejects the server and retries the same segment elsewhere, up to {@code request_retries} attempts.
 * An interrupted or timed-out exchange is aborted on its server (SGLang's {@code /abort_request}).
 */
final class SegmentSender {
    // Logs under the engine's name, as the engine's lines always have.
    private static final Logger log = LoggerFactory.getLogger(RemoteInferenceEngine.class);
    private static final Duration ABORT_TIMEOUT = Duration.ofSeconds(2);
    private static final Duration ABORT_GRACE = Duration.ofSeconds(1);

    private final InferenceConfig config;
    private final ServerProtocol protocol;
    private final HttpExchanges http;
    private final ServerPool pool;
    private final Backoff backoff;
    private final PauseGate gate;
    private final AtomicInteger version;
    private final Supplier<InferenceMetrics> metrics;
    private final BooleanSupplier closed;
    private final Runnable ensureOpen;
    private final Map<ServerAddress, URI> generateUris = new ConcurrentHashMap<>();

    /**
     * @param version the engine's version, pinned before each segment is sent
     * @param metrics the engine's meters now (bound after construction)
     * @param closed whether the engine is closed
     * @param ensureOpen throws when the engine is closed
     */
    SegmentSender(
            InferenceConfig config,
            ServerProtocol protocol,
            HttpExchanges http,
            ServerPool pool,
            Backoff backoff,
            PauseGate gate,
            AtomicInteger version,
            Supplier<InferenceMetrics> metrics,
            BooleanSupplier closed,
            Runnable ensureOpen) {
        this.config = config;
        this.protocol = protocol;
        this.http = http;
        this.pool = pool;
        this.backoff = backoff;
        this.gate = gate;
        this.version = version;
        this.metrics = metrics;
        this.closed = closed;
        this.ensureOpen = ensureOpen;
    }

    /** One segment, with failover: returns the first successful response and its pinned version. */
    Segment runSegment(
            String rid,
            Map<String, Object> metadata,
            int[] prompt,
            GeneratedTokens out,
            GenerationConfig g,
            int maxNewTokens,
            Map<ServerAddress, CompletableFuture<?>> pendingAborts)
            throws InterruptedException {
        List<String> failures = null;
        Map<ServerAddress, Integer> failuresByServer = Map.of();
        Placement placement = config.routingStrategy().isAffine()
                ? Placement.of(metadata, WorkflowContext.current(), prompt, out.tokens, out.size, pool.placesByPrefix())
                : Placement.NONE;
        for (int attempt = 1; ; attempt++) {
            gate.awaitOpen();
            ServerPool.Lease lease;
            try {
                lease = pool.acquire(rid, placement, failuresByServer.keySet(), config.requestTimeout());
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
                    metrics.get().segment(server, System.nanoTime() - sent);
                    int status = response.statusCode();
                    GeneratedSegment generated = HttpExchanges.isSuccess(status)
                            ? protocol.parseGenerate(response.body(), server, rid, maxNewTokens)
                            : null;
                    if (generated != null && generated.cachedTokens().isPresent()) {
                        lease.answered(
                                prompt.length + out.size,
                                generated.cachedTokens().getAsInt());
                    }
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
                    ensureOpen.run();
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
    HttpResponse<byte[]> exchange(ServerAddress server, String rid, byte[] body)
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
                if (err != null && closed.getAsBoolean()) {
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

    /** A segment's parsed response and the version pinned before it was sent. */
    record Segment(GeneratedSegment generated, int version) {}

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
}
