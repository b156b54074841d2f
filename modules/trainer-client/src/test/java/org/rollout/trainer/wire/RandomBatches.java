package org.rollout.trainer.wire;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.rollout.api.BoolTensor;
import org.rollout.api.DType;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Int64Tensor;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.testing.Gen;

/** Random, valid training batches: every dtype, ranks 0–2, empty groups and empty batches included. */
final class RandomBatches {
    private RandomBatches() {}

    static Gen<TrainingBatch> batches(int maxGroups, int maxRows, int maxLength) {
        return r -> {
            int groups = r.nextInt(maxGroups + 1);
            List<TrainingGroup> gs = new ArrayList<>();
            for (int i = 0; i < groups; i++) {
                gs.add(group(r, maxRows, maxLength));
            }
            return new TrainingBatch(r.nextLong(), gs, r.nextInt());
        };
    }

    static TrainingGroup group(SplittableRandom r, int maxRows, int maxLength) {
        int rows = r.nextInt(maxRows + 1);
        int length = r.nextInt(maxLength + 1);
        TensorDict.Builder d = TensorDict.builder();
        // The first rank-2 key fixes the row count the group's slot counts must sum to.
        d.put(TensorDict.ATTENTION_MASK, tensor(r, DType.BOOL, rows, length));
        int extra = r.nextInt(6);
        for (int k = 0; k < extra; k++) {
            DType dtype = DType.values()[r.nextInt(DType.values().length)];
            int rank = r.nextInt(3);
            int[] shape = rank == 0 ? new int[0] : rank == 1 ? new int[] {rows} : new int[] {rows, length};
            d.put("key_" + k + "_" + dtype, tensor(r, dtype, shape));
        }
        List<Integer> counts = new ArrayList<>();
        int left = rows;
        while (left > 0) {
            int c = 1 + r.nextInt(left);
            counts.add(c);
            left -= c;
        }
        int[] slotRowCounts = counts.stream().mapToInt(Integer::intValue).toArray();
        int[] slotIndices = new int[slotRowCounts.length];
        for (int s = 0; s < slotIndices.length; s++) {
            slotIndices[s] = s * 2 + r.nextInt(2);
        }
        return new TrainingGroup(
                r.nextLong(),
                r.nextInt(3),
                d.build(),
                slotIndices,
                slotRowCounts,
                r.nextInt(100),
                r.nextInt(100),
                r.nextInt(100),
                r.nextInt(100));
    }

    static Tensor tensor(SplittableRandom r, DType dtype, int... shape) {
        int n = 1;
        for (int s : shape) {
            n *= s;
        }
        return switch (dtype) {
            case INT32 -> {
                int[] v = new int[n];
                for (int i = 0; i < n; i++) {
                    v[i] = r.nextInt();
                }
                yield Int32Tensor.of(v).reshape(shape);
            }
            case INT64 -> {
                long[] v = new long[n];
                for (int i = 0; i < n; i++) {
                    v[i] = r.nextLong();
                }
                yield Int64Tensor.of(v).reshape(shape);
            }
            case FLOAT32 -> {
                float[] v = new float[n];
                for (int i = 0; i < n; i++) {
                    v[i] = Float.intBitsToFloat(r.nextInt());
                }
                yield Float32Tensor.of(v).reshape(shape);
            }
            case BOOL -> {
                boolean[] v = new boolean[n];
                for (int i = 0; i < n; i++) {
                    v[i] = r.nextBoolean();
                }
                yield BoolTensor.of(v).reshape(shape);
            }
        };
    }
}
