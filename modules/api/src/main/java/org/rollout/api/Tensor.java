package org.rollout.api;

/**
 * An immutable, typed, shaped, dense tensor: the unit of trajectory data (semantics §3.2).
 *
 * <pre>
 *   rank 0   scalar          e.g. rollout_reward
 *   rank 1   [B]             e.g. rewards
 *   rank 2   [B, L]          e.g. input_ids, attention_mask, loss_mask, logprobs, versions
 * </pre>
 *
 * <p>Tensors are batch-first: dim 0 is the row (one sequence of one episode). Storage is a flat
 * row-major primitive array; {@link #row(int)}, {@link #slice(int, int)} and {@link #reshape(int...)}
 * are views that share it, and since nothing can write to a built tensor, views are as safe as
 * copies. Arrays passed to the factories are copied; arrays returned by {@code toArray()} are
 * fresh. The only way to fill a tensor without a copy is its {@code Builder}, which hands its
 * array over once, on {@code build()}.
 *
 * <p>Thread safety: tensors are immutable and may be shared freely between threads and actors.
 */
public sealed interface Tensor permits Int32Tensor, Int64Tensor, Float32Tensor, BoolTensor {

    /** The element type. */
    DType dtype();

    /** A copy of the shape; its length is the rank (0, 1 or 2). */
    int[] shape();

    /** 0, 1 or 2. */
    int rank();

    /** The size of dimension {@code axis}. */
    int dim(int axis);

    /** The number of elements (1 for a scalar). */
    int numel();

    /** Row {@code i} along dim 0 as a view of rank {@code rank() - 1}. */
    Tensor row(int i);

    /** Rows {@code [from, to)} along dim 0 as a view of the same rank. */
    Tensor slice(int from, int to);

    /** The same elements under another shape with the same number of elements, as a view. */
    Tensor reshape(int... shape);

    /** Element {@code flatIndex} (row-major) widened to a double; booleans read as 0 or 1. */
    double getDouble(int flatIndex);

    /** Element {@code flatIndex} (row-major) as a long; floats are truncated, booleans read as 0 or 1. */
    long getLong(int flatIndex);

    /** For messages: {@code "int32[2, 7]"}. */
    default String describe() {
        return TensorShape.describe(dtype(), shape());
    }

    /** A tensor of the given dtype and shape filled with zeros ({@code false} for bool). */
    static Tensor zeros(DType dtype, int... shape) {
        return switch (dtype) {
            case INT32 -> Int32Tensor.filled(0, shape);
            case INT64 -> Int64Tensor.filled(0L, shape);
            case FLOAT32 -> Float32Tensor.filled(0f, shape);
            case BOOL -> BoolTensor.filled(false, shape);
        };
    }
}
