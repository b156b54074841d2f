package org.rollout.api;

import java.util.Arrays;
import java.util.Objects;
import java.util.stream.LongStream;

/** An immutable int64 {@link Tensor}. Tensors built from interactions use it for ids, masks and versions (§3.2). */
public final class Int64Tensor implements Tensor {
    private final long[] data;
    private final int offset;
    private final int[] shape;
    private final int numel;

    private Int64Tensor(long[] data, int offset, int[] shape) {
        this.data = data;
        this.offset = offset;
        this.shape = shape;
        this.numel = TensorShape.numel(shape);
    }

    /**
     * A tensor holding a copy of {@code values} under {@code shape}. With no shape the result is
     * rank 1; use {@link #scalar} for rank 0.
     */
    public static Int64Tensor of(long[] values, int... shape) {
        int[] s = shape.length == 0 ? new int[] {values.length} : TensorShape.check(shape);
        TensorShape.checkLength(values.length, s);
        return new Int64Tensor(values.clone(), 0, s);
    }

    /** A rank-0 tensor. */
    public static Int64Tensor scalar(long value) {
        return new Int64Tensor(new long[] {value}, 0, new int[0]);
    }

    /** A rank-1 tensor of the given values. */
    public static Int64Tensor vector(long... values) {
        return new Int64Tensor(values.clone(), 0, new int[] {values.length});
    }

    /** A rank-2 tensor; every row must have the same length. */
    public static Int64Tensor matrix(long[]... rows) {
        int width = rows.length == 0 ? 0 : rows[0].length;
        Builder b = builder(rows.length, width);
        for (int i = 0; i < rows.length; i++) {
            if (rows[i].length != width) {
                throw new IllegalArgumentException("matrix rows must have equal length: row 0 has " + width + ", row "
                        + i + " has " + rows[i].length);
            }
            b.copyFrom(i * width, rows[i], 0, width);
        }
        return b.build();
    }

    /** A tensor of {@code shape} with every element equal to {@code value}. */
    public static Int64Tensor filled(long value, int... shape) {
        int[] s = TensorShape.check(shape);
        long[] d = new long[TensorShape.numel(s)];
        if (value != 0L) {
            Arrays.fill(d, value);
        }
        return new Int64Tensor(d, 0, s);
    }

    /** A builder over a zero-filled array of {@code shape}. */
    public static Builder builder(int... shape) {
        return new Builder(TensorShape.check(shape));
    }

    @Override
    public DType dtype() {
        return DType.INT64;
    }

    @Override
    public int[] shape() {
        return shape.clone();
    }

    @Override
    public int rank() {
        return shape.length;
    }

    @Override
    public int dim(int axis) {
        return shape[Objects.checkIndex(axis, shape.length)];
    }

    @Override
    public int numel() {
        return numel;
    }

    /** Element {@code i} of a rank-1 tensor. */
    public long get(int i) {
        return data[offset + TensorShape.flat(shape, i)];
    }

    /** Element {@code (i, j)} of a rank-2 tensor. */
    public long get(int i, int j) {
        return data[offset + TensorShape.flat(shape, i, j)];
    }

    /** The single element of a rank-0 tensor (or of any tensor with one element). */
    public long item() {
        TensorShape.checkScalar(shape);
        return data[offset];
    }

    /** Element {@code flatIndex} in row-major order. */
    public long at(int flatIndex) {
        return data[offset + Objects.checkIndex(flatIndex, numel)];
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
    public long[] toArray() {
        return Arrays.copyOfRange(data, offset, offset + numel);
    }

    /** Copies {@code length} elements starting at flat index {@code from} into {@code dest}. */
    public void copyTo(int from, long[] dest, int destPos, int length) {
        Objects.checkFromIndexSize(from, length, numel);
        System.arraycopy(data, offset + from, dest, destPos, length);
    }

    /** The elements in row-major order. */
    public LongStream stream() {
        return Arrays.stream(data, offset, offset + numel);
    }

    @Override
    public Int64Tensor row(int i) {
        int[] rs = TensorShape.rowShape(shape, i);
        return new Int64Tensor(data, offset + i * TensorShape.rowStride(shape), rs);
    }

    @Override
    public Int64Tensor slice(int from, int to) {
        int[] ss = TensorShape.sliceShape(shape, from, to);
        return new Int64Tensor(data, offset + from * TensorShape.rowStride(shape), ss);
    }

    @Override
    public Int64Tensor reshape(int... newShape) {
        int[] s = TensorShape.check(newShape);
        TensorShape.checkLength(numel, s);
        return new Int64Tensor(data, offset, s);
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof Int64Tensor t) || !Arrays.equals(shape, t.shape)) {
            return false;
        }
        return Arrays.equals(data, offset, offset + numel, t.data, t.offset, t.offset + t.numel);
    }

    @Override
    public int hashCode() {
        int h = Arrays.hashCode(shape);
        for (int k = 0; k < numel; k++) {
            h = 31 * h + Long.hashCode(data[offset + k]);
        }
        return h;
    }

    @Override
    public String toString() {
        return TensorFormat.format(this);
    }

    /**
     * Fills a new tensor in place, then hands the array over on {@link #build()} without copying.
     * A builder can build once; it is not thread-safe.
     */
    public static final class Builder {
        private final int[] shape;
        private long[] data;

        private Builder(int[] shape) {
            this.shape = shape;
            this.data = new long[TensorShape.numel(shape)];
        }

        /** Sets flat element {@code flatIndex}. */
        public Builder set(int flatIndex, long value) {
            live()[flatIndex] = value;
            return this;
        }

        /** Sets element {@code (i, j)} of a rank-2 tensor. */
        public Builder set(int i, int j, long value) {
            live()[TensorShape.flat(shape, i, j)] = value;
            return this;
        }

        /** Sets flat elements {@code [from, to)} to {@code value}. */
        public Builder fill(int from, int to, long value) {
            Arrays.fill(live(), from, to, value);
            return this;
        }

        /** Copies {@code length} values of {@code src} from {@code srcPos} to flat index {@code destPos}. */
        public Builder copyFrom(int destPos, long[] src, int srcPos, int length) {
            System.arraycopy(src, srcPos, live(), destPos, length);
            return this;
        }

        /** Copies {@code length} elements of {@code src} from its flat index {@code srcPos}. */
        public Builder copyFrom(int destPos, Int64Tensor src, int srcPos, int length) {
            src.copyTo(srcPos, live(), destPos, length);
            return this;
        }

        /** The tensor; the builder cannot be used afterwards. */
        public Int64Tensor build() {
            Int64Tensor t = new Int64Tensor(live(), 0, shape);
            data = null;
            return t;
        }

        private long[] live() {
            if (data == null) {
                throw new IllegalStateException("this builder has already built its tensor");
            }
            return data;
        }
    }
}
