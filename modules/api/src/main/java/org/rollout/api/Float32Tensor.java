package org.rollout.api;

import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.Objects;
import java.util.stream.DoubleStream;
import java.util.stream.IntStream;

/**
 * An immutable float32 {@link Tensor}. Logprobs and rewards use this dtype. Equality compares
 * elements the way {@link Float#equals} does, so {@code NaN} equals {@code NaN}.
 */
public final class Float32Tensor extends DenseTensor<Float32Tensor, float[]> implements Tensor {

    private Float32Tensor(float[] data, int offset, int[] shape) {
        super(data, offset, shape);
    }

    @Override
    Float32Tensor view(float[] data, int offset, int[] shape) {
        return new Float32Tensor(data, offset, shape);
    }

    /**
     * A tensor holding a copy of {@code values} under {@code shape}. With no shape the result is
     * rank 1; use {@link #scalar} for rank 0.
     */
    public static Float32Tensor of(float[] values, int... shape) {
        return new Float32Tensor(values.clone(), 0, shapeOf(values.length, shape));
    }

    /** A rank-0 tensor. */
    public static Float32Tensor scalar(float value) {
        return new Float32Tensor(new float[] {value}, 0, new int[0]);
    }

    /** A rank-1 tensor of the given values. */
    public static Float32Tensor vector(float... values) {
        return new Float32Tensor(values.clone(), 0, new int[] {values.length});
    }

    /** A rank-2 tensor; every row must have the same length. */
    public static Float32Tensor matrix(float[]... rows) {
        int[] s = matrixShape(rows);
        return new Float32Tensor(concatRows(rows, new float[s[0] * s[1]]), 0, s);
    }

    /** A tensor of {@code shape} with every element equal to {@code value}. */
    public static Float32Tensor filled(float value, int... shape) {
        int[] s = TensorShape.check(shape);
        float[] d = new float[TensorShape.numel(s)];
        if (value != 0f) {
            Arrays.fill(d, value);
        }
        return new Float32Tensor(d, 0, s);
    }

    /** A builder over a zero-filled array of {@code shape}. */
    public static Builder builder(int... shape) {
        return new Builder(TensorShape.check(shape));
    }

    @Override
    public DType dtype() {
        return DType.FLOAT32;
    }

    /** Element {@code i} of a rank-1 tensor. */
    public float get(int i) {
        return data[index(i)];
    }

    /** Element {@code (i, j)} of a rank-2 tensor. */
    public float get(int i, int j) {
        return data[index(i, j)];
    }

    /** The single element of a rank-0 tensor (or of any tensor with one element). */
    public float item() {
        return data[itemIndex()];
    }

    /** Element {@code flatIndex} in row-major order. */
    public float at(int flatIndex) {
        return data[flatIndex(flatIndex)];
    }

    @Override
    public double getDouble(int flatIndex) {
        return at(flatIndex);
    }

    @Override
    public long getLong(int flatIndex) {
        return (long) at(flatIndex);
    }

    /** A fresh copy of the elements in row-major order. */
    public float[] toArray() {
        return Arrays.copyOfRange(data, offset, offset + numel);
    }

    /** Copies {@code length} elements starting at flat index {@code from} into {@code dest}. */
    public void copyTo(int from, float[] dest, int destPos, int length) {
        copyElements(from, dest, destPos, length);
    }

    /**
     * Puts {@code length} elements starting at flat index {@code from} into {@code dest} at its
     * position, which advances: one bulk copy, in the buffer's byte order when it views bytes.
     */
    public void copyTo(int from, FloatBuffer dest, int length) {
        Objects.checkFromIndexSize(from, length, numel);
        dest.put(data, offset + from, length);
    }

    /** The elements in row-major order, widened to double. */
    public DoubleStream stream() {
        return IntStream.range(0, numel).mapToDouble(k -> data[offset + k]);
    }

    @Override
    boolean sameElements(Float32Tensor t) {
        return Arrays.equals(data, offset, offset + numel, t.data, t.offset, t.offset + t.numel);
    }

    @Override
    int elementHash(int k) {
        return Float.hashCode(data[offset + k]);
    }

    /**
     * Fills a new tensor in place, then hands the array over on {@link #build()} without copying.
     * A builder can build once; it is not thread-safe.
     */
    public static final class Builder extends DenseBuilder<float[]> {
        private Builder(int[] shape) {
            super(shape, new float[TensorShape.numel(shape)]);
        }

        /** Sets flat element {@code flatIndex}. */
        public Builder set(int flatIndex, float value) {
            live()[flatIndex] = value;
            return this;
        }

        /** Sets element {@code (i, j)} of a rank-2 tensor. */
        public Builder set(int i, int j, float value) {
            live()[flat(i, j)] = value;
            return this;
        }

        /** Sets flat elements {@code [from, to)} to {@code value}. */
        public Builder fill(int from, int to, float value) {
            Arrays.fill(live(), from, to, value);
            return this;
        }

        /** Copies {@code length} values of {@code src} from {@code srcPos} to flat index {@code destPos}. */
        public Builder copyFrom(int destPos, float[] src, int srcPos, int length) {
            System.arraycopy(src, srcPos, live(), destPos, length);
            return this;
        }

        /** Takes {@code length} values from {@code src} at its position, which advances, to flat index {@code destPos}. */
        public Builder copyFrom(int destPos, FloatBuffer src, int length) {
            src.get(live(), destPos, length);
            return this;
        }

        /** Copies {@code length} elements of {@code src} from its flat index {@code srcPos}. */
        public Builder copyFrom(int destPos, Float32Tensor src, int srcPos, int length) {
            src.copyTo(srcPos, live(), destPos, length);
            return this;
        }

        /** The tensor; the builder cannot be used afterwards. */
        public Float32Tensor build() {
            return new Float32Tensor(take(), 0, shape);
        }
    }
}
