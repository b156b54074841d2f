package org.rollout.benchmarks.e2e;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.WorkflowContext;
import org.rollout.config.InferenceConfig;
import org.rollout.config.RoutingStrategy;
import org.rollout.config.ServerAddress;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.inference.ServerStats;
import org.rollout.modelserver.LatencyModel;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.PrefixCacheStats;
import org.rollout.modelserver.TinyLmWeights;

/**
 * Engine placement ({@code rollout.routing_strategy}) on a simulated GPU fleet: {@code --servers}
 * built-in model servers with their prefix caches and a latency model of GPU-like prefill and decode
 * costs, each workload run once per strategy through one {@link RemoteInferenceEngine}, on a fresh
 * fleet (empty caches) per run.
 *
 * <pre>
 *   rlvr      groups of --group-size samples of one --prompt-tokens prompt, --answer-tokens each
 *             (ignore_eos: every strategy generates the same tokens); --rlvr-concurrency groups in
 *             flight, --rlvr-groups in all; a group's samples run on threads of their own inside
 *             the group's WorkflowContext (task = group, sample = index)
 *   agent     episodes of --turns turns: a --agent-prompt-tokens prompt, then each turn the history
 *             + the model's answer + a --observation-tokens tool observation is sent again, after a
 *             tool call of --tool-ms on average (uniform in 0 to twice that, drawn per episode and
 *             turn, the same draws for every strategy); one
 *             episode is one trajectory, run on one thread inside its WorkflowContext;
 *             --agent-concurrency episodes in flight, --agent-episodes in all
 *   failover  agent, with server 0 crashed (connections reset, nothing answered) once --kill-at of
 *             all turns have completed: every episode must still complete, every answer full
 *   strategies  --strategies, least_requests required: the baseline of every ratio
 * </pre>
 *
 * <p>Costs: {@code --prefill-us-per-token} per prompt token not found in a server's prefix cache,
 * {@code --decode-base-us} per decode step and {@code --decode-us-per-seq} per running sequence
 * ({@code auto}: {@code --kv-ns-per-token} × the workload's mean context while decoding, the KV
 * read of one sequence), all multiplied by {@code --time-scale} on the servers. Reported times
 * and rates are those of the modelled fleet (wall time ÷ time-scale); while the CPU is not the
 * bottleneck they do not depend on the scale.
 *
 * <p>Figures per workload and strategy: output tokens/s over the run (the same tokens for every
 * strategy, so the ratio to least_requests is the inverse ratio of the run times), the prefix-cache
 * hit rate from the engine's counters (cached prompt tokens ÷ prompt tokens of every answer) and
 * from the servers' own ({@link ModelServer#prefixCacheStats()}), p50/p99 latency of a group
 * (rlvr) or an episode (agent, failover). Closed loop: each of the concurrency's slots runs one
 * group or episode after another, the slots' starts spread over one answer's decode time so that
 * fixed-length answers do not keep every slot in lockstep. Strategies run one after another in an
 * order rotated per workload (and per round with {@code --rounds}).
 */
public final class RoutingBenchmark implements EndToEndBenchmark {
    static final double TARGET_RLVR = 1.5;
    static final double TARGET_AGENT = 2.0;
    static final double TARGET_HIT_RATE = 0.8;

    /** The tiny model's context decay: short contexts keep its CPU cost per token small (see class comment). */
    static final float DECAY = 0.05f;

    /** A workload, by its name on the command line and in the summary line. */
    enum Workload {
        RLVR("rlvr"),
        AGENT("agent"),
        FAILOVER("failover");

        final String key;

        Workload(String key) {
            this.key = key;
        }

        static Workload of(String key) {
            for (Workload w : values()) {
                if (w.key.equals(key)) {
                    return w;
                }
            }
            return null;
        }
    }

    @Override
    public String name() {
        return "routing";
    }

    @Override
    public String description() {
        return "engine placement on a simulated GPU fleet with prefix caches: round_robin, least_requests, "
                + "group_affinity, prefix_aware on RLVR groups, multi-turn agent episodes, and agent episodes "
                + "with a server killed";
    }

    @Override
    public List<Flag> flags() {
        return List.of(
                new Flag("servers", "8", "built-in model servers in the fleet"),
                new Flag(
                        "strategies",
                        "round_robin,least_requests,group_affinity,prefix_aware",
                        "routing strategies compared (least_requests, the baseline, required)"),
                new Flag("workloads", "rlvr,agent,failover", "workloads run: rlvr, agent, failover"),
                new Flag(
                        "prefill-us-per-token",
                        "30",
                        "modelled GPU: prefill time per uncached prompt token, µs (7B-class on one H100)"),
                new Flag("decode-base-us", "6000", "modelled GPU: fixed time of one decode step, µs"),
                new Flag(
                        "decode-us-per-seq",
                        "auto",
                        "modelled GPU: extra decode time per running sequence, µs; auto = kv-ns-per-token x the "
                                + "workload's mean context"),
                new Flag(
                        "kv-ns-per-token",
                        "21",
                        "modelled GPU: decode time to read one context token's KV cache, ns (for auto)"),
                new Flag(
                        "time-scale",
                        "0.5",
                        "multiplies every modelled cost on the servers (less: faster runs, more CPU per second)"),
                new Flag("max-running", "256", "sequences one server decodes at once (max_running_requests)"),
                new Flag(
                        "cache-tokens",
                        "900000",
                        "prefix cache of each server, tokens (one H100's KV pool for the 7B model); also the "
                                + "engine's prefix_view_tokens"),
                new Flag("group-size", "16", "rlvr: samples per group"),
                new Flag("prompt-tokens", "2000", "rlvr: prompt tokens of a group"),
                new Flag("answer-tokens", "500", "tokens of every answer (ignore_eos), rlvr and agent"),
                new Flag("rlvr-groups", "128", "rlvr: groups in all"),
                new Flag("rlvr-concurrency", "32", "rlvr: groups in flight"),
                new Flag("turns", "8", "agent: turns per episode"),
                new Flag("agent-prompt-tokens", "2000", "agent: tokens of an episode's first prompt"),
                new Flag("observation-tokens", "1500", "agent: tool observation appended after each answer"),
                new Flag(
                        "tool-ms",
                        "2000",
                        "agent: mean modelled time a tool call takes between two turns, ms (uniform in 0 to twice "
                                + "this, the same draws for every strategy; times time-scale on the wall clock)"),
                new Flag("agent-episodes", "256", "agent and failover: episodes in all"),
                new Flag("agent-concurrency", "256", "agent and failover: episodes in flight"),
                new Flag(
                        "kill-at",
                        "0.5",
                        "failover: server 0 is crashed when this fraction of all turns has completed"),
                new Flag("rounds", "1", "runs of every strategy per workload, in rotated order"),
                new Flag("seed", "1", "seed of the prompts and observations"));
    }

    /** What one run of one strategy on one workload measured. */
    record Run(
            long outputTokens,
            double wallSeconds,
            long windowTokens,
            double windowSeconds,
            long[] latencyNanos,
            long enginePromptTokens,
            long engineCachedTokens,
            long serverPromptTokens,
            long serverHitTokens,
            int started,
            int completed,
            int failed,
            int shortAnswers,
            double cpuSeconds,
            double loadBefore,
            double loadAfter) {}

    /** The runs of one strategy on one workload, pooled; rates and times in the modelled fleet's seconds. */
    record Result(
            double tokensPerSecond,
            double runTokensPerSecond,
            double engineHitRate,
            double serverHitRate,
            double p50Seconds,
            double p99Seconds,
            int started,
            int completed,
            int failed,
            int shortAnswers,
            double cpuCores,
            double maxLoad) {

        boolean nothingLost() {
            return started > 0 && completed == started && failed == 0 && shortAnswers == 0;
        }

        static Result of(List<Run> runs, double timeScale) {
            long tokens = 0;
            double wall = 0;
            long windowTokens = 0;
            double window = 0;
            long ep = 0;
            long ec = 0;
            long sp = 0;
            long sh = 0;
            int started = 0;
            int completed = 0;
            int failed = 0;
            int shortAnswers = 0;
            double cpu = 0;
            double load = 0;
            List<Long> lat = new ArrayList<>();
            for (Run r : runs) {
                tokens += r.outputTokens();
                wall += r.wallSeconds();
                windowTokens += r.windowTokens();
                window += r.windowSeconds();
                ep += r.enginePromptTokens();
                ec += r.engineCachedTokens();
                sp += r.serverPromptTokens();
                sh += r.serverHitTokens();
                started += r.started();
                completed += r.completed();
                failed += r.failed();
                shortAnswers += r.shortAnswers();
                cpu += r.cpuSeconds();
                load = Math.max(load, Math.max(r.loadBefore(), r.loadAfter()));
                for (long l : r.latencyNanos()) {
                    lat.add(l);
                }
            }
            long[] sorted = lat.stream().mapToLong(Long::longValue).sorted().toArray();
            return new Result(
                    window > 0 ? windowTokens / (window / timeScale) : tokens / (wall / timeScale),
                    tokens / (wall / timeScale),
                    ep == 0 ? 0 : (double) ec / ep,
                    sp == 0 ? 0 : (double) sh / sp,
                    percentile(sorted, 0.50) / 1e9 / timeScale,
                    percentile(sorted, 0.99) / 1e9 / timeScale,
                    started,
                    completed,
                    failed,
                    shortAnswers,
                    wall == 0 ? 0 : cpu / wall,
                    load);
        }
    }

    /** The nearest-rank percentile of {@code sorted}, 0 when empty. */
    static long percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return 0;
        }
        int rank = (int) Math.ceil(p * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length, rank) - 1)];
    }

    @Override
    public SummaryLine run(Flags f, PrintStream log) throws Exception {
        List<RoutingStrategy> strategies = strategies(f);
        List<Workload> workloads = workloads(f);
        int rounds = f.integer("rounds", 1);
        double timeScale = f.decimal("time-scale", 1e-6);
        // Validate every flag before the first fleet starts.
        for (Workload w : workloads) {
            latency(f, w);
        }
        checkSizes(f);
        TinyLmWeights weights = TinyLmWeights.seeded(1, 0.02, DECAY);

        Map<Workload, Map<RoutingStrategy, List<Run>>> runs = new EnumMap<>(Workload.class);
        for (int wi = 0; wi < workloads.size(); wi++) {
            Workload w = workloads.get(wi);
            Map<RoutingStrategy, List<Run>> byStrategy = new LinkedHashMap<>();
            strategies.forEach(s -> byStrategy.put(s, new ArrayList<>()));
            runs.put(w, byStrategy);
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < strategies.size(); k++) {
                    RoutingStrategy s = strategies.get((k + wi + r) % strategies.size());
                    log.printf(
                            Locale.ROOT,
                            "routing: %s, %s (round %d of %d), load average %.2f%n",
                            w.key,
                            s.configName(),
                            r + 1,
                            rounds,
                            loadAverage());
                    Run run = runOnce(f, w, s, weights, log);
                    byStrategy.get(s).add(run);
                    Result one = Result.of(List.of(run), timeScale);
                    log.printf(
                            Locale.ROOT,
                            "routing: %s, %s: %.0f tokens/s (whole run %.0f), hit rate %.3f (servers %.3f), p50 %.1f s, "
                                    + "p99 %.1f s, "
                                    + "%d/%d completed, %.2f s wall, %.2f cores%n",
                            w.key,
                            s.configName(),
                            one.tokensPerSecond(),
                            one.runTokensPerSecond(),
                            one.engineHitRate(),
                            one.serverHitRate(),
                            one.p50Seconds(),
                            one.p99Seconds(),
                            one.completed(),
                            one.started(),
                            run.wallSeconds(),
                            one.cpuCores());
                }
            }
        }

        Map<Workload, Map<RoutingStrategy, Result>> results = new EnumMap<>(Workload.class);
        runs.forEach((w, byStrategy) -> {
            Map<RoutingStrategy, Result> m = new LinkedHashMap<>();
            byStrategy.forEach((s, rs) -> m.put(s, Result.of(rs, timeScale)));
            results.put(w, m);
        });
        printTable(results, log);
        return summary(f, strategies, results);
    }

    /** The summary line: per workload and strategy its figures, then the flags, the winner and the verdicts. */
    private SummaryLine summary(
            Flags f, List<RoutingStrategy> strategies, Map<Workload, Map<RoutingStrategy, Result>> results) {
        SummaryLine line = new SummaryLine(name());
        double maxCores = 0;
        double maxLoad = 0;
        for (var e : results.entrySet()) {
            Workload w = e.getKey();
            Result base = e.getValue().get(RoutingStrategy.LEAST_REQUESTS);
            for (var se : e.getValue().entrySet()) {
                String k = w.key + "_" + se.getKey().configName();
                Result r = se.getValue();
                line.put(k + "_tokens_per_s", r.tokensPerSecond())
                        .put(k + "_run_tokens_per_s", r.runTokensPerSecond())
                        .put(k + "_ratio", r.tokensPerSecond() / base.tokensPerSecond())
                        .put(k + "_hit_rate", r.engineHitRate())
                        .put(k + "_server_hit_rate", r.serverHitRate())
                        .put(k + "_p50_s", r.p50Seconds())
                        .put(k + "_p99_s", r.p99Seconds());
                if (w == Workload.FAILOVER) {
                    line.put(k + "_started", r.started())
                            .put(k + "_completed", r.completed())
                            .put(k + "_failed", r.failed())
                            .put(k + "_short_answers", r.shortAnswers());
                }
                maxCores = Math.max(maxCores, r.cpuCores());
                maxLoad = Math.max(maxLoad, r.maxLoad());
            }
        }
        line.put("max_cpu_cores", maxCores).put("max_load_average", maxLoad);

        // The winner: the highest geometric mean of its throughput ratios over rlvr and agent (all
        // strategies); the goals are judged for the best affine strategy.
        RoutingStrategy winner = best(strategies, results);
        RoutingStrategy affine =
                best(strategies.stream().filter(RoutingStrategy::isAffine).toList(), results);
        f.appendTo(line);
        line.put("winner", winner == null ? "-" : winner.configName())
                .put("judged", affine == null ? "-" : affine.configName())
                .put("target_rlvr_ratio", TARGET_RLVR)
                .put("target_agent_ratio", TARGET_AGENT)
                .put("target_hit_rate", TARGET_HIT_RATE);
        if (affine == null) {
            line.put("met", "no");
            return line;
        }
        boolean all = true;
        for (Workload w : List.of(Workload.RLVR, Workload.AGENT)) {
            Map<RoutingStrategy, Result> m = results.get(w);
            if (m == null) {
                continue;
            }
            Result a = m.get(affine);
            Result base = m.get(RoutingStrategy.LEAST_REQUESTS);
            double target = w == Workload.RLVR ? TARGET_RLVR : TARGET_AGENT;
            boolean ratio = a.tokensPerSecond() / base.tokensPerSecond() >= target;
            boolean hit = a.engineHitRate() >= TARGET_HIT_RATE;
            boolean p99 = a.p99Seconds() <= base.p99Seconds();
            line.put("met_" + w.key + "_ratio", yes(ratio))
                    .put("met_" + w.key + "_hit_rate", yes(hit))
                    .put("met_" + w.key + "_p99", yes(p99));
            all &= ratio && hit && p99;
        }
        Map<RoutingStrategy, Result> failover = results.get(Workload.FAILOVER);
        if (failover != null) {
            boolean lost = !failover.get(affine).nothingLost();
            line.put("met_failover_nothing_lost", yes(!lost));
            all &= !lost;
        }
        return line.put("met", yes(all));
    }

    private static String yes(boolean b) {
        return b ? "yes" : "no";
    }

    /** The strategy of {@code candidates} with the highest geometric mean ratio to least_requests over rlvr and agent. */
    private static RoutingStrategy best(
            List<RoutingStrategy> candidates, Map<Workload, Map<RoutingStrategy, Result>> results) {
        RoutingStrategy best = null;
        double bestScore = Double.NEGATIVE_INFINITY;
        for (RoutingStrategy s : candidates) {
            double logSum = 0;
            int n = 0;
            // Failover counts only when it was the only workload run.
            boolean failoverOnly = !results.containsKey(Workload.RLVR) && !results.containsKey(Workload.AGENT);
            for (Workload w : List.of(Workload.RLVR, Workload.AGENT, Workload.FAILOVER)) {
                Map<RoutingStrategy, Result> m = results.get(w);
                if (m == null || (w == Workload.FAILOVER && !failoverOnly)) {
                    continue;
                }
                logSum += Math.log(m.get(s).tokensPerSecond()
                        / m.get(RoutingStrategy.LEAST_REQUESTS).tokensPerSecond());
                n++;
            }
            double score = n == 0 ? 0 : logSum / n;
            if (score > bestScore) {
                best = s;
                bestScore = score;
            }
        }
        return best;
    }

    private static void printTable(Map<Workload, Map<RoutingStrategy, Result>> results, PrintStream log) {
        log.println(
                "routing: | workload | strategy | tokens/s | × least_requests | whole run tokens/s | × least_requests | hit rate (engine) | hit rate "
                        + "(servers) | p50 s | p99 s | p99 × least_requests | completed / started | cores |");
        results.forEach((w, m) -> {
            Result base = m.get(RoutingStrategy.LEAST_REQUESTS);
            m.forEach((s, r) -> log.printf(
                    Locale.ROOT,
                    "routing: | %s | %s | %.0f | %.2f | %.0f | %.2f | %.3f | %.3f | %.1f | %.1f | %.2f | %d / %d | %.2f |%n",
                    w.key,
                    s.configName(),
                    r.tokensPerSecond(),
                    r.tokensPerSecond() / base.tokensPerSecond(),
                    r.runTokensPerSecond(),
                    r.runTokensPerSecond() / base.runTokensPerSecond(),
                    r.engineHitRate(),
                    r.serverHitRate(),
                    r.p50Seconds(),
                    r.p99Seconds(),
                    r.p99Seconds() / base.p99Seconds(),
                    r.completed(),
                    r.started(),
                    r.cpuCores()));
        });
    }

    static List<RoutingStrategy> strategies(Flags f) {
        List<RoutingStrategy> out = new ArrayList<>();
        for (String name : f.string("strategies").split(",")) {
            RoutingStrategy s = null;
            for (RoutingStrategy c : RoutingStrategy.values()) {
                if (c.configName().equals(name.strip())) {
                    s = c;
                }
            }
            if (s == null || out.contains(s)) {
                throw new IllegalArgumentException("bench routing: --strategies lists each of "
                        + RoutingStrategy.ALLOWED + " at most once, got '" + f.string("strategies") + "'");
            }
            out.add(s);
        }
        if (!out.contains(RoutingStrategy.LEAST_REQUESTS)) {
            throw new IllegalArgumentException(
                    "bench routing: --strategies must include least_requests, the baseline of every ratio");
        }
        return out;
    }

    static List<Workload> workloads(Flags f) {
        List<Workload> out = new ArrayList<>();
        for (String name : f.string("workloads").split(",")) {
            Workload w = Workload.of(name.strip());
            if (w == null || out.contains(w)) {
                throw new IllegalArgumentException(
                        "bench routing: --workloads lists each of rlvr, agent, failover at most once, got '"
                                + f.string("workloads") + "'");
            }
            out.add(w);
        }
        return out;
    }

    private static void checkSizes(Flags f) {
        f.integer("servers", 1);
        f.integer("max-running", 1);
        f.integer("cache-tokens", 0);
        f.integer("group-size", 1);
        f.integer("prompt-tokens", 2);
        f.integer("answer-tokens", 1);
        f.integer("rlvr-groups", 1);
        f.integer("rlvr-concurrency", 1);
        f.integer("turns", 1);
        f.integer("agent-prompt-tokens", 2);
        f.integer("observation-tokens", 0);
        f.decimal("tool-ms", 0);
        f.integer("agent-episodes", 1);
        f.integer("agent-concurrency", 1);
        f.longValue("seed", Long.MIN_VALUE);
        double killAt = f.decimal("kill-at", 0);
        if (killAt >= 1) {
            throw new IllegalArgumentException("bench routing: --kill-at must be in [0, 1), got " + killAt);
        }
        if (f.integer("servers", 1) < 2 && workloads(f).contains(Workload.FAILOVER)) {
            throw new IllegalArgumentException("bench routing: failover needs --servers of at least 2");
        }
    }

    /** The workload's mean context (prompt + tokens so far) over the tokens it decodes. */
    static double meanDecodeContext(Flags f, Workload w) {
        int answer = f.integer("answer-tokens", 1);
        if (w == Workload.RLVR) {
            return f.integer("prompt-tokens", 2) + answer / 2.0;
        }
        int turns = f.integer("turns", 1);
        double perTurn = answer + f.integer("observation-tokens", 0);
        return f.integer("agent-prompt-tokens", 2) + perTurn * (turns - 1) / 2.0 + answer / 2.0;
    }

    /** The per-sequence decode cost of {@code w}, µs, unscaled. */
    static double decodePerSequenceMicros(Flags f, Workload w) {
        String v = f.string("decode-us-per-seq").strip();
        if (v.equals("auto")) {
            return f.decimal("kv-ns-per-token", 0) * meanDecodeContext(f, w) / 1000;
        }
        try {
            return f.decimal("decode-us-per-seq", 0);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "bench routing: --decode-us-per-seq must be auto or a number >= 0, got '" + v + "'", e);
        }
    }

    /** The servers' latency model for {@code w}: the modelled GPU's costs times --time-scale. */
    static LatencyModel latency(Flags f, Workload w) {
        double scale = f.decimal("time-scale", 1e-6);
        return new LatencyModel(
                nanos(f.decimal("prefill-us-per-token", 0) * scale),
                nanos(f.decimal("decode-base-us", 0) * scale),
                nanos(decodePerSequenceMicros(f, w) * scale));
    }

    private static Duration nanos(double micros) {
        return Duration.ofNanos(Math.round(micros * 1000));
    }

    /** {@code length} prompt-like tokens, the same for the same seed and key in every run. */
    static int[] tokens(int length, long seed, long key) {
        SplittableRandom r = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + key);
        int[] t = new int[length];
        for (int i = 0; i < length; i++) {
            t[i] = 32 + r.nextInt(90);
        }
        return t;
    }

    private static List<ModelServer> startFleet(Flags f, LatencyModel latency, TinyLmWeights weights)
            throws IOException {
        int n = f.integer("servers", 1);
        List<ModelServer> fleet = new ArrayList<>(n);
        try {
            for (int i = 0; i < n; i++) {
                fleet.add(ModelServer.start(ModelServerConfig.defaults()
                        .withWeights(weights)
                        .withLatency(latency)
                        .withMaxRunningRequests(f.integer("max-running", 1))
                        .withPrefixCacheTokens(f.integer("cache-tokens", 0))));
            }
        } catch (IOException | RuntimeException e) {
            fleet.forEach(ModelServer::close);
            throw e;
        }
        return fleet;
    }

    private Run runOnce(Flags f, Workload w, RoutingStrategy strategy, TinyLmWeights weights, PrintStream log)
            throws Exception {
        LatencyModel latency = latency(f, w);
        List<ModelServer> fleet = startFleet(f, latency, weights);
        try (RemoteInferenceEngine engine = new RemoteInferenceEngine(InferenceConfig.builder()
                .serverAddresses(fleet.stream()
                        .map(s -> new ServerAddress("127.0.0.1", s.port()))
                        .toList())
                .routingStrategy(strategy)
                .prefixViewTokens(Math.max(1, f.integer("cache-tokens", 0)))
                .build())) {
            engine.initialize();
            double loadBefore = loadAverage();
            long cpuBefore = processCpuNanos();
            long t0 = System.nanoTime();
            Counters c =
                    w == Workload.RLVR ? runGroups(f, engine, latency) : runEpisodes(f, w, engine, fleet, latency, log);
            double wall = (System.nanoTime() - t0) / 1e9;
            double cpu = (processCpuNanos() - cpuBefore) / 1e9;
            double loadAfter = loadAverage();
            long ep = 0;
            long ec = 0;
            for (ServerStats s : engine.serverStats()) {
                ep += s.promptTokens();
                ec += s.cachedTokens();
            }
            long sp = 0;
            long sh = 0;
            for (ModelServer s : fleet) {
                PrefixCacheStats p = s.prefixCacheStats();
                sp += p.promptTokens();
                sh += p.hitTokens();
            }
            if (c.firstFailure.get() != null) {
                log.println("routing: " + w.key + ", " + strategy.configName() + ": " + c.failed.get()
                        + " failed, the first: " + c.firstFailure.get());
            }
            return new Run(
                    c.tokens.get(),
                    wall,
                    c.windowTokens(),
                    c.windowSeconds(),
                    c.latencies(),
                    ep,
                    ec,
                    sp,
                    sh,
                    c.started.get(),
                    c.completed.get(),
                    c.failed.get(),
                    c.shortAnswers.get(),
                    cpu,
                    loadBefore,
                    loadAfter);
        } finally {
            fleet.forEach(ModelServer::close);
        }
    }

    /** What the slots of one run count. */
    private static final class Counters {
        final AtomicLong tokens = new AtomicLong();
        final AtomicInteger started = new AtomicInteger();
        final AtomicInteger completed = new AtomicInteger();
        final AtomicInteger failed = new AtomicInteger();
        final AtomicInteger shortAnswers = new AtomicInteger();
        final AtomicInteger turnsDone = new AtomicInteger();
        final AtomicReference<Throwable> firstFailure = new AtomicReference<>();
        private final List<Long> latencies = new ArrayList<>();
        private final int slots;
        private final AtomicInteger slotsStarted = new AtomicInteger();
        private volatile long windowStart;
        private final AtomicLong windowEnd = new AtomicLong();
        private final List<long[]> answers = new ArrayList<>();

        Counters(int slots) {
            this.slots = slots;
        }

        /** A slot starts its first group or episode; the last one to start opens the steady-state window. */
        void slotStarted() {
            if (slotsStarted.incrementAndGet() == slots) {
                windowStart = System.nanoTime();
            }
        }

        /** A slot found no more work: the first one closes the window. */
        void slotDone() {
            windowEnd.compareAndSet(0, System.nanoTime());
        }

        /** An answer of {@code tokens} tokens arrived now. */
        synchronized void answer(int tokens) {
            answers.add(new long[] {System.nanoTime(), tokens});
        }

        /** The steady-state window's length in seconds, 0 when there was none (a slot ran out before the last started). */
        double windowSeconds() {
            long start = windowStart;
            long end = windowEnd.get();
            return start == 0 || end <= start ? 0 : (end - start) / 1e9;
        }

        /** The output tokens of the answers that arrived within the window. */
        synchronized long windowTokens() {
            long start = windowStart;
            long end = windowEnd.get();
            long sum = 0;
            for (long[] a : answers) {
                if (a[0] > start && a[0] <= end) {
                    sum += a[1];
                }
            }
            return sum;
        }

        synchronized void latency(long nanos) {
            latencies.add(nanos);
        }

        synchronized long[] latencies() {
            return latencies.stream().mapToLong(Long::longValue).toArray();
        }

        void failure(Throwable t) {
            failed.incrementAndGet();
            firstFailure.compareAndSet(null, t);
        }
    }

    /**
     * The wall time between two slots' starts: one answer's modelled decode time at the workload's
     * batch per server, spread over the slots, so that the slots' fixed-length answers end at
     * different times.
     */
    private static long staggerNanos(Flags f, LatencyModel latency, int slots, int sequencesPerSlot) {
        double perServer = (double) slots * sequencesPerSlot / f.integer("servers", 1);
        double step = latency.decodeBase().toNanos()
                + perServer * latency.decodePerSequence().toNanos();
        return Math.round(f.integer("answer-tokens", 1) * step / slots);
    }

    private Counters runGroups(Flags f, RemoteInferenceEngine engine, LatencyModel latency) throws Exception {
        int groups = f.integer("rlvr-groups", 1);
        int slots = Math.min(groups, f.integer("rlvr-concurrency", 1));
        int size = f.integer("group-size", 1);
        int promptTokens = f.integer("prompt-tokens", 2);
        int answer = f.integer("answer-tokens", 1);
        long seed = f.longValue("seed", Long.MIN_VALUE);
        GenerationConfig g = answerConfig(answer);
        long stagger = staggerNanos(f, latency, slots, size);
        Counters c = new Counters(slots);
        AtomicInteger next = new AtomicInteger();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> slotRuns = new ArrayList<>();
            for (int slot = 0; slot < slots; slot++) {
                long start = System.nanoTime() + slot * stagger;
                slotRuns.add(threads.submit(() -> {
                    parkUntil(start);
                    c.slotStarted();
                    int group;
                    while ((group = next.getAndIncrement()) < groups) {
                        c.started.incrementAndGet();
                        int[] prompt = tokens(promptTokens, seed, group);
                        long t0 = System.nanoTime();
                        List<Future<ModelResponse>> samples = new ArrayList<>(size);
                        for (int i = 0; i < size; i++) {
                            WorkflowContext ctx = WorkflowContext.builder()
                                    .taskId(group)
                                    .sampleIdx(i)
                                    .groupSize(size)
                                    .build();
                            samples.add(threads.submit(() -> WorkflowContext.callWith(ctx, () -> {
                                ModelResponse r = engine.generate(ModelRequest.of(prompt, g));
                                c.answer(r.outputLength());
                                return r;
                            })));
                        }
                        try {
                            long tokens = 0;
                            for (Future<ModelResponse> s : samples) {
                                ModelResponse r = s.get();
                                tokens += r.outputLength();
                                if (r.outputLength() != answer) {
                                    c.shortAnswers.incrementAndGet();
                                }
                            }
                            c.latency(System.nanoTime() - t0);
                            c.tokens.addAndGet(tokens);
                            c.completed.incrementAndGet();
                        } catch (Exception e) {
                            c.failure(e);
                        }
                    }
                    c.slotDone();
                    return null;
                }));
            }
            for (Future<?> s : slotRuns) {
                s.get();
            }
        }
        return c;
    }

    private Counters runEpisodes(
            Flags f,
            Workload w,
            RemoteInferenceEngine engine,
            List<ModelServer> fleet,
            LatencyModel latency,
            PrintStream log)
            throws Exception {
        int episodes = f.integer("agent-episodes", 1);
        int slots = Math.min(episodes, f.integer("agent-concurrency", 1));
        int turns = f.integer("turns", 1);
        int promptTokens = f.integer("agent-prompt-tokens", 2);
        int observation = f.integer("observation-tokens", 0);
        int answer = f.integer("answer-tokens", 1);
        long seed = f.longValue("seed", Long.MIN_VALUE);
        double toolWallNanos = f.decimal("tool-ms", 0) * 1e6 * f.decimal("time-scale", 1e-6);
        int killAfterTurns = w == Workload.FAILOVER
                ? (int) Math.ceil(f.decimal("kill-at", 0) * episodes * turns)
                : Integer.MAX_VALUE;
        AtomicBoolean killed = new AtomicBoolean();
        GenerationConfig g = answerConfig(answer);
        long stagger = staggerNanos(f, latency, slots, 1);
        Counters c = new Counters(slots);
        AtomicInteger next = new AtomicInteger();
        Runnable kill = () -> {
            if (killed.compareAndSet(false, true)) {
                ModelServer victim = fleet.get(0);
                log.printf(
                        Locale.ROOT,
                        "routing: %s: crashing server 0 (%s) after %d turns%n",
                        w.key,
                        victim.baseUrl(),
                        c.turnsDone.get());
                victim.crash();
            }
        };
        if (killAfterTurns == 0) {
            kill.run();
        }
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> slotRuns = new ArrayList<>();
            for (int slot = 0; slot < slots; slot++) {
                long start = System.nanoTime() + slot * stagger;
                slotRuns.add(threads.submit(() -> {
                    parkUntil(start);
                    c.slotStarted();
                    int episode;
                    while ((episode = next.getAndIncrement()) < episodes) {
                        c.started.incrementAndGet();
                        long key = episode;
                        WorkflowContext ctx = WorkflowContext.builder()
                                .taskId(episode)
                                .sampleIdx(0)
                                .groupSize(1)
                                .build();
                        long t0 = System.nanoTime();
                        try {
                            long tokens = WorkflowContext.callWith(ctx, () -> {
                                int[] history = tokens(promptTokens, seed, key);
                                long out = 0;
                                for (int turn = 0; turn < turns; turn++) {
                                    ModelResponse r = engine.generate(ModelRequest.of(history, g));
                                    out += r.outputLength();
                                    c.answer(r.outputLength());
                                    if (r.outputLength() != answer) {
                                        c.shortAnswers.incrementAndGet();
                                    }
                                    if (c.turnsDone.incrementAndGet() >= killAfterTurns && !killed.get()) {
                                        Thread.ofVirtual().start(kill);
                                    }
                                    if (turn + 1 < turns) {
                                        // The tool runs: a draw that is the same in every run.
                                        double u = new SplittableRandom(seed * 31 + (key << 16) + turn).nextDouble();
                                        parkUntil(System.nanoTime() + Math.round(2 * u * toolWallNanos));
                                        int[] obs = tokens(observation, seed, (key << 16) + 1000 + turn);
                                        int[] grown =
                                                Arrays.copyOf(history, history.length + r.outputLength() + obs.length);
                                        System.arraycopy(r.outputTokens(), 0, grown, history.length, r.outputLength());
                                        System.arraycopy(obs, 0, grown, history.length + r.outputLength(), obs.length);
                                        history = grown;
                                    }
                                }
                                return out;
                            });
                            c.latency(System.nanoTime() - t0);
                            c.tokens.addAndGet(tokens);
                            c.completed.incrementAndGet();
                        } catch (Exception e) {
                            c.failure(e);
                        }
                    }
                    c.slotDone();
                    return null;
                }));
            }
            for (Future<?> s : slotRuns) {
                s.get();
            }
        }
        return c;
    }

    private static GenerationConfig answerConfig(int answer) {
        return GenerationConfig.builder()
                .maxNewTokens(answer)
                .ignoreEos(true)
                .temperature(1.0)
                .build();
    }

    private static void parkUntil(long deadline) {
        long left;
        while ((left = deadline - System.nanoTime()) > 0) {
            LockSupport.parkNanos(left);
        }
    }

    static double loadAverage() {
        return ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
    }

    private static long processCpuNanos() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getProcessCpuTime();
        }
        return 0;
    }
}
