package org.rollout.api;

import java.util.Arrays;
import java.util.Objects;

/** Shape arithmetic shared by the tensor classes. Rank 0 to 2, row-major, non-negative dims. */
final class TensorShape {
    static final int MAX_RANK = 2;

    private TensorShape() {}

    static int[] check(int[] shape) {
        if (shape == null) {
            throw new IllegalArgumentException("tensor shape must not be null");
        }
        if (shape.length > MAX_RANK) {
            throw new IllegalArgumentException("tensor rank must be 0, 1 or 2, got shape " + Arrays.toString(shape));
        }
        for (int d : shape) {
            if (d < 0) {
                throw new IllegalArgumentException("tensor dims must be >= 0, got shape " + Arrays.toString(shape));
            }
        }
        return shape.clone();
    }

    static int numel(int[] shape) {
        long n = 1;
        for (int d : shape) {
            n *= d;
        }
        if (n > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("tensor too large: shape " + Arrays.toString(shape));
        }
        return (int) n;
    }

    static void checkLength(int length, int[] shape) {
        int numel = numel(shape);
        if (length != numel) {
            throw new IllegalArgumentException("data length " + length + " does not match shape "
                    + Arrays.toString(shape) + " (" + numel + " elements)");
        }
    }

    static int flat(int[] shape, int i) {
        if (shape.length != 1) {
            throw new IllegalStateException(
                    "get(i) needs a rank-1 tensor, this one has shape " + Arrays.toString(shape));
        }
        return Objects.checkIndex(i, shape[0]);
    }

    static int flat(int[] shape, int i, int j) {
        if (shape.length != 2) {
            throw new IllegalStateException(
                    "get(i, j) needs a rank-2 tensor, this one has shape " + Arrays.toString(shape));
        }
        return Objects.checkIndex(i, shape[0]) * shape[1] + Objects.checkIndex(j, shape[1]);
    }

    static void checkScalar(int[] shape) {
        if (shape.length != 0 && numel(shape) != 1) {
            throw new IllegalStateException("item() needs exactly one element, shape is " + Arrays.toString(shape));
        }
    }

    /** Shape of row {@code i}: drops dim 0. */
    static int[] rowShape(int[] shape, int i) {
        if (shape.length == 0) {
            throw new IllegalStateException("a rank-0 tensor has no rows");
        }
        Objects.checkIndex(i, shape[0]);
        return Arrays.copyOfRange(shape, 1, shape.length);
    }

    static int rowStride(int[] shape) {
        int s = 1;
        for (int k = 1; k < shape.length; k++) {
            s *= shape[k];
        }
        return s;
    }

    static int[] sliceShape(int[] shape, int from, int to) {
        if (shape.length == 0) {
            throw new IllegalStateException("a rank-0 tensor cannot be sliced");
        }
        if (from < 0 || to < from || to > shape[0]) {
            throw new IndexOutOfBoundsException(
                    "slice [" + from + ", " + to + ") out of range for dim 0 of size " + shape[0]);
        }
        int[] s = shape.clone();
        s[0] = to - from;
        return s;
    }

    static String describe(DType dtype, int[] shape) {
        return dtype + Arrays.toString(shape);
    }
}
