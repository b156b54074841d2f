package org.rollout.benchmarks;

import java.lang.reflect.Array;
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
import org.rollout.api.BoolTensor;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.core.TensorDicts;

/**
 * {@link TensorDicts#concatPadded} of a 16 × 8k group ({@link GroupFixture}: 16 single-row dicts of
 * eight keys) against the least any implementation must do: allocate each padded [16, 8192] matrix
 * (and the two [16] vectors) and {@code System.arraycopy} every row's values into place, from arrays
 * extracted beforehand. The ratio is what the generic, validated, typed implementation costs above
 * plain memory copying.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class TensorDictsBenchmark {
    private List<TensorDict> rows;
    /** Per key, per row: the row's flat values (int[], float[] or boolean[]). */
    private Object[][] rowArrays;

    private String[] keys;
    private int width;

    @Setup(Level.Trial)
    public void setUp() {
        GroupFixture fixture = new GroupFixture();
        rows = fixture.rows;
        keys = rows.get(0).keys().toArray(String[]::new);
        width = fixture.merged.tensor(TensorDict.INPUT_IDS).dim(1);
        rowArrays = new Object[keys.length][rows.size()];
        for (int k = 0; k < keys.length; k++) {
            for (int r = 0; r < rows.size(); r++) {
                Tensor t = rows.get(r).tensor(keys[k]);
                rowArrays[k][r] = switch (t) {
                    case Int32Tensor i -> i.toArray();
                    case Float32Tensor f -> f.toArray();
                    case BoolTensor b -> b.toArray();
                    default -> throw new IllegalStateException("unexpected dtype of '" + keys[k] + "': " + t);
                };
            }
        }
    }

    @Benchmark
    public TensorDict concatPadded() {
        return TensorDicts.concatPadded(rows);
    }

    /** The copy floor: padded arrays allocated and filled with {@code System.arraycopy}, no tensors. */
    @Benchmark
    public Object[] arraycopyFloor() {
        int n = rows.size();
        Object[] out = new Object[keys.length];
        for (int k = 0; k < keys.length; k++) {
            Object first = rowArrays[k][0];
            int rowWidth = Array.getLength(first) == 1 ? 1 : width;
            Object dest = switch (first) {
                case int[] ignored -> new int[n * rowWidth];
                case float[] ignored -> new float[n * rowWidth];
                case boolean[] ignored -> new boolean[n * rowWidth];
                default -> throw new IllegalStateException("unexpected array " + first.getClass());
            };
            for (int r = 0; r < n; r++) {
                Object src = rowArrays[k][r];
                System.arraycopy(src, 0, dest, r * rowWidth, Array.getLength(src));
            }
            out[k] = dest;
        }
        return out;
    }

    /** Both, back to back in alternating order, each timed ({@link PairTimes}: subject = concatPadded). */
    @Benchmark
    public void interleaved(PairTimes times, Blackhole bh) {
        boolean baselineFirst = times.baselineFirstThisRound();
        for (int k = 0; k < 2; k++) {
            boolean baseline = (k == 0) == baselineFirst;
            long t0 = System.nanoTime();
            bh.consume(baseline ? arraycopyFloor() : concatPadded());
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
