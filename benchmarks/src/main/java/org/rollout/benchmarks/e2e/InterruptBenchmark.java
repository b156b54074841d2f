package org.rollout.benchmarks.e2e;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.config.InferenceConfig;
import org.rollout.config.InterruptMode;
import org.rollout.inference.RemoteInferenceEngine;

/**
 * End to end 3: resuming interrupted generations against discarding and regenerating them.
 *
 * <pre>
 *   fleet:    --servers model servers, latency model, long-tailed simulated output lengths
 *   load:     --concurrency generations always in flight (virtual threads calling engine.generate,
 *             each a new rid), for --duration-s seconds
 *   updates:  every --update-interval-s seconds, engine.updateWeights: every server pauses (aborting
 *             what it is generating), loads the weight file as the next version, continues
 *   resume:   interrupt_mode = resume  — an aborted generation continues with its tokens
 *   discard:  interrupt_mode = discard — its tokens are dropped and it starts again from the prompt
 * </pre>
 *
 * <p>Each mode starts a fresh fleet of the same configuration. Kept tokens per second = output
 * tokens of the generations that completed within the window ÷ the window; the servers' generated
 * tokens over the window are reported beside them, so the waste is visible. The engine is driven
 * directly (no actor pipeline): the question is what happens to a generation across an update, and
 * admission control would only add noise. Ratio = resume / discard; target: gain ≥ +20 %.
 */
public final class InterruptBenchmark implements EndToEndBenchmark {
    static final double TARGET_GAIN = 0.20;

    @Override
    public String name() {
        return "interrupt";
    }

    @Override
    public String description() {
        return "generated tokens kept per second with weight updates every K s: resuming interrupted generations "
                + "vs discarding and regenerating them";
    }

    @Override
    public List<Flag> flags() {
        List<Flag> flags = new ArrayList<>(SimulatedFleet.flags(4, "lognormal:median=128,sigma=1", 2048));
        flags.addAll(List.of(
                new Flag("concurrency", "128", "generations in flight at all times"),
                new Flag("update-interval-s", "5", "seconds between weight updates"),
                new Flag("duration-s", "30", "measured seconds per mode")));
        return flags;
    }

    /** What one mode measured. */
    record Mode(
            long keptTokens, long completions, long serverTokens, long discardedTokens, int updates, double seconds) {
        double keptPerSecond() {
            return keptTokens / seconds;
        }
    }

    @Override
    public SummaryLine run(Flags f, PrintStream log) throws Exception {
        log.printf("interrupt: resume run, %s s%n", f.string("duration-s"));
        Mode resume = runMode(f, InterruptMode.RESUME, log);
        log.printf("interrupt: discard run, %s s%n", f.string("duration-s"));
        Mode discard = runMode(f, InterruptMode.DISCARD, log);
        double ratio = resume.keptPerSecond() / discard.keptPerSecond();
        SummaryLine line = new SummaryLine(name())
                .put("ratio", ratio)
                .put("gain", ratio - 1)
                .put("resume_kept_tokens_per_s", resume.keptPerSecond())
                .put("discard_kept_tokens_per_s", discard.keptPerSecond())
                .put("resume_generated_tokens_per_s", resume.serverTokens() / resume.seconds())
                .put("discard_generated_tokens_per_s", discard.serverTokens() / discard.seconds())
                .put("discard_thrown_away_tokens", discard.discardedTokens())
                .put("resume_completions", resume.completions())
                .put("discard_completions", discard.completions())
                .put("resume_mean_kept_length", resume.keptTokens() / (double) Math.max(1, resume.completions()))
                .put("discard_mean_kept_length", discard.keptTokens() / (double) Math.max(1, discard.completions()))
                .put("updates", Math.min(resume.updates(), discard.updates()));
        f.appendTo(line);
        return line.put("target_gain", TARGET_GAIN).put("met", ratio - 1 >= TARGET_GAIN ? "yes" : "no");
    }

    private Mode runMode(Flags f, InterruptMode mode, PrintStream log) throws Exception {
        int concurrency = f.integer("concurrency", 1);
        long intervalNanos = Math.round(f.decimal("update-interval-s", 0.001) * 1e9);
        long durationNanos = Math.round(f.decimal("duration-s", 0.001) * 1e9);
        GenerationConfig g = GenerationConfig.builder()
                .maxNewTokens(f.integer("max-new-tokens", 1))
                .temperature(1.0)
                .build();
        SingleGenerationWorkflow prompts = new SingleGenerationWorkflow(g, f.integer("prompt-tokens", 1));
        try (SimulatedFleet fleet = SimulatedFleet.start(f);
                RemoteInferenceEngine engine = new RemoteInferenceEngine(InferenceConfig.builder()
                        .serverAddresses(fleet.addresses())
                        .interruptMode(mode)
                        .build())) {
            engine.initialize();
            AtomicBoolean measuring = new AtomicBoolean(true);
            LongAdder kept = new LongAdder();
            LongAdder completions = new LongAdder();
            AtomicLong nextRid = new AtomicLong();
            AtomicReference<RuntimeException> failure = new AtomicReference<>();
            List<Thread> workers = new ArrayList<>(concurrency);
            SimulatedFleet.Snapshot before = fleet.snapshot();
            long start = System.nanoTime();
            long deadline = start + durationNanos;
            for (int w = 0; w < concurrency; w++) {
                workers.add(Thread.ofVirtual().name("bench-generate-" + w).start(() -> {
                    try {
                        while (measuring.get()) {
                            long i = nextRid.getAndIncrement();
                            ModelResponse r = engine.generate(ModelRequest.of("g" + i, prompts.prompt(i), g));
                            if (measuring.get() && System.nanoTime() <= deadline) {
                                kept.add(r.outputLength());
                                completions.increment();
                            }
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } catch (RuntimeException e) {
                        // After the window the engine closes under the generations still running;
                        // a failure inside the window is the benchmark's failure.
                        if (measuring.get()) {
                            failure.compareAndSet(null, e);
                        }
                    }
                }));
            }
            int updates = 0;
            long nextUpdate = start + intervalNanos;
            long now;
            while ((now = System.nanoTime()) < deadline && failure.get() == null) {
                if (now >= nextUpdate) {
                    updates++;
                    engine.updateWeights(fleet.weights(), updates);
                    nextUpdate += intervalNanos;
                    continue;
                }
                LockSupport.parkNanos(Math.min(deadline, nextUpdate) - now);
            }
            measuring.set(false);
            double seconds = (System.nanoTime() - start) / 1e9;
            SimulatedFleet.Snapshot after = fleet.snapshot();
            long discarded = engine.discardedTokens();
            log.printf(
                    "interrupt: %s: %d generations completed, %d tokens kept, %d updates%n",
                    mode, completions.sum(), kept.sum(), updates);
            engine.close(); // ends the generations still in flight (closing twice is allowed)
            for (Thread t : workers) {
                t.interrupt();
                t.join(30_000);
            }
            if (failure.get() != null) {
                throw new IllegalStateException(
                        "interrupt (" + mode + "): a generation failed within the window: " + failure.get(),
                        failure.get());
            }
            return new Mode(
                    kept.sum(),
                    completions.sum(),
                    after.tokensGenerated() - before.tokensGenerated(),
                    discarded,
                    updates,
                    seconds);
        }
    }
}
