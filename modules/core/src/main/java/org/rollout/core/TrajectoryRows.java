package org.rollout.core;

import org.rollout.api.BoolTensor;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.api.TensorDict;

/**
 * Builds the one-row trajectory of a single-turn episode exactly as AReaL's RLVR workflow does
 * (semantics §3.3), plus {@code is_truncated}:
 *
 * <pre>
 *   input_ids       prompt ++ output                      int32 [1, L]
 *   attention_mask  all true                              bool  [1, L]
 *   loss_mask       0 × prompt, 1 × output                int32 [1, L]
 *   logprobs        0.0 × prompt, output logprobs         float32 [1, L]
 *   versions        −1 × prompt, output versions          int32 [1, L]
 *   turn_ids        −1 × prompt, 0 × output               int32 [1, L]
 *   rewards         [reward]                              float32 [1]
 *   is_truncated    [stop_reason == length]               bool  [1]
 * </pre>
 */
public final class TrajectoryRows {
    private TrajectoryRows() {}

    /** The row of {@code response} with {@code reward}. */
    public static TensorDict singleTurn(ModelResponse response, double reward) {
        int p = response.inputLength();
        int n = response.outputLength();
        int l = p + n;
        int[] prompt = response.inputTokens();
        int[] output = response.outputTokens();
        float[] logprobs = response.outputLogprobs();
        int[] versions = response.outputVersions();
        Int32Tensor.Builder ids =
                Int32Tensor.builder(1, l).copyFrom(0, prompt, 0, p).copyFrom(p, output, 0, n);
        Int32Tensor.Builder mask = Int32Tensor.builder(1, l).fill(p, l, 1);
        Float32Tensor.Builder lp = Float32Tensor.builder(1, l).copyFrom(p, logprobs, 0, n);
        Int32Tensor.Builder ver = Int32Tensor.builder(1, l).fill(0, p, -1).copyFrom(p, versions, 0, n);
        Int32Tensor.Builder turns = Int32Tensor.builder(1, l).fill(0, p, -1);
        return TensorDict.builder()
                .put(TensorDict.INPUT_IDS, ids.build())
                .put(TensorDict.ATTENTION_MASK, BoolTensor.filled(true, 1, l))
                .put(TensorDict.LOSS_MASK, mask.build())
                .put(TensorDict.LOGPROBS, lp.build())
                .put(TensorDict.VERSIONS, ver.build())
                .put(TensorDict.TURN_IDS, turns.build())
                .put(TensorDict.REWARDS, Float32Tensor.vector((float) reward))
                .put(TensorDict.IS_TRUNCATED, BoolTensor.vector(response.stopReason() == StopReason.LENGTH))
                .build();
    }
}
