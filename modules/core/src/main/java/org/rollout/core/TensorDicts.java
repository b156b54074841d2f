package org.rollout.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import java.util.function.IntFunction;
import org.rollout.api.BoolTensor;
import org.rollout.api.DType;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Int64Tensor;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;

/**
 * Operations on whole {@link TensorDict}s: AReaL's {@code concat_padded_tensors} (semantics §3.2) and the
 * small readers the group code shares.
 *
 * <pre>
 *   dict 0: input_ids [1, 3]  versions [1, 3]  rewards [1]
 *   dict 1: input_ids [2, 5]  versions [2, 5]  rewards [2]
 *                         │ concatPadded
 *                         ▼
 *           input_ids [3, 5]  versions [3, 5]  rewards [3]
 *           row 0 right-padded: input_ids with 0, versions with −1
 * </pre>
 *
 * <p>Padding: every rank-2 tensor is right-padded in dim 1 to the widest of its key, then all
 * are concatenated along dim 0. The pad value is 0 ({@code false} for bool) for every key except
 * {@code versions}, which pads with −1: AReaL pads versions with 0, which makes padding look like
 * weight version 0 (a deliberate difference, listed in docs/architecture.md). Rank-1 tensors are concatenated
 * directly; rank-0 tensors (one per dict) are stacked into a rank-1 tensor of length n.
 *
 * <p>Pitfalls: all dicts must have the same key set, and each key the same dtype and rank in every
 * dict; a mismatch is an {@link IllegalArgumentException} naming the key and the dict index. The
 * row counts of different keys are not cross-checked here (that is the trajectory format check's
 * and {@link GroupMerger}'s job). Output keeps the first dict's key order.
 *
 * <p>Cost: one pass, one allocation per key, block copies when widths agree; no boxing. Stateless
 * and thread-safe.
 */
public final class TensorDicts {
    /** The one key that pads with −1 rather than 0. */
    static final String MINUS_ONE_PADDED_KEY = TensorDict.VERSIONS;

    private TensorDicts() {}

    /**
     * Right-pads and concatenates {@code dicts} along dim 0 (semantics §3.2). An empty list gives {@link
     * TensorDict#empty()}; a single dict is returned unchanged.
     *
     * @throws IllegalArgumentException when key sets differ (naming the missing and extra keys and
     *     the dict's index), or a key's dtype or rank differs between dicts (naming the key, the
     *     index and both dtypes and shapes)
     */
    public static TensorDict concatPadded(List<TensorDict> dicts) {
        return concatPadded(dicts, i -> "dict " + i, IllegalArgumentException::new);
    }

    /**
     * {@link #concatPadded(List)} with the caller's words for an index (e.g. {@code "slot 3"}) and
     * its own exception type, so a group merge can report a mismatch as a workflow contract error
     * naming the slot.
     */
    static TensorDict concatPadded(
            List<TensorDict> dicts, IntFunction<String> nameOf, Function<String, ? extends RuntimeException> error) {
        int n = dicts.size();
        for (int i = 0; i < n; i++) {
            Objects.requireNonNull(dicts.get(i), () -> "tensor dicts to concatenate contain null");
        }
        if (n == 0) {
            return TensorDict.empty();
        }
        TensorDict first = dicts.get(0);
        if (n == 1) {
            return first;
        }
        checkKeySets(dicts, nameOf, error);
        TensorDict.Builder out = TensorDict.builder();
        Tensor[] parts = new Tensor[n];
        for (String key : first.keys()) {
            for (int i = 0; i < n; i++) {
                parts[i] = dicts.get(i).get(key);
                if (parts[i].dtype() != parts[0].dtype() || parts[i].rank() != parts[0].rank()) {
                    throw error.apply("tensor '" + key + "': " + nameOf.apply(i) + " has " + parts[i].describe()
                            + " but " + nameOf.apply(0) + " has " + parts[0].describe()
                            + " (dtype and rank must agree to concatenate)");
                }
            }
            out.put(key, concatOneKey(key, parts));
        }
        return out.build();
    }

    /**
     * The valid length of each row: the row sums of {@code attention_mask} (right padding assumed,
     * as AReaL does).
     *
     * @throws IllegalArgumentException when {@code attention_mask} is missing or not rank 2
     */
    public static int[] validLengths(TensorDict d) {
        Tensor mask = d.tensor(TensorDict.ATTENTION_MASK);
        if (mask.rank() != 2) {
            throw new IllegalArgumentException("attention_mask must be rank 2 [B, L], got " + mask.describe());
        }
        int rows = mask.dim(0);
        int width = mask.dim(1);
        int[] lengths = new int[rows];
        if (mask instanceof BoolTensor b) {
            for (int i = 0; i < rows; i++) {
                lengths[i] = b.row(i).countTrue();
            }
            return lengths;
        }
        for (int i = 0; i < rows; i++) {
            int count = 0;
            for (int j = 0, base = i * width; j < width; j++) {
                if (mask.getLong(base + j) != 0) {
                    count++;
                }
            }
            lengths[i] = count;
        }
        return lengths;
    }

    /** The pad value of {@code key}: −1 for {@code versions}, 0 for everything else. */
    public static int padValue(String key) {
        return MINUS_ONE_PADDED_KEY.equals(key) ? -1 : 0;
    }

    /** Every element of {@code t} widened to a double, in row-major order. */
    static double[] toDoubles(Tensor t) {
        int n = t.numel();
        double[] out = new double[n];
        if (t instanceof Float32Tensor f) {
            for (int k = 0; k < n; k++) {
                out[k] = f.at(k);
            }
        } else {
            for (int k = 0; k < n; k++) {
                out[k] = t.getDouble(k);
            }
        }
        return out;
    }

    private static void checkKeySets(
            List<TensorDict> dicts, IntFunction<String> nameOf, Function<String, ? extends RuntimeException> error) {
        Set<String> expected = dicts.get(0).keys();
        for (int i = 1; i < dicts.size(); i++) {
            Set<String> actual = dicts.get(i).keys();
            if (actual.size() == expected.size() && actual.containsAll(expected)) {
                continue;
            }
            List<String> missing = new ArrayList<>();
            for (String k : expected) {
                if (!actual.contains(k)) {
                    missing.add(k);
                }
            }
            List<String> extra = new ArrayList<>();
            for (String k : actual) {
                if (!expected.contains(k)) {
                    extra.add(k);
                }
            }
            throw error.apply(nameOf.apply(i) + " has different tensor keys from " + nameOf.apply(0) + ": missing "
                    + missing + ", extra " + extra + " (all dicts must have identical key sets)");
        }
    }

    private static Tensor concatOneKey(String key, Tensor[] parts) {
        int n = parts.length;
        int rank = parts[0].rank();
        int pad = padValue(key);
        if (rank == 0) {
            Sink sink = Sink.of(parts[0].dtype(), pad, n);
            for (int i = 0; i < n; i++) {
                sink.copy(i, parts[i], 0, 1);
            }
            return sink.build();
        }
        int rows = 0;
        int width = 0;
        boolean sameWidth = true;
        for (Tensor t : parts) {
            rows = Math.addExact(rows, t.dim(0));
            if (rank == 2) {
                sameWidth &= t.dim(1) == parts[0].dim(1);
                width = Math.max(width, t.dim(1));
            }
        }
        if (rank == 1) {
            Sink sink = Sink.of(parts[0].dtype(), pad, rows);
            int at = 0;
            for (Tensor t : parts) {
                sink.copy(at, t, 0, t.numel());
                at += t.numel();
            }
            return sink.build();
        }
        Sink sink = Sink.of(parts[0].dtype(), pad, rows, width);
        int at = 0;
        for (Tensor t : parts) {
            int r = t.dim(0);
            int w = t.dim(1);
            if (sameWidth) {
                sink.copy(at, t, 0, r * w);
                at += r * w;
                continue;
            }
            for (int i = 0; i < r; i++) {
                sink.copy(at, t, i * w, w);
                sink.pad(at + w, at + width);
                at += width;
            }
        }
        return sink.build();
    }

    /**
     * One output tensor being filled: a dtype-specific builder plus its pad value. Calls are per
     * row, never per element, so the dispatch costs nothing measurable.
     */
    private interface Sink {
        void copy(int destPos, Tensor src, int srcPos, int length);

        /** Fills flat positions {@code [from, to)} with the pad value (a no-op when it is 0). */
        void pad(int from, int to);

        Tensor build();

        static Sink of(DType dtype, int pad, int... shape) {
            return switch (dtype) {
                case INT32 -> new Int32Sink(Int32Tensor.builder(shape), pad);
                case INT64 -> new Int64Sink(Int64Tensor.builder(shape), pad);
                case FLOAT32 -> new Float32Sink(Float32Tensor.builder(shape), pad);
                // A bool tensor has no −1; it pads with false whatever its key.
                case BOOL -> new BoolSink(BoolTensor.builder(shape));
            };
        }
    }

    private record Int32Sink(Int32Tensor.Builder b, int padValue) implements Sink {
        @Override
        public void copy(int destPos, Tensor src, int srcPos, int length) {
            b.copyFrom(destPos, (Int32Tensor) src, srcPos, length);
        }

        @Override
        public void pad(int from, int to) {
            if (padValue != 0 && from < to) {
                b.fill(from, to, padValue);
            }
        }

        @Override
        public Tensor build() {
            return b.build();
        }
    }

    private record Int64Sink(Int64Tensor.Builder b, long padValue) implements Sink {
        @Override
        public void copy(int destPos, Tensor src, int srcPos, int length) {
            b.copyFrom(destPos, (Int64Tensor) src, srcPos, length);
        }

        @Override
        public void pad(int from, int to) {
            if (padValue != 0 && from < to) {
                b.fill(from, to, padValue);
            }
        }

        @Override
        public Tensor build() {
            return b.build();
        }
    }

    private record Float32Sink(Float32Tensor.Builder b, float padValue) implements Sink {
        @Override
        public void copy(int destPos, Tensor src, int srcPos, int length) {
            b.copyFrom(destPos, (Float32Tensor) src, srcPos, length);
        }

        @Override
        public void pad(int from, int to) {
            if (padValue != 0 && from < to) {
                b.fill(from, to, padValue);
            }
        }

        @Override
        public Tensor build() {
            return b.build();
        }
    }

    private record BoolSink(BoolTensor.Builder b) implements Sink {
        @Override
        public void copy(int destPos, Tensor src, int srcPos, int length) {
            b.copyFrom(destPos, (BoolTensor) src, srcPos, length);
        }

        @Override
        public void pad(int from, int to) {
            // Builders start zero-filled: false is already there.
        }

        @Override
        public Tensor build() {
            return b.build();
        }
    }
}
