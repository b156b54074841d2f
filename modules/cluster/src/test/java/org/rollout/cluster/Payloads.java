package org.rollout.cluster;

import java.util.List;
import java.util.Map;
import org.rollout.api.BoolTensor;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;

/** Training groups and batches of any size with the usual keys and contents that differ per task. */
final class Payloads {
    /** The Kryo serializer {@code kit}'s actor system binds to large payloads. */
    static KryoPayloadSerializer kryo(org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit kit) {
        try {
            return (KryoPayloadSerializer) org.apache.pekko.serialization.SerializationExtension.get(
                            org.apache.pekko.actor.typed.javadsl.Adapter.toClassic(kit.system()))
                    .serializerFor(Collector.BatchReply.class);
        } catch (java.io.NotSerializableException e) {
            throw new AssertionError(e);
        }
    }

    private Payloads() {}

    /**
     * A group of {@code rows} × {@code length} tokens: input_ids, attention_mask, loss_mask,
     * logprobs, versions ([rows, length]), rewards and is_truncated ([rows]); 17 bytes per token.
     */
    static TrainingGroup group(long taskId, int rows, int length) {
        int n = rows * length;
        int prompt = Math.min(length, 16);
        Int32Tensor.Builder ids = Int32Tensor.builder(rows, length);
        BoolTensor.Builder mask = BoolTensor.builder(rows, length);
        Int32Tensor.Builder loss = Int32Tensor.builder(rows, length);
        Float32Tensor.Builder logprobs = Float32Tensor.builder(rows, length);
        Int32Tensor.Builder versions = Int32Tensor.builder(rows, length);
        int seed = (int) (taskId * 7919);
        for (int k = 0; k < n; k++) {
            int col = k % length;
            boolean generated = col >= prompt;
            ids.set(k, (seed + k * 31) & 0xFFFF);
            mask.set(k, col < length - (k / length) % 7);
            loss.set(k, generated ? 1 : 0);
            logprobs.set(k, generated ? -((seed + k) % 1000) / 250f : 0f);
            versions.set(k, generated ? (int) taskId % 5 : -1);
        }
        float[] rewards = new float[rows];
        boolean[] truncated = new boolean[rows];
        for (int r = 0; r < rows; r++) {
            rewards[r] = (r + taskId) % 3 / 2f;
            truncated[r] = r % 4 == 0;
        }
        TensorDict dict = TensorDict.builder()
                .put(TensorDict.INPUT_IDS, ids.build())
                .put(TensorDict.ATTENTION_MASK, mask.build())
                .put(TensorDict.LOSS_MASK, loss.build())
                .put(TensorDict.LOGPROBS, logprobs.build())
                .put(TensorDict.VERSIONS, versions.build())
                .put(TensorDict.REWARDS, Float32Tensor.vector(rewards))
                .put(TensorDict.IS_TRUNCATED, BoolTensor.vector(truncated))
                .build();
        int[] slots = new int[rows];
        int[] counts = new int[rows];
        for (int r = 0; r < rows; r++) {
            slots[r] = r;
            counts[r] = 1;
        }
        return new TrainingGroup(taskId, 0, dict, slots, counts, 1, 1, 2, 3);
    }

    /** The smallest accepted outcome: one row of one prompt and one generated token at {@code version}. */
    static Collector.GroupFinished oneRowAccepted(long taskId, int attempt, int version) {
        TensorDict rows = TensorDict.builder()
                .put(TensorDict.INPUT_IDS, Int32Tensor.matrix(new int[] {1, 2}))
                .put(TensorDict.ATTENTION_MASK, BoolTensor.filled(true, 1, 2))
                .put(TensorDict.LOSS_MASK, Int32Tensor.matrix(new int[] {0, 1}))
                .put(TensorDict.LOGPROBS, Float32Tensor.of(new float[] {0f, -1f}, 1, 2))
                .put(TensorDict.VERSIONS, Int32Tensor.matrix(new int[] {-1, version}))
                .put(TensorDict.REWARDS, Float32Tensor.vector(1f))
                .build();
        TrainingGroup g = new TrainingGroup(
                taskId, attempt, rows, new int[] {0}, new int[] {1}, version, version, version, version);
        return new Collector.GroupFinished(
                taskId,
                attempt,
                false,
                version,
                version,
                new Collector.Accepted(g),
                Map.of(),
                ScalarStats.Totals.EMPTY,
                1);
    }

    /** An accepted training group's outcome, with metrics and workflow statistics. */
    static Collector.GroupFinished accepted(TrainingGroup g) {
        ScalarStats stats = new ScalarStats();
        stats.scalar("reward", 0.5);
        stats.scalar("reward", 1.0);
        stats.scalar("turns", 3);
        return new Collector.GroupFinished(
                g.taskId(),
                g.attempt(),
                false,
                g.dispatchVersion(),
                g.completionVersion(),
                new Collector.Accepted(g),
                Map.of("group_reward_mean", 0.25, "group_size", (double) g.rowCount()),
                stats.totals(),
                (long) g.rows().tensor(TensorDict.INPUT_IDS).numel());
    }

    /** A batch of {@code groups} groups of {@code rows} × {@code length} tokens. */
    static TrainingBatch batch(long batchId, int groups, int rows, int length) {
        TrainingGroup[] gs = new TrainingGroup[groups];
        for (int i = 0; i < groups; i++) {
            gs[i] = group(batchId * 1000 + i, rows, length);
        }
        return new TrainingBatch(batchId, List.of(gs), 4);
    }
}
