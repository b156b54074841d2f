package org.rollout.api;

import java.util.Arrays;

/** An immutable bool {@link Tensor}. The attention mask uses this dtype (semantics §3.2). */
public final class BoolTensor extends DenseTensor<BoolTensor, boolean[]> implements Tensor {

    private BoolTensor(boolean[] data, int offset, int[] shape) {
        super(data, offset, shape);
    }

    @Override
    BoolTensor view(boolean[] data, int offset, int[] shape) {
        return new BoolTensor(data, offset, shape);
    }

    /**
     * A tensor holding a copy of {@code values} under {@code shape}. With no shape the result is
     * rank 1; use {@link #scalar} for rank 0.
     */
    public static BoolTensor of(boolean[] values, int... shape) {
        return new BoolTensor(values.clone(), 0, shapeOf(values.length, shape));
    }

    /** A rank-0 tensor. */
    public static BoolTensor scalar(boolean value) {
        return new BoolTensor(new boolean[] {value}, 0, new int[0]);
    }

    /** A rank-1 tensor of the given values. */
    public static BoolTensor vector(boolean... values) {
        return new BoolTensor(values.clone(), 0, new int[] {values.length});
    }

    /** A rank-2 tensor; every row must have the same length. */
    public static BoolTensor matrix(boolean[]... rows) {
        int[] s = matrixShape(rows);
        return new BoolTensor(concatRows(rows, new boolean[s[0] * s[1]]), 0, s);
    }

    /** A tensor of {@code shape} with every element equal to {@code value}. */
    public static BoolTensor filled(boolean value, int... shape) {
        int[] s = TensorShape.check(shape);
        boolean[] d = new boolean[TensorShape.numel(s)];
        if (value) {
            Arrays.fill(d, value);
        }
        return new BoolTensor(d, 0, s);
    }

    /** A builder over a zero-filled array of {@code shape}. */
    public static Builder builder(int... shape) {
        return new Builder(TensorShape.check(shape));
    }

    @Override
    public DType dtype() {
        return DType.BOOL;
    }

    /** Element {@code i} of a rank-1 tensor. */
    public boolean get(int i) {
        return data[index(i)];
    }

    /** Element {@code (i, j)} of a rank-2 tensor. */
    public boolean get(int i, int j) {
        return data[index(i, j)];
    }

    /** The single element of a rank-0 tensor (or of any tensor with one element). */
    public boolean item() {
        return data[itemIndex()];
    }

    /** Element {@code flatIndex} in row-major order. */
    public boolean at(int flatIndex) {
        return data[flatIndex(flatIndex)];
    }

    @Override
    public double getDouble(int flatIndex) {
        return at(flatIndex) ? 1.0 : 0.0;
    }

    @Override
    public long getLong(int flatIndex) {
        return at(flatIndex) ? 1L : 0L;
    }

    /** A fresh copy of the elements in row-major order. */
    public boolean[] toArray() {
        return Arrays.copyOfRange(data, offset, offset + numel);
    }

    /** Copies {@code length} elements starting at flat index {@code from} into {@code dest}. */
    public void copyTo(int from, boolean[] dest, int destPos, int length) {
        copyElements(from, dest, destPos, length);
    }

    /** The number of {@code true} elements. */
    public int countTrue() {
        int n = 0;
        for (int k = 0; k < numel; k++) {
            if (data[offset + k]) {
                n++;
            }
        }
        return n;
    }

    @Override
    boolean sameElements(BoolTensor t) {
        return Arrays.equals(data, offset, offset + numel, t.data, t.offset, t.offset + t.numel);
    }

    @Override
    int elementHash(int k) {
        return Boolean.hashCode(data[offset + k]);
    }

    /**
     * Fills a new tensor in place, then hands the array over on {@link #build()} without copying.
     * A builder can build once; it is not thread-safe.
     */
    public static final class Builder extends DenseBuilder<boolean[]> {
        private Builder(int[] shape) {
            super(shape, new boolean[TensorShape.numel(shape)]);
        }

        /** Sets flat element {@code flatIndex}. */
        public Builder set(int flatIndex, boolean value) {
            live()[flatIndex] = value;
            return this;
        }

        /** Sets element {@code (i, j)} of a rank-2 tensor. */
        public Builder set(int i, int j, boolean value) {
            live()[flat(i, j)] = value;
            return this;
        }

        /** Sets flat elements {@code [from, to)} to {@code value}. */
        public Builder fill(int from, int to, boolean value) {
            Arrays.fill(live(), from, to, value);
            return this;
        }

        /** Copies {@code length} values of {@code src} from {@code srcPos} to flat index {@code destPos}. */
        public Builder copyFrom(int destPos, boolean[] src, int srcPos, int length) {
            System.arraycopy(src, srcPos, live(), destPos, length);
            return this;
        }

        /** Copies {@code length} elements of {@code src} from its flat index {@code srcPos}. */
        public Builder copyFrom(int destPos, BoolTensor src, int srcPos, int length) {
            src.copyTo(srcPos, live(), destPos, length);
            return this;
        }

        /** The tensor; the builder cannot be used afterwards. */
        public BoolTensor build() {
            return new BoolTensor(take(), 0, shape);
        }
    }
}
