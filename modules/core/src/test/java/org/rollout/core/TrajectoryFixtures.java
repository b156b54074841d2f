package org.rollout.core;

import java.time.Duration;
import org.rollout.api.BoolTensor;
import org.rollout.api.EpisodeResult;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Interaction;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.api.TensorDict;

/** Builders of trajectory rows and interactions in the shapes the built-in workflows produce. */
final class TrajectoryFixtures {
    private TrajectoryFixtures() {}

    /**
     * One row in the RLVR layout (semantics §3.3): the first {@code promptLen} of {@code ids} are prompt,
     * the rest generated at {@code version} with logprob −0.5.
     */
    static TensorDict row(int[] ids, int promptLen, int version, float reward) {
        int len = ids.length;
        Int32Tensor.Builder lossMask = Int32Tensor.builder(1, len);
        Float32Tensor.Builder logprobs = Float32Tensor.builder(1, len);
        Int32Tensor.Builder versions = Int32Tensor.builder(1, len);
        Int32Tensor.Builder turnIds = Int32Tensor.builder(1, len);
        versions.fill(0, promptLen, -1).fill(promptLen, len, version);
        turnIds.fill(0, promptLen, -1);
        lossMask.fill(promptLen, len, 1);
        logprobs.fill(promptLen, len, -0.5f);
        return TensorDict.builder()
                .put(TensorDict.INPUT_IDS, Int32Tensor.of(ids, 1, len))
                .put(TensorDict.LOSS_MASK, lossMask.build())
                .put(TensorDict.LOGPROBS, logprobs.build())
                .put(TensorDict.VERSIONS, versions.build())
                .put(TensorDict.TURN_IDS, turnIds.build())
                .put(TensorDict.ATTENTION_MASK, BoolTensor.filled(true, 1, len))
                .put(TensorDict.REWARDS, Float32Tensor.vector(reward))
                .build();
    }

    /** A one-row trajectory of {@code len} tokens (two of them prompt) with reward {@code reward}. */
    static EpisodeResult.Trajectory trajectory(int len, float reward) {
        int[] ids = new int[len];
        for (int i = 0; i < len; i++) {
            ids[i] = 100 + i;
        }
        return EpisodeResult.trajectory(row(ids, Math.min(2, len), 1, reward));
    }

    /** A response to {@code input} that generated {@code output} at {@code version}, logprob −0.25 each. */
    static ModelResponse response(int[] input, int[] output, int version) {
        float[] logprobs = new float[output.length];
        int[] versions = new int[output.length];
        java.util.Arrays.fill(logprobs, -0.25f);
        java.util.Arrays.fill(versions, version);
        return ModelResponse.of(input, output, logprobs, versions, StopReason.STOP, Duration.ofMillis(5));
    }

    /** An interaction that generated {@code output} from {@code input} at version 3. */
    static Interaction interaction(String id, int[] input, int[] output, Double reward) {
        return Interaction.builder(id)
                .modelResponse(response(input, output, 3))
                .reward(reward)
                .build();
    }

    /** A simple interaction: prompt [1, 2], output [3], the given reward. */
    static Interaction interaction(String id, Double reward) {
        return interaction(id, new int[] {1, 2}, new int[] {3}, reward);
    }
}
