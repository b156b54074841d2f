package org.rollout.api;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * An immutable, insertion-ordered map from key to {@link Tensor}: one episode's trajectory rows,
 * or a whole group's after merging (semantics §3.2).
 *
 * <p>The keys the engine understands, with the dtype the built-in workflows use:
 *
 * <pre>
 *   input_ids        [B, L] int32   prompt + completion tokens, right-padded
 *   attention_mask   [B, L] bool    true on real tokens; the row sum is the valid length
 *   loss_mask        [B, L] int32   1 on generated tokens, 0 on prompt and context
 *   logprobs         [B, L] float32 0 on prompt positions, the sampling logprob on generated ones
 *   versions         [B, L] int32   -1 off generated positions, the weight version on generated ones
 *   rewards          [B]    float32 one scalar reward per row
 *   turn_ids         [B, L] int32   -1 off generated positions, turn index t on turn t's tokens
 *   original_rewards [B]    float32 the reward before rollout-time normalisation
 *   is_truncated     [B]    bool    the row's generation stopped on its length budget
 *   rollout_reward   []     float32 the logical rollout's reference reward (semantics §5.6)
 * </pre>
 *
 * <p>Other keys travel untouched. A dict whose rows disagree on {@code B}, or whose tensors have
 * a rank above 2, is caught by the trajectory format check, not here.
 */
public final class TensorDict {
    public static final String INPUT_IDS = "input_ids";
    public static final String ATTENTION_MASK = "attention_mask";
    public static final String LOSS_MASK = "loss_mask";
    public static final String LOGPROBS = "logprobs";
    public static final String VERSIONS = "versions";
    public static final String REWARDS = "rewards";
    public static final String TURN_IDS = "turn_ids";
    public static final String ORIGINAL_REWARDS = "original_rewards";
    public static final String IS_TRUNCATED = "is_truncated";
    public static final String ROLLOUT_REWARD = "rollout_reward";

    private static final TensorDict EMPTY = new TensorDict(new LinkedHashMap<>());

    private final Map<String, Tensor> tensors;

    private TensorDict(LinkedHashMap<String, Tensor> tensors) {
        this.tensors = Collections.unmodifiableMap(tensors);
    }

    /** The dict with no keys. */
    public static TensorDict empty() {
        return EMPTY;
    }

    /** A dict of the given entries, in the map's iteration order. */
    public static TensorDict of(Map<String, ? extends Tensor> entries) {
        Builder b = builder();
        entries.forEach(b::put);
        return b.build();
    }

    public static Builder builder() {
        return new Builder(new LinkedHashMap<>());
    }

    /** A builder that starts from this dict's entries. */
    public Builder toBuilder() {
        return new Builder(new LinkedHashMap<>(tensors));
    }

    /** The tensor under {@code key}, or null when absent. */
    public Tensor get(String key) {
        return tensors.get(key);
    }

    public boolean has(String key) {
        return tensors.containsKey(key);
    }

    /** The tensor under {@code key}; a missing key is an error that names it and the keys present. */
    public Tensor tensor(String key) {
        Tensor t = tensors.get(key);
        if (t == null) {
            throw new IllegalArgumentException("missing tensor key '" + key + "' (keys: " + tensors.keySet() + ")");
        }
        return t;
    }

    /** The int32 tensor under {@code key}; a missing key or another dtype is an error naming the key. */
    public Int32Tensor int32(String key) {
        return typed(key, Int32Tensor.class, DType.INT32);
    }

    /** The int64 tensor under {@code key}; a missing key or another dtype is an error naming the key. */
    public Int64Tensor int64(String key) {
        return typed(key, Int64Tensor.class, DType.INT64);
    }

    /** The float32 tensor under {@code key}; a missing key or another dtype is an error naming the key. */
    public Float32Tensor float32(String key) {
        return typed(key, Float32Tensor.class, DType.FLOAT32);
    }

    /** The bool tensor under {@code key}; a missing key or another dtype is an error naming the key. */
    public BoolTensor bool(String key) {
        return typed(key, BoolTensor.class, DType.BOOL);
    }

    private <T extends Tensor> T typed(String key, Class<T> type, DType dtype) {
        Tensor t = tensor(key);
        if (!type.isInstance(t)) {
            throw new IllegalArgumentException(
                    "tensor '" + key + "' has dtype " + t.dtype() + ", expected " + dtype + " (" + t.describe() + ")");
        }
        return type.cast(t);
    }

    /** The keys in insertion order. */
    public Set<String> keys() {
        return tensors.keySet();
    }

    /** An unmodifiable view of the entries in insertion order. */
    public Map<String, Tensor> asMap() {
        return tensors;
    }

    public int size() {
        return tensors.size();
    }

    public boolean isEmpty() {
        return tensors.isEmpty();
    }

    public void forEach(BiConsumer<String, Tensor> action) {
        tensors.forEach(action);
    }

    /**
     * The number of rows, as AReaL's {@code get_batch_size} reads it: dim 0 of
     * {@code attention_mask} when present, else dim 0 of the first tensor of rank ≥ 1, else 0.
     */
    public int batchSize() {
        Tensor mask = tensors.get(ATTENTION_MASK);
        if (mask != null && mask.rank() >= 1) {
            return mask.dim(0);
        }
        for (Tensor t : tensors.values()) {
            if (t.rank() >= 1) {
                return t.dim(0);
            }
        }
        return 0;
    }

    /** A copy with {@code key} set to {@code tensor}; an existing key keeps its position. */
    public TensorDict with(String key, Tensor tensor) {
        return toBuilder().put(key, tensor).build();
    }

    /** A copy without {@code key} (the same dict when absent). */
    public TensorDict without(String key) {
        if (!tensors.containsKey(key)) {
            return this;
        }
        return toBuilder().remove(key).build();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorDict d && tensors.equals(d.tensors);
    }

    @Override
    public int hashCode() {
        return tensors.hashCode();
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("TensorDict{");
        tensors.forEach((k, v) ->
                sb.append(sb.length() > 11 ? ", " : "").append(k).append('=').append(v.describe()));
        return sb.append('}').toString();
    }

    /** Collects entries in insertion order; a builder builds once. */
    public static final class Builder {
        private LinkedHashMap<String, Tensor> entries;

        private Builder(LinkedHashMap<String, Tensor> entries) {
            this.entries = entries;
        }

        /** Sets {@code key}; null keys and tensors are errors. */
        public Builder put(String key, Tensor tensor) {
            Objects.requireNonNull(key, "tensor key");
            Objects.requireNonNull(tensor, () -> "tensor for key '" + key + "'");
            live().put(key, tensor);
            return this;
        }

        public Builder remove(String key) {
            live().remove(key);
            return this;
        }

        public TensorDict build() {
            TensorDict d = live().isEmpty() ? EMPTY : new TensorDict(entries);
            entries = null;
            return d;
        }

        private LinkedHashMap<String, Tensor> live() {
            if (entries == null) {
                throw new IllegalStateException("this builder has already built its dict");
            }
            return entries;
        }
    }
}
