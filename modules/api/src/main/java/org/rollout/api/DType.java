package org.rollout.api;

/**
 * The element type of a {@link Tensor}. These are the four dtypes AReaL's trajectories use
 * (semantics §3.2): token ids and masks as int32 or int64, logprobs and rewards as float32, the attention
 * mask as bool.
 */
public enum DType {
    INT32("int32"),
    INT64("int64"),
    FLOAT32("float32"),
    BOOL("bool");

    private final String wireName;

    DType(String wireName) {
        this.wireName = wireName;
    }

    /** The name used in dumps, configs and error messages ({@code "int32"}, ...). */
    public String wireName() {
        return wireName;
    }

    @Override
    public String toString() {
        return wireName;
    }
}
