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
import org.rollout.core.VersionRle;

/**
 * {@link VersionRle#encode(int[], int[], int)} of one 8k row (512 prompt positions with version −1
 * and loss mask 0, then 7680 generated positions in three runs of versions 3, 4, 5 — a generation
 * interrupted twice) against one plain pass over the same two arrays that counts masked positions
 * and version changes: the floor of any encoder. The ratio is the price of building the run list.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class VersionRleBenchmark {
    private int[] versions;
    private int[] mask;

    @Setup(Level.Trial)
    public void setUp() {
        int width = GroupFixture.WIDTH;
        int prompt = GroupFixture.PROMPT;
        versions = new int[width];
        mask = new int[width];
        for (int i = 0; i < width; i++) {
            boolean generated = i >= prompt;
            mask[i] = generated ? 1 : 0;
            versions[i] = !generated ? -1 : 3 + (i - prompt) * 3 / (width - prompt);
        }
        List<VersionRle.Run> runs = VersionRle.encode(versions, mask, width);
        if (runs.size() != 3 || VersionRle.totalCount(runs) != width - prompt) {
            throw new IllegalStateException("unexpected runs " + runs);
        }
    }

    @Benchmark
    public List<VersionRle.Run> encode() {
        return VersionRle.encode(versions, mask, versions.length);
    }

    /** One pass: masked positions and the number of version changes among them. */
    @Benchmark
    public long scanFloor() {
        long masked = 0;
        long changes = 0;
        int last = Integer.MIN_VALUE;
        for (int i = 0; i < versions.length; i++) {
            if (mask[i] == 1) {
                masked++;
                if (versions[i] != last) {
                    changes++;
                    last = versions[i];
                }
            }
        }
        return masked << 32 | changes;
    }

    /** Both, back to back in alternating order ({@link PairTimes}: subject = encode, baseline = scanFloor). */
    @Benchmark
    public void interleaved(PairTimes times, Blackhole bh) {
        boolean baselineFirst = times.baselineFirstThisRound();
        for (int k = 0; k < 2; k++) {
            boolean baseline = (k == 0) == baselineFirst;
            long t0 = System.nanoTime();
            if (baseline) {
                bh.consume(scanFloor());
            } else {
                bh.consume(encode());
            }
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
