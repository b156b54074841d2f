package org.rollout.trainer;

import java.util.List;
import java.util.Objects;

/**
 * One tensor of an NCCL weight update ({@code rollout.weight_transfer = nccl}): its parameter name,
 * torch dtype name ({@code bfloat16}, {@code float32}, ..) and shape, in the order the trainer's
 * rank 0 broadcasts the tensors (AReaL's {@code ParamSpec}). See {@link
 * HttpRolloutClient#publishTensors} and docs/inference.md, "NCCL weight updates".
 */
public record TensorSpec(String name, String dtype, List<Long> shape) {
    public TensorSpec {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(dtype, "dtype");
        if (name.isBlank() || dtype.isBlank()) {
            throw new IllegalArgumentException(
                    "a tensor's name and dtype must be non-blank, got '" + name + "', '" + dtype + "'");
        }
        shape = List.copyOf(shape);
        for (Long d : shape) {
            if (d < 0) {
                throw new IllegalArgumentException("tensor '" + name + "': shape " + shape + " has a negative size");
            }
        }
    }
}
