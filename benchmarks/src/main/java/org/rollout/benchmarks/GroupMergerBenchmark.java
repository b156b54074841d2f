package org.rollout.benchmarks;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.infra.Blackhole;
import org.rollout.api.EpisodeResult;
import org.rollout.api.TensorDict;
import org.rollout.core.GroupMerger;
import org.rollout.core.GroupOptions;
import org.rollout.core.GroupOutcome;
import org.rollout.core.TensorDicts;

/**
 * {@link GroupMerger#merge} of a 16 × 8k group of tensor slots ({@link GroupFixture}) against the
 * {@link TensorDicts#concatPadded} it does inside: the ratio is the price of the decision procedure
 * of semantics §5.3 — validating every slot (shapes, finite rewards), the group metrics of semantics §5.9, the slot
 * boundaries — on top of the concatenation. Without reward normalisation (AReaL's default).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class GroupMergerBenchmark {
    private List<EpisodeResult> slots;
    private List<TensorDict> rows;
    private GroupOptions options;

    @Setup(Level.Trial)
    public void setUp() {
        GroupFixture fixture = new GroupFixture();
        slots = fixture.slots;
        rows = fixture.rows;
        options = new GroupOptions(GroupFixture.ROWS, 1, false, false, true);
        if (!(GroupMerger.merge(0, slots, options) instanceof GroupOutcome.Merged)) {
            throw new IllegalStateException("the fixture's group was not merged");
        }
    }

    @Benchmark
    public GroupOutcome merge() {
        return GroupMerger.merge(7, slots, options);
    }

    @Benchmark
    public TensorDict concatPadded() {
        return TensorDicts.concatPadded(rows);
    }

    /** Both, back to back in alternating order ({@link PairTimes}: subject = merge, baseline = concatPadded). */
    @Benchmark
    public void interleaved(PairTimes times, Blackhole bh) {
        boolean baselineFirst = times.baselineFirstThisRound();
        for (int k = 0; k < 2; k++) {
            boolean baseline = (k == 0) == baselineFirst;
            long t0 = System.nanoTime();
            bh.consume(baseline ? concatPadded() : merge());
            long elapsed = System.nanoTime() - t0;
            if (baseline) {
                times.baselineNanos += elapsed;
            } else {
                times.subjectNanos += elapsed;
            }
        }
        times.rounds++;
    }
}
