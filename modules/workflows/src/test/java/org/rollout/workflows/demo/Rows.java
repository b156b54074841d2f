package org.rollout.workflows.demo;

import java.util.Arrays;
import java.util.List;
import org.rollout.api.BoolTensor;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.core.TensorDicts;
import org.rollout.modelserver.TinyLm;
import org.rollout.modelserver.TinyLmWeights;

/** Hand-built trajectory rows and batches for the trainer's tests. */
final class Rows {
    private Rows() {}

    /** One row: {@code tokens} with loss mask {@code mask}, behaviour logprobs and a reward. */
    static TensorDict row(int[] tokens, int[] mask, float[] behaviour, double reward) {
        int l = tokens.length;
        int[] versions = new int[l];
        int[] turns = new int[l];
        for (int i = 0; i < l; i++) {
            versions[i] = mask[i] == 1 ? 0 : -1;
            turns[i] = mask[i] == 1 ? 0 : -1;
        }
        return TensorDict.builder()
                .put("input_ids", Int32Tensor.of(tokens, 1, l))
                .put("attention_mask", BoolTensor.filled(true, 1, l))
                .put("loss_mask", Int32Tensor.of(mask, 1, l))
                .put("logprobs", Float32Tensor.of(behaviour, 1, l))
                .put("versions", Int32Tensor.of(versions, 1, l))
                .put("turn_ids", Int32Tensor.of(turns, 1, l))
                .put("rewards", Float32Tensor.vector((float) reward))
                .put("is_truncated", BoolTensor.vector(false))
                .build();
    }

    /** A single-turn row whose behaviour logprobs are {@code weights}' own at temperature 1 (on-policy). */
    static TensorDict onPolicy(TinyLmWeights weights, int[] prompt, int[] output, double reward) {
        int[] tokens = concat(prompt, output);
        int[] mask = new int[tokens.length];
        Arrays.fill(mask, prompt.length, tokens.length, 1);
        return row(tokens, mask, behaviour(weights, tokens, mask, 0.0), reward);
    }

    /** The model's logprobs at the masked positions (0 elsewhere), shifted by {@code shift}, as float32. */
    static float[] behaviour(TinyLmWeights weights, int[] tokens, int[] mask, double shift) {
        int first = firstMasked(mask);
        double[] lp = TinyLm.sequenceLogprobs(weights, tokens, first, 1.0);
        float[] out = new float[tokens.length];
        for (int i = first; i < tokens.length; i++) {
            out[i] = mask[i] == 1 ? (float) (lp[i - first] + shift) : 0f;
        }
        return out;
    }

    static int firstMasked(int[] mask) {
        for (int i = 0; i < mask.length; i++) {
            if (mask[i] == 1) {
                return i;
            }
        }
        throw new IllegalArgumentException("no masked position");
    }

    static TrainingGroup group(long taskId, TensorDict... rows) {
        TensorDict merged = TensorDicts.concatPadded(List.of(rows));
        int[] slots = new int[rows.length];
        Arrays.setAll(slots, i -> i);
        int[] counts = new int[rows.length];
        Arrays.fill(counts, 1);
        return new TrainingGroup(taskId, 0, merged, slots, counts, 0, 0, 0, 0);
    }

    static TrainingBatch batch(long id, TrainingGroup... groups) {
        return new TrainingBatch(id, List.of(groups), 0);
    }

    static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
