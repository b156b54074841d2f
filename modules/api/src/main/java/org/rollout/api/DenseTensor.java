package org.rollout.api;

import java.lang.reflect.Array;
import java.util.Arrays;
import java.util.Objects;

/**
 * What the four tensor classes share: shape, offset into a flat row-major primitive array, views
 * ({@code row}, {@code slice}, {@code reshape}), equality and the build-once builder. Only the
 * element storage ({@code A}, a primitive array type) and its typed accessors live in the
 * subclasses.
 *
 * @param <T> the concrete tensor class, returned by the views
 * @param <A> the primitive array type holding the elements
 */
abstract sealed class DenseTensor<T extends DenseTensor<T, A>, A>
        permits Int32Tensor, Int64Tensor, Float32Tensor, BoolTensor {
    /** The storage, shared between a tensor and its views; never written after build. */
    final A data;
    /** Where this tensor's first element lies in {@link #data}. */
    final int offset;

    private final int[] shape;
    final int numel;

    DenseTensor(A data, int offset, int[] shape) {
        this.data = data;
        this.offset = offset;
        this.shape = shape;
        this.numel = TensorShape.numel(shape);
    }

    /** A tensor of this class over {@code data}, which it takes over without copying. */
    abstract T view(A data, int offset, int[] shape);

    /** Whether elements {@code [offset, offset + numel)} equal those of {@code other}. */
    abstract boolean sameElements(T other);

    /** The hash of flat element {@code flatIndex}. */
    abstract int elementHash(int flatIndex);

    public int[] shape() {
        return shape.clone();
    }

    public int rank() {
        return shape.length;
    }

    public int dim(int axis) {
        return shape[Objects.checkIndex(axis, shape.length)];
    }

    public int numel() {
        return numel;
    }

    /** Index into {@link #data} of element {@code i} of a rank-1 tensor. */
    final int index(int i) {
        return offset + TensorShape.flat(shape, i);
    }

    /** Index into {@link #data} of element {@code (i, j)} of a rank-2 tensor. */
    final int index(int i, int j) {
        return offset + TensorShape.flat(shape, i, j);
    }

    /** Index into {@link #data} of the single element. */
    final int itemIndex() {
        TensorShape.checkScalar(shape);
        return offset;
    }

    /** Index into {@link #data} of flat element {@code flatIndex}. */
    final int flatIndex(int flatIndex) {
        return offset + Objects.checkIndex(flatIndex, numel);
    }

    /** Copies {@code length} elements starting at flat index {@code from} into {@code dest}. */
    final void copyElements(int from, A dest, int destPos, int length) {
        Objects.checkFromIndexSize(from, length, numel);
        System.arraycopy(data, offset + from, dest, destPos, length);
    }

    /** Row {@code i} along dim 0 as a view of rank {@code rank() - 1}. */
    public T row(int i) {
        int[] rs = TensorShape.rowShape(shape, i);
        return view(data, offset + i * TensorShape.rowStride(shape), rs);
    }

    /** Rows {@code [from, to)} along dim 0 as a view of the same rank. */
    public T slice(int from, int to) {
        int[] ss = TensorShape.sliceShape(shape, from, to);
        return view(data, offset + from * TensorShape.rowStride(shape), ss);
    }

    /** The same elements under another shape with the same number of elements, as a view. */
    public T reshape(int... newShape) {
        int[] s = TensorShape.check(newShape);
        TensorShape.checkLength(numel, s);
        return view(data, offset, s);
    }

    @Override
    @SuppressWarnings("unchecked")
    public final boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (o == null || o.getClass() != getClass()) {
            return false;
        }
        DenseTensor<T, A> t = (DenseTensor<T, A>) o;
        return Arrays.equals(shape, t.shape) && sameElements((T) t);
    }

    @Override
    public final int hashCode() {
        int h = Arrays.hashCode(shape);
        for (int k = 0; k < numel; k++) {
            h = 31 * h + elementHash(k);
        }
        return h;
    }

    @Override
    public final String toString() {
        return TensorFormat.format((Tensor) this);
    }

    /** The shape for {@code of(values, shape)}: rank 1 when no shape is given, checked against the length. */
    static int[] shapeOf(int length, int[] shape) {
        int[] s = shape.length == 0 ? new int[] {length} : TensorShape.check(shape);
        TensorShape.checkLength(length, s);
        return s;
    }

    /** The shape {@code [rows, width]} of a matrix; every row must have the same length. */
    static int[] matrixShape(Object[] rows) {
        int width = rows.length == 0 ? 0 : Array.getLength(rows[0]);
        for (int i = 0; i < rows.length; i++) {
            int len = Array.getLength(rows[i]);
            if (len != width) {
                throw new IllegalArgumentException(
                        "matrix rows must have equal length: row 0 has " + width + ", row " + i + " has " + len);
            }
        }
        return new int[] {rows.length, width};
    }

    /** The rows laid end to end in {@code dest}, which must be large enough. */
    static <A> A concatRows(A[] rows, A dest) {
        int pos = 0;
        for (A row : rows) {
            int len = Array.getLength(row);
            System.arraycopy(row, 0, dest, pos, len);
            pos += len;
        }
        return dest;
    }

    /**
     * What the builders share: the shape, the array being filled, and the rule that the array is
     * handed over once. A builder is not thread-safe.
     *
     * @param <A> the primitive array type being filled
     */
    abstract static class DenseBuilder<A> {
        final int[] shape;
        private A data;

        DenseBuilder(int[] shape, A data) {
            this.shape = shape;
            this.data = data;
        }

        /** The array being filled; fails once the tensor has been built. */
        final A live() {
            if (data == null) {
                throw new IllegalStateException("this builder has already built its tensor");
            }
            return data;
        }

        /** Flat index of element {@code (i, j)} of a rank-2 tensor. */
        final int flat(int i, int j) {
            return TensorShape.flat(shape, i, j);
        }

        /** Hands the array over; the builder cannot be used afterwards. */
        final A take() {
            A d = live();
            data = null;
            return d;
        }
    }
}
