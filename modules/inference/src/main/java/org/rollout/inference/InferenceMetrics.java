package org.rollout.inference;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import org.rollout.config.ServerAddress;

/**
 * The inference client's meters (docs/observability.md). Everything that the server pool already
 * counts (in flight, requests, failures, ejections, in rotation) is read from {@link
 * ServerPool#stats()} when scraped; only what nothing else counts is recorded here as it happens:
 * the latency of each generate segment per server, segments interrupted by a weight update and
 * resumed after one, and the time of each server's part of a weight update. Meters are resolved
 * once per server when bound, so the generate path does one map lookup and a timer update.
 */
final class InferenceMetrics {
    /** Buckets of the segment latency histogram: a segment runs milliseconds to minutes. */
    static final Duration[] LATENCY_BUCKETS = {
        Duration.ofMillis(5),
        Duration.ofMillis(10),
        Duration.ofMillis(25),
        Duration.ofMillis(50),
        Duration.ofMillis(100),
        Duration.ofMillis(250),
        Duration.ofMillis(500),
        Duration.ofSeconds(1),
        Duration.ofMillis(2500),
        Duration.ofSeconds(5),
        Duration.ofSeconds(10),
        Duration.ofSeconds(30),
        Duration.ofSeconds(60)
    };

    /** Records nothing: an engine whose node exports no metrics. */
    static final InferenceMetrics NONE = new InferenceMetrics();

    private final Map<ServerAddress, Timer> segmentLatency;
    private final Map<ServerAddress, Timer> weightUpdate;
    private final Counter aborted;
    private final Counter resumed;
    private final Counter updatesOk;
    private final Counter updatesFailed;

    private InferenceMetrics() {
        segmentLatency = Map.of();
        weightUpdate = Map.of();
        aborted = null;
        resumed = null;
        updatesOk = null;
        updatesFailed = null;
    }

    InferenceMetrics(MeterRegistry registry, ServerPool pool, RemoteInferenceEngine engine) {
        Map<ServerAddress, Timer> latency = new HashMap<>();
        Map<ServerAddress, Timer> update = new HashMap<>();
        List<ServerAddress> servers = pool.servers();
        for (ServerAddress s : servers) {
            String server = s.toString();
            latency.put(
                    s,
                    Timer.builder("rollout_inference_request")
                            .description("latency of one generate segment (one HTTP request) on a server")
                            .tag("server", server)
                            .serviceLevelObjectives(LATENCY_BUCKETS)
                            .register(registry));
            update.put(
                    s,
                    Timer.builder("rollout_weight_update_server")
                            .description("one server's part of a weight update: pause, load, continue")
                            .tag("server", server)
                            .register(registry));
            serverGauge(
                    registry,
                    pool,
                    s,
                    "rollout_inference_in_flight",
                    "requests in flight on the server",
                    st -> st.outstanding());
            serverGauge(
                    registry,
                    pool,
                    s,
                    "rollout_inference_server_up",
                    "1 while the server is in rotation, 0 while ejected or waiting for a weight re-sync",
                    st -> st.inRotation() ? 1 : 0);
            serverCounter(
                    registry, pool, s, "rollout_inference_requests", "generate segments sent", st -> st.requests());
            serverCounter(
                    registry,
                    pool,
                    s,
                    "rollout_inference_failures",
                    "generate segments that failed",
                    st -> st.failures());
            serverCounter(
                    registry,
                    pool,
                    s,
                    "rollout_inference_ejections",
                    "times the server left rotation after a failure",
                    st -> st.ejections());
            serverCounter(
                    registry,
                    pool,
                    s,
                    "rollout_inference_prompt_tokens",
                    "prompt tokens of the segments the server answered with a cached_tokens count",
                    st -> st.promptTokens());
            serverCounter(
                    registry,
                    pool,
                    s,
                    "rollout_inference_cached_tokens",
                    "of those prompt tokens, the ones the server reported found in its prefix cache",
                    st -> st.cachedTokens());
            serverGauge(
                    registry,
                    pool,
                    s,
                    "rollout_inference_prefix_cache_hit_ratio",
                    "cached_tokens / prompt tokens of the server's answers so far (NaN before any reported one)",
                    st -> st.prefixHitRate().orElse(Double.NaN));
        }
        Gauge.builder("rollout_inference_fleet_prefix_cache_hit_ratio", pool, InferenceMetrics::fleetHitRate)
                .description("cached_tokens / prompt tokens over every server's answers so far (NaN before any)")
                .register(registry);
        segmentLatency = Map.copyOf(latency);
        weightUpdate = Map.copyOf(update);
        aborted = Counter.builder("rollout_inference_aborted_segments")
                .description("segments the server ended with abort (interrupted by a weight update)")
                .register(registry);
        resumed = Counter.builder("rollout_inference_resumed_segments")
                .description("segments sent to continue a generation after an abort")
                .register(registry);
        updatesOk = Counter.builder("rollout_weight_updates")
                .description("weight updates by outcome")
                .tag("outcome", "ok")
                .register(registry);
        updatesFailed = Counter.builder("rollout_weight_updates")
                .description("weight updates by outcome")
                .tag("outcome", "failed")
                .register(registry);
        FunctionCounter.builder("rollout_inference_discarded_tokens", engine, e -> e.discardedTokens())
                .description("tokens thrown away by aborts under interrupt_mode = discard")
                .register(registry);
        Gauge.builder("rollout_inference_waiting_at_gate", engine, e -> e.waitingAtGate())
                .description("generations held while a weight update runs")
                .register(registry);
    }

    /** The fleet's prefix-cache hit ratio: cached over prompt tokens of every server's answers. */
    static double fleetHitRate(ServerPool pool) {
        long prompt = 0;
        long cached = 0;
        for (ServerStats st : pool.stats()) {
            prompt += st.promptTokens();
            cached += st.cachedTokens();
        }
        return prompt == 0 ? Double.NaN : (double) cached / prompt;
    }

    private static void serverGauge(
            MeterRegistry registry,
            ServerPool pool,
            ServerAddress s,
            String name,
            String description,
            ToDoubleFunction<ServerStats> f) {
        Gauge.builder(name, pool, p -> p.find(s).map(f::applyAsDouble).orElse(Double.NaN))
                .description(description)
                .tag("server", s.toString())
                .register(registry);
    }

    private static void serverCounter(
            MeterRegistry registry,
            ServerPool pool,
            ServerAddress s,
            String name,
            String description,
            ToDoubleFunction<ServerStats> f) {
        FunctionCounter.builder(name, pool, p -> p.find(s).map(f::applyAsDouble).orElse(0.0))
                .description(description)
                .tag("server", s.toString())
                .register(registry);
    }

    void segment(ServerAddress server, long nanos) {
        Timer t = segmentLatency.get(server);
        if (t != null) {
            t.record(nanos, TimeUnit.NANOSECONDS);
        }
    }

    void aborted() {
        if (aborted != null) {
            aborted.increment();
        }
    }

    void resumed() {
        if (resumed != null) {
            resumed.increment();
        }
    }

    void weightUpdate(WeightUpdateReport report) {
        if (updatesOk == null) {
            return;
        }
        (report.anyLoaded() ? updatesOk : updatesFailed).increment();
        for (WeightUpdateReport.ServerOutcome o : report.servers()) {
            Timer t = weightUpdate.get(o.server());
            if (t != null) {
                t.record(o.pauseTime().plus(o.updateTime()).plus(o.continueTime()));
            }
        }
    }
}
