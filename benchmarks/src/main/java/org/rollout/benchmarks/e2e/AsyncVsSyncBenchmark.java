package org.rollout.benchmarks.e2e;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import org.rollout.api.GenerationConfig;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.cluster.LocalRolloutClient;
import org.rollout.cluster.PromptSource;
import org.rollout.cluster.RemoteEngines;
import org.rollout.config.InferenceConfig;
import org.rollout.inference.RemoteInferenceEngine;

/**
 * End to end 2: asynchronous against synchronous RL on one simulated fleet.
 *
 * <pre>
 *   fleet:    --servers model servers, latency model (a GPU-like decode step), long-tailed simulated
 *             output lengths (--lengths, capped by --max-new-tokens)
 *   engine:   LocalRollout + RemoteInferenceEngine, --concurrency groups in flight, batches of --batch
 *   trainer:  N = --steps times: pull a batch, ack, train (--step-cost-ms, parked), publish version k
 *             (every server pauses, loads the weight file, continues)
 *   sync:     max_head_offpolicyness = 0   — generation for step k+1 starts only after step k's update
 *   async:    max_head_offpolicyness = --eta — generation runs ahead while the trainer trains
 * </pre>
 *
 * <p>Each mode starts a fresh fleet of the same configuration (same seeds, so the same prompts draw
 * the same lengths) and measures the wall time from the moment the engine is up to the N-th
 * publish, and the servers' utilisation (mean {@code busy_fraction} over that time). Staleness
 * ({@code version at hand-out − head version}) is printed for context: under AReaL's admission
 * policy a group that runs long can exceed η (only admission is bounded, semantics §6.8). Ratio = sync time / async time.
 * Targets: ratio ≥ 3 and async utilisation ≥ 95 %.
 */
public final class AsyncVsSyncBenchmark implements EndToEndBenchmark {
    static final double TARGET_RATIO = 3.0;
    static final double TARGET_UTILISATION = 0.95;

    @Override
    public String name() {
        return "async";
    }

    @Override
    public String description() {
        return "time to N trainer steps and server utilisation with max_head_offpolicyness 0 (sync) vs --eta (async) "
                + "on the same simulated fleet";
    }

    @Override
    public List<Flag> flags() {
        List<Flag> flags = new ArrayList<>(SimulatedFleet.flags(4, "lognormal:median=96,sigma=1", 1024));
        flags.addAll(List.of(
                new Flag("steps", "8", "trainer steps (weight versions) to reach"),
                new Flag("group-size", "8", "samples per group (gconfig.n_samples)"),
                new Flag("batch", "4", "groups per trainer step (consumer_batch_size)"),
                new Flag("concurrency", "16", "groups in flight at most (max_concurrent_rollouts), both modes"),
                new Flag("eta", "4", "max_head_offpolicyness of the asynchronous run"),
                new Flag("step-cost-ms", "1000", "the trainer's fixed time per step")));
        return flags;
    }

    /** What one mode measured. */
    record Mode(
            double seconds,
            double utilisation,
            long tokensGenerated,
            double meanStaleness,
            int maxStaleness,
            long groupsTrained) {}

    @Override
    public SummaryLine run(Flags f, PrintStream log) throws Exception {
        int steps = f.integer("steps", 1);
        long eta = f.longValue("eta", 0);
        log.printf("async: synchronous run (eta 0), %d steps%n", steps);
        Mode sync = runMode(f, 0, log);
        log.printf(
                "async: sync took %.1f s, utilisation %.3f; asynchronous run (eta %d)%n",
                sync.seconds(), sync.utilisation(), eta);
        Mode async = runMode(f, eta, log);
        log.printf("async: async took %.1f s, utilisation %.3f%n", async.seconds(), async.utilisation());
        double ratio = sync.seconds() / async.seconds();
        SummaryLine line = new SummaryLine(name())
                .put("ratio", ratio)
                .put("sync_s", sync.seconds())
                .put("async_s", async.seconds())
                .put("sync_utilisation", sync.utilisation())
                .put("async_utilisation", async.utilisation())
                .put("sync_tokens_per_s", sync.tokensGenerated() / sync.seconds())
                .put("async_tokens_per_s", async.tokensGenerated() / async.seconds())
                .put("async_mean_staleness", async.meanStaleness())
                .put("async_max_staleness", async.maxStaleness());
        f.appendTo(line);
        return line.put("target_ratio", TARGET_RATIO)
                .put("target_utilisation", TARGET_UTILISATION)
                .put("met", ratio >= TARGET_RATIO && async.utilisation() >= TARGET_UTILISATION ? "yes" : "no");
    }

    private Mode runMode(Flags f, long eta, PrintStream log) throws Exception {
        int steps = f.integer("steps", 1);
        int g = f.integer("group-size", 1);
        int batch = f.integer("batch", 1);
        int concurrency = f.integer("concurrency", 1);
        long stepCostNanos = Math.round(f.decimal("step-cost-ms", 0) * 1e6);
        GenerationConfig gconfig = GenerationConfig.builder()
                .nSamples(g)
                .maxNewTokens(f.integer("max-new-tokens", 1))
                .temperature(1.0)
                .build();
        SingleGenerationWorkflow workflow = new SingleGenerationWorkflow(gconfig, f.integer("prompt-tokens", 1));
        try (SimulatedFleet fleet = SimulatedFleet.start(f);
                RemoteInferenceEngine engine = new RemoteInferenceEngine(InferenceConfig.builder()
                        .serverAddresses(fleet.addresses())
                        .build())) {
            engine.initialize();
            PromptSource source = index -> Optional.of(SingleGenerationWorkflow.item(index));
            BenchmarkPipeline spec = new BenchmarkPipeline(
                    RemoteEngines.controllable(engine),
                    workflow,
                    gconfig,
                    batch,
                    concurrency,
                    eta,
                    Math.max(64, 2 * concurrency),
                    source,
                    RemoteEngines.publisher(engine));
            long stalenessSum = 0;
            int stalenessMax = 0;
            long groupsTrained = 0;
            try (BenchmarkPipeline.Started started = spec.start()) {
                // The clock starts once the engine is up (admission has just begun): the actor
                // system's start-up is neither the servers' idle time nor either mode's work.
                SimulatedFleet.Snapshot before = fleet.snapshot();
                long start = System.nanoTime();
                LocalRolloutClient client = started.rollout().client();
                for (int step = 1; step <= steps; step++) {
                    TrainingBatch b = client.nextBatch();
                    client.acknowledge(b);
                    for (TrainingGroup group : b.groups()) {
                        int staleness = b.versionAtHandout() - group.headVersion();
                        stalenessSum += staleness;
                        stalenessMax = Math.max(stalenessMax, staleness);
                        groupsTrained++;
                    }
                    train(stepCostNanos);
                    client.publishWeights(step, fleet.weights());
                    log.printf(
                            "async: eta %d: step %d/%d at %.1f s%n",
                            eta, step, steps, (System.nanoTime() - start) / 1e9);
                }
                double seconds = (System.nanoTime() - start) / 1e9;
                SimulatedFleet.Snapshot after = fleet.snapshot();
                return new Mode(
                        seconds,
                        after.utilisationSince(before),
                        after.tokensGenerated() - before.tokensGenerated(),
                        groupsTrained == 0 ? 0 : stalenessSum / (double) groupsTrained,
                        stalenessMax,
                        groupsTrained);
            }
        }
    }

    /** The trainer's step: a fixed time, parked (no CPU taken from the servers on a two-core machine). */
    private static void train(long nanos) {
        long deadline = System.nanoTime() + nanos;
        long left;
        while ((left = deadline - System.nanoTime()) > 0) {
            LockSupport.parkNanos(left);
        }
    }
}
