package org.rollout.workflows;

import java.util.Arrays;
import org.rollout.api.BoolTensor;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.ModelResponse;
import org.rollout.api.TensorDict;

/**
 * One trajectory row being assembled, token by token, in the layout of semantics §3.2: context tokens
 * (prompts, feedback turns) and generated tokens, each with its loss mask, logprob, version and
 * turn id.
 *
 * <pre>
 *   position      input_ids  loss_mask  logprobs  versions  turn_ids
 *   context       token      0          0.0       -1        -1
 *   output of t   token      1          logprob   version   t
 * </pre>
 *
 * <p>{@link #toTensorDict} packs it as one batch-first row: {@code [1, L]} tensors, {@code
 * rewards [1]}, {@code is_truncated [1]}. Mutable, confined to the episode's thread.
 */
final class TrajectoryRow {
    private int[] ids = new int[64];
    private int[] lossMask = new int[64];
    private float[] logprobs = new float[64];
    private int[] versions = new int[64];
    private int[] turnIds = new int[64];
    private int length;

    /** The number of tokens so far. */
    int length() {
        return length;
    }

    /** The tokens so far. */
    int[] tokens() {
        return Arrays.copyOf(ids, length);
    }

    /** Appends context tokens: not trained on, no version, no turn. */
    void appendContext(int[] tokens) {
        ensure(tokens.length);
        for (int token : tokens) {
            ids[length] = token;
            lossMask[length] = 0;
            logprobs[length] = 0f;
            versions[length] = -1;
            turnIds[length] = -1;
            length++;
        }
    }

    /** Appends the generated tokens of {@code response} as turn {@code turn}. */
    void appendOutput(ModelResponse response, int turn) {
        int n = response.outputLength();
        ensure(n);
        for (int i = 0; i < n; i++) {
            ids[length] = response.outputToken(i);
            lossMask[length] = 1;
            logprobs[length] = response.outputLogprob(i);
            versions[length] = response.outputVersion(i);
            turnIds[length] = turn;
            length++;
        }
    }

    private void ensure(int extra) {
        int needed = length + extra;
        if (needed > ids.length) {
            int capacity = Math.max(needed, ids.length * 2);
            ids = Arrays.copyOf(ids, capacity);
            lossMask = Arrays.copyOf(lossMask, capacity);
            logprobs = Arrays.copyOf(logprobs, capacity);
            versions = Arrays.copyOf(versions, capacity);
            turnIds = Arrays.copyOf(turnIds, capacity);
        }
    }

    /** The row as a one-row trajectory with {@code reward} and {@code truncated}. */
    TensorDict toTensorDict(double reward, boolean truncated) {
        return TensorDict.builder()
                .put(TensorDict.INPUT_IDS, Int32Tensor.of(Arrays.copyOf(ids, length), 1, length))
                .put(TensorDict.ATTENTION_MASK, BoolTensor.filled(true, 1, length))
                .put(TensorDict.LOSS_MASK, Int32Tensor.of(Arrays.copyOf(lossMask, length), 1, length))
                .put(TensorDict.LOGPROBS, Float32Tensor.of(Arrays.copyOf(logprobs, length), 1, length))
                .put(TensorDict.VERSIONS, Int32Tensor.of(Arrays.copyOf(versions, length), 1, length))
                .put(TensorDict.TURN_IDS, Int32Tensor.of(Arrays.copyOf(turnIds, length), 1, length))
                .put(TensorDict.REWARDS, Float32Tensor.vector((float) reward))
                .put(TensorDict.IS_TRUNCATED, BoolTensor.vector(truncated))
                .build();
    }
}
