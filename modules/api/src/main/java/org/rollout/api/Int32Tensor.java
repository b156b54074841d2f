package org.rollout.api;

import java.nio.IntBuffer;
import java.util.Arrays;
import java.util.Objects;
import java.util.stream.IntStream;

/** An immutable int32 {@link Tensor}. Token ids, masks, versions and turn ids use this dtype. */
public final class Int32Tensor extends DenseTensor<Int32Tensor, int[]> implements Tensor {

    private Int32Tensor(int[] data, int offset, int[] shape) {
        super(data, offset, shape);
    }

    @Override
    Int32Tensor view(int[] data, int offset, int[] shape) {
        return new Int32Tensor(data, offset, shape);
    }

    /**
     * A tensor holding a copy of {@code values} under {@code shape}. With no shape the result is
     * rank 1; use {@link #scalar} for rank 0.
     */
    public static Int32Tensor of(int[] values, int... shape) {
        return new Int32Tensor(values.clone(), 0, shapeOf(values.length, shape));
    }

    /** A rank-0 tensor. */
    public static Int32Tensor scalar(int value) {
        return new Int32Tensor(new int[] {value}, 0, new int[0]);
    }

    /** A rank-1 tensor of the given values. */
    public static Int32Tensor vector(int... values) {
        return new Int32Tensor(values.clone(), 0, new int[] {values.length});
    }

    /** A rank-2 tensor; every row must have the same length. */
    public static Int32Tensor matrix(int[]... rows) {
        int[] s = matrixShape(rows);
        return new Int32Tensor(concatRows(rows, new int[s[0] * s[1]]), 0, s);
    }

    /** A tensor of {@code shape} with every element equal to {@code value}. */
    public static Int32Tensor filled(int value, int... shape) {
        int[] s = TensorShape.check(shape);
        int[] d = new int[TensorShape.numel(s)];
        if (value != 0) {
            Arrays.fill(d, value);
        }
        return new Int32Tensor(d, 0, s);
    }

    /** A builder over a zero-filled array of {@code shape}. */
    public static Builder builder(int... shape) {
        return new Builder(TensorShape.check(shape));
    }

    @Override
    public DType dtype() {
        return DType.INT32;
    }

    /** Element {@code i} of a rank-1 tensor. */
    public int get(int i) {
        return data[index(i)];
    }

    /** Element {@code (i, j)} of a rank-2 tensor. */
    public int get(int i, int j) {
        return data[index(i, j)];
    }

    /** The single element of a rank-0 tensor (or of any tensor with one element). */
    public int item() {
        return data[itemIndex()];
    }

    /** Element {@code flatIndex} in row-major order. */
    public int at(int flatIndex) {
        return data[flatIndex(flatIndex)];
    }

    @Override
    public double getDouble(int flatIndex) {
        return at(flatIndex);
    }

    @Override
    public long getLong(int flatIndex) {
        return at(flatIndex);
    }

    /** A fresh copy of the elements in row-major order. */
    public int[] toArray() {
        return Arrays.copyOfRange(data, offset, offset + numel);
    }

    /** Copies {@code length} elements starting at flat index {@code from} into {@code dest}. */
    public void copyTo(int from, int[] dest, int destPos, int length) {
        copyElements(from, dest, destPos, length);
    }

    /**
     * Puts {@code length} elements starting at flat index {@code from} into {@code dest} at its
     * position, which advances: one bulk copy, in the buffer's byte order when it views bytes.
     */
    public void copyTo(int from, IntBuffer dest, int length) {
        Objects.checkFromIndexSize(from, length, numel);
        dest.put(data, offset + from, length);
    }

    /** The elements in row-major order. */
    public IntStream stream() {
        return Arrays.stream(data, offset, offset + numel);
    }

    @Override
    boolean sameElements(Int32Tensor t) {
        return Arrays.equals(data, offset, offset + numel, t.data, t.offset, t.offset + t.numel);
    }

    @Override
    int elementHash(int k) {
        return Integer.hashCode(data[offset + k]);
    }

    /**
     * Fills a new tensor in place, then hands the array over on {@link #build()} without copying.
     * A builder can build once; it is not thread-safe.
     */
    public static final class Builder extends DenseBuilder<int[]> {
        private Builder(int[] shape) {
            super(shape, new int[TensorShape.numel(shape)]);
        }

        /** Sets flat element {@code flatIndex}. */
        public Builder set(int flatIndex, int value) {
            live()[flatIndex] = value;
            return this;
        }

        /** Sets element {@code (i, j)} of a rank-2 tensor. */
        public Builder set(int i, int j, int value) {
            live()[flat(i, j)] = value;
            return this;
        }

        /** Sets flat elements {@code [from, to)} to {@code value}. */
        public Builder fill(int from, int to, int value) {
            Arrays.fill(live(), from, to, value);
            return this;
        }

        /** Copies {@code length} values of {@code src} from {@code srcPos} to flat index {@code destPos}. */
        public Builder copyFrom(int destPos, int[] src, int srcPos, int length) {
            System.arraycopy(src, srcPos, live(), destPos, length);
            return this;
        }

        /** Takes {@code length} values from {@code src} at its position, which advances, to flat index {@code destPos}. */
        public Builder copyFrom(int destPos, IntBuffer src, int length) {
            src.get(live(), destPos, length);
            return this;
        }

        /** Copies {@code length} elements of {@code src} from its flat index {@code srcPos}. */
        public Builder copyFrom(int destPos, Int32Tensor src, int srcPos, int length) {
            src.copyTo(srcPos, live(), destPos, length);
            return this;
        }

        /** The tensor; the builder cannot be used afterwards. */
        public Int32Tensor build() {
            return new Int32Tensor(take(), 0, shape);
        }
    }
}
