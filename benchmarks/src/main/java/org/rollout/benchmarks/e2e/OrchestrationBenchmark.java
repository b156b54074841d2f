package org.rollout.benchmarks.e2e;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.HdrHistogram.Histogram;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.api.WorkflowContext;
import org.rollout.cluster.LocalRolloutClient;
import org.rollout.cluster.PromptSource;
import org.rollout.core.GroupMerger;
import org.rollout.core.GroupOptions;
import org.rollout.core.GroupOutcome;
import org.rollout.testengine.ScriptedEngine;

/**
 * End to end 1: what the actor pipeline costs per group when generation costs nothing.
 *
 * <pre>
 *   plain loop:  for each prompt: G × workflow.runEpisode(instant engine) on this thread → GroupMerger.merge
 *   pipeline:    PromptSource → coordinator → runner → G slot virtual threads (the last one merges:
 *                GroupMerger) → runner → collector → batch → trainer pull + ack   (LocalRollout)
 * </pre>
 *
 * <p>Both run the same {@link SingleGenerationWorkflow} against the same engine, which answers at once
 * ({@link ScriptedEngine#generating}).
 * Throughput: groups per second of each over {@code --groups} groups after {@code --warmup-groups}
 * (the pipeline with {@code --concurrency} groups in flight and batches of {@code --batch}), in
 * {@code --rounds} alternating rounds (plain, pipeline, plain, …) so that both meet the same load on
 * a shared machine; ratio = pipeline / plain over the rounds' sums. Added latency: with one group in flight and batches of one, the time from the
 * coordinator taking a prompt from the source to the trainer holding its group, minus the plain
 * loop's mean time per group, over {@code --latency-groups} groups (HdrHistogram, p50/p99). In that
 * run {@code queue_size} is 1, so the coordinator admits the next group only once the trainer has
 * taken the last one: a pipeline faster than the trainer's pull-and-ack loop would otherwise buffer
 * groups in the collector and the figure would be their queueing, not the path of one group. The
 * throughput run's own admission-to-trainer latency is printed too: with many groups in flight it
 * is mostly queueing (Little's law), not overhead.
 *
 * <p>The default sizes (50 000 warm-up groups through each side, rounds of 50 000) are there so
 * that both sides run compiled code: with 2000 warm-up groups and rounds of 2000 the pipeline ran
 * at 4–14k groups/s, partly interpreted, against 38–42k once warm. Tests pass small sizes.
 *
 * <p>η defaults to a bound that never binds, so no weight update is needed (the plain loop has
 * none); targets: ratio ≥ 0.5, added p99 ≤ 2 ms.
 */
public final class OrchestrationBenchmark implements EndToEndBenchmark {
    static final double TARGET_RATIO = 0.5;
    static final double TARGET_P99_MS = 2.0;

    @Override
    public String name() {
        return "orchestration";
    }

    @Override
    public String description() {
        return "groups/s through the actor pipeline vs a plain loop over the same workflow and GroupMerger "
                + "(instant engine), and the latency the pipeline adds per group";
    }

    @Override
    public List<Flag> flags() {
        return List.of(
                new Flag("groups", "150000", "groups measured in each throughput run (split over the rounds)"),
                new Flag(
                        "warmup-groups",
                        "50000",
                        "groups run before measuring (JIT, pools); at a few thousand both sides run partly interpreted"),
                new Flag("group-size", "8", "samples per group (gconfig.n_samples)"),
                new Flag("tokens", "16", "output tokens per generation (the instant engine's answer)"),
                new Flag("prompt-tokens", "16", "prompt tokens per generation"),
                new Flag("concurrency", "8", "groups in flight in the throughput run (max_concurrent_rollouts)"),
                new Flag("batch", "4", "groups per trainer batch in the throughput run (consumer_batch_size)"),
                new Flag("eta", "1000000", "max_head_offpolicyness; the default never binds"),
                new Flag("latency-groups", "500", "groups measured one at a time for the added latency"),
                new Flag(
                        "rounds",
                        "3",
                        "throughput rounds, each the plain loop then the pipeline over groups/rounds groups"));
    }

    @Override
    public SummaryLine run(Flags f, PrintStream log) throws Exception {
        int groups = f.integer("groups", 1);
        int warmup = f.integer("warmup-groups", 0);
        int g = f.integer("group-size", 1);
        int tokens = f.integer("tokens", 1);
        int promptTokens = f.integer("prompt-tokens", 1);
        int concurrency = f.integer("concurrency", 1);
        int batch = f.integer("batch", 1);
        long eta = f.longValue("eta", 0);
        int latencyGroups = f.integer("latency-groups", 1);

        GenerationConfig gconfig = GenerationConfig.builder()
                .nSamples(g)
                .maxNewTokens(Math.max(tokens, 1))
                .build();
        SingleGenerationWorkflow workflow = new SingleGenerationWorkflow(gconfig, promptTokens);
        ScriptedEngine engine = ScriptedEngine.generating(tokens);

        int rounds = f.integer("rounds", 1);
        int perRound = Math.max(1, groups / rounds);
        // The plain loop and the pipeline alternate round by round, so that both see the same load
        // on a shared machine; the ratio is over the sums, the rounds' own ratios are printed too.
        // Warm-up: the plain loop, the pipeline, the plain loop again (its C2 code lands while the
        // pipeline runs; without the second pass the first round times a half-compiled loop).
        log.printf("orchestration: warm-up, %d groups of %d in each%n", warmup, g);
        plainLoop(workflow, engine, gconfig, 0, warmup, null);
        pipeline(
                workflow,
                engine,
                gconfig,
                batch,
                concurrency,
                Math.max(64, 4 * concurrency),
                eta,
                0,
                warmup,
                histogram(),
                0);
        plainLoop(workflow, engine, gconfig, 0, warmup, null);
        Histogram plainLatency = histogram();
        Histogram queuedLatency = histogram();
        double plainSeconds = 0;
        double pipelineSeconds = 0;
        double minRoundRatio = Double.MAX_VALUE;
        double maxRoundRatio = 0;
        for (int r = 0; r < rounds; r++) {
            long t0 = System.nanoTime();
            plainLoop(workflow, engine, gconfig, warmup + (long) r * perRound, perRound, plainLatency);
            double plain = (System.nanoTime() - t0) / 1e9;
            double piped = pipeline(
                    workflow,
                    engine,
                    gconfig,
                    batch,
                    concurrency,
                    Math.max(64, 4 * concurrency),
                    eta,
                    Math.min(warmup, 100),
                    perRound,
                    queuedLatency,
                    0);
            plainSeconds += plain;
            pipelineSeconds += piped;
            minRoundRatio = Math.min(minRoundRatio, plain / piped);
            maxRoundRatio = Math.max(maxRoundRatio, plain / piped);
            log.printf(
                    Locale.ROOT,
                    "orchestration: round %d of %d: plain %.0f groups/s, pipeline %.0f groups/s (%d in flight, batches of %d): %.3f%n",
                    r + 1,
                    rounds,
                    perRound / plain,
                    perRound / piped,
                    concurrency,
                    batch,
                    plain / piped);
        }
        double plainRate = perRound * rounds / plainSeconds;
        double plainMeanNanos = plainSeconds * 1e9 / (perRound * rounds);
        double pipelineRate = perRound * rounds / pipelineSeconds;

        int latencyWarmup = Math.min(warmup, 100);
        log.printf("orchestration: pipeline one group at a time, %d + %d groups%n", latencyWarmup, latencyGroups);
        Histogram added = histogram();
        pipeline(
                workflow,
                engine,
                gconfig,
                1,
                1,
                1,
                eta,
                latencyWarmup,
                latencyGroups,
                added,
                Math.round(plainMeanNanos));

        double ratio = pipelineRate / plainRate;
        double p50 = added.getValueAtPercentile(50) / 1e6;
        double p99 = added.getValueAtPercentile(99) / 1e6;
        SummaryLine line = new SummaryLine(name())
                .put("ratio", ratio)
                .put("pipeline_groups_per_s", pipelineRate)
                .put("plain_groups_per_s", plainRate)
                .put("added_p50_ms", p50)
                .put("added_p99_ms", p99)
                .put("added_max_ms", added.getMaxValue() / 1e6)
                .put("plain_group_p50_ms", plainLatency.getValueAtPercentile(50) / 1e6)
                .put("plain_group_p99_ms", plainLatency.getValueAtPercentile(99) / 1e6)
                .put("inflight_latency_p50_ms", queuedLatency.getValueAtPercentile(50) / 1e6)
                .put("inflight_latency_p99_ms", queuedLatency.getValueAtPercentile(99) / 1e6)
                .put("round_ratio_min", minRoundRatio)
                .put("round_ratio_max", maxRoundRatio);
        f.appendTo(line);
        return line.put("target_ratio", TARGET_RATIO)
                .put("target_p99_ms", TARGET_P99_MS)
                .put("met", ratio >= TARGET_RATIO && p99 <= TARGET_P99_MS ? "yes" : "no");
    }

    private static Histogram histogram() {
        return new Histogram(3_600_000_000_000L, 3);
    }

    /** Runs groups {@code first .. first + count − 1} on this thread; records each group's time when asked. */
    private static void plainLoop(
            SingleGenerationWorkflow workflow,
            ScriptedEngine engine,
            GenerationConfig gconfig,
            long first,
            int count,
            Histogram latency)
            throws Exception {
        int g = gconfig.nSamples();
        GroupOptions opts = GroupOptions.from(gconfig, 1);
        for (long task = first; task < first + count; task++) {
            long start = System.nanoTime();
            Map<String, Object> item = SingleGenerationWorkflow.item(task);
            List<EpisodeResult> slots = new ArrayList<>(g);
            for (int slot = 0; slot < g; slot++) {
                WorkflowContext ctx = WorkflowContext.builder()
                        .taskId(task)
                        .sampleIdx(slot)
                        .groupSize(g)
                        .build();
                slots.add(WorkflowContext.callWith(ctx, () -> workflow.runEpisode(engine, item)));
            }
            GroupOutcome outcome = GroupMerger.merge(task, slots, opts);
            if (!(outcome instanceof GroupOutcome.Merged)) {
                throw new IllegalStateException("plain loop: task " + task + " was not merged: " + outcome);
            }
            if (latency != null) {
                latency.recordValue(System.nanoTime() - start);
            }
        }
    }

    /**
     * Runs the pipeline (at most {@code queueSize} groups running or buffered) until the trainer has
     * taken {@code warmup + measured} groups and returns the seconds the measured ones took; records each measured group's admission-to-trainer time minus
     * {@code subtractNanos} (clamped at 0).
     */
    private static double pipeline(
            SingleGenerationWorkflow workflow,
            ScriptedEngine engine,
            GenerationConfig gconfig,
            int batch,
            int concurrency,
            int queueSize,
            long eta,
            int warmup,
            int measured,
            Histogram latency,
            long subtractNanos)
            throws Exception {
        Map<Long, Long> admittedAt = new ConcurrentHashMap<>();
        Map<Long, Long> indexOfTask = new ConcurrentHashMap<>();
        PromptSource source = index -> {
            admittedAt.put(index, System.nanoTime());
            return Optional.of(SingleGenerationWorkflow.item(index));
        };
        RolloutWorkflow recording = (e, data) -> {
            WorkflowContext ctx = WorkflowContext.current();
            if (ctx.sampleIdx().orElse(0) == 0) {
                indexOfTask.put(
                        ctx.taskId().orElseThrow(), ((Number) data.get(SingleGenerationWorkflow.INDEX)).longValue());
            }
            return workflow.runEpisode(e, data);
        };
        BenchmarkPipeline spec = new BenchmarkPipeline(
                engine, recording, gconfig, batch, concurrency, eta, queueSize, source, BenchmarkPipeline.noServers());
        try (BenchmarkPipeline.Started started = spec.start()) {
            LocalRolloutClient client = started.rollout().client();
            int taken = 0;
            // The clock starts when the last warm-up group reaches the trainer (or now, without warm-up).
            long start = System.nanoTime();
            long end = start;
            while (taken < warmup + measured) {
                TrainingBatch b = client.nextBatch();
                long now = System.nanoTime();
                client.acknowledge(b);
                for (TrainingGroup group : b.groups()) {
                    if (taken >= warmup && taken < warmup + measured) {
                        Long index = indexOfTask.get(group.taskId());
                        Long admitted = index == null ? null : admittedAt.get(index);
                        if (admitted == null) {
                            throw new IllegalStateException(
                                    "task " + group.taskId() + " reached the trainer without an admission time");
                        }
                        latency.recordValue(Math.max(0, now - admitted - subtractNanos));
                        end = now;
                    }
                    taken++;
                    if (taken == warmup) {
                        start = now;
                    }
                }
            }
            return (end - start) / 1e9;
        }
    }
}
