package org.rollout.workflows;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.rollout.api.BoolTensor;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Int64Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.core.TensorDicts;
import org.rollout.trainer.wire.BatchWireFormat;

/**
 * The golden files the Python client's collate() is checked against (clients/python/tests): a
 * batch of three groups of different widths and row counts in RBATCH v1, and what {@link
 * TensorDicts#concatPadded} makes of its groups, encoded as a batch of one group. The files are
 * kept in this module's test resources and in clients/python/tests/data; this test checks that
 * both copies are what the Java side writes today. {@code -Drollout.golden.write=true} rewrites
 * them after a deliberate change of the format or the padding.
 */
class RbatchGoldenFilesTest {
    static final Path JAVA_DIR = Path.of("src/test/resources/rbatch-golden");
    static final Path PYTHON_DIR = Path.of("../../clients/python/tests/data");

    @Test
    void goldenFilesAreWhatTheJavaSideWrites() throws IOException {
        TrainingBatch batch = goldenBatch();
        List<TensorDict> rows = new ArrayList<>();
        batch.groups().forEach(g -> rows.add(g.rows()));
        TensorDict collated = TensorDicts.concatPadded(rows);
        int total = batch.rowCount();
        TrainingBatch collatedBatch = new TrainingBatch(
                batch.batchId(),
                List.of(new TrainingGroup(0, 0, collated, new int[] {0}, new int[] {total}, 0, 0, 0, 0)),
                batch.versionAtHandout());
        byte[] batchBytes = encode(batch);
        byte[] collatedBytes = encode(collatedBatch);
        assertThat(BatchWireFormat.read(new java.io.ByteArrayInputStream(batchBytes)))
                .isEqualTo(batch);
        if (Boolean.getBoolean("rollout.golden.write")) {
            for (Path dir : List.of(JAVA_DIR, PYTHON_DIR)) {
                Files.createDirectories(dir);
                Files.write(dir.resolve("golden-batch.rbatch"), batchBytes);
                Files.write(dir.resolve("golden-collated.rbatch"), collatedBytes);
            }
        }
        for (Path dir : List.of(JAVA_DIR, PYTHON_DIR)) {
            assertThat(Files.readAllBytes(dir.resolve("golden-batch.rbatch")))
                    .as("%s/golden-batch.rbatch (rewrite with -Drollout.golden.write=true)", dir)
                    .isEqualTo(batchBytes);
            assertThat(Files.readAllBytes(dir.resolve("golden-collated.rbatch")))
                    .as("%s/golden-collated.rbatch (rewrite with -Drollout.golden.write=true)", dir)
                    .isEqualTo(collatedBytes);
        }
    }

    /** Three groups: 3 rows × width 5, 1 row × width 9, 2 rows × width 2; every dtype; ranks 0–2. */
    static TrainingBatch goldenBatch() {
        SplittableRandom r = new SplittableRandom(20260101L);
        int[][] shapes = {{3, 5}, {1, 9}, {2, 2}};
        List<TrainingGroup> groups = new ArrayList<>();
        for (int g = 0; g < shapes.length; g++) {
            int rows = shapes[g][0];
            int width = shapes[g][1];
            int n = rows * width;
            int[] ids = new int[n];
            boolean[] mask = new boolean[n];
            int[] lossMask = new int[n];
            float[] logprobs = new float[n];
            int[] versions = new int[n];
            long[] positions = new long[n];
            for (int i = 0; i < rows; i++) {
                int valid = 1 + r.nextInt(width); // right padding within the group, as the engine makes it
                for (int j = 0; j < width; j++) {
                    int k = i * width + j;
                    boolean in = j < valid;
                    ids[k] = in ? r.nextInt(263) : 0;
                    mask[k] = in;
                    lossMask[k] = in && j > 0 && r.nextBoolean() ? 1 : 0;
                    logprobs[k] = lossMask[k] == 1 ? (float) -r.nextDouble(5) : 0f;
                    versions[k] = lossMask[k] == 1 ? r.nextInt(4) : -1;
                    positions[k] = in ? (long) j + (1L << 40) : 0L;
                }
            }
            float[] rewards = new float[rows];
            boolean[] truncated = new boolean[rows];
            for (int i = 0; i < rows; i++) {
                rewards[i] = (float) r.nextDouble();
                truncated[i] = r.nextBoolean();
            }
            TensorDict d = TensorDict.builder()
                    .put(TensorDict.INPUT_IDS, Int32Tensor.of(ids, rows, width))
                    .put(TensorDict.ATTENTION_MASK, BoolTensor.of(mask, rows, width))
                    .put(TensorDict.LOSS_MASK, Int32Tensor.of(lossMask, rows, width))
                    .put(TensorDict.LOGPROBS, Float32Tensor.of(logprobs, rows, width))
                    .put(TensorDict.VERSIONS, Int32Tensor.of(versions, rows, width))
                    .put("position_ids", Int64Tensor.of(positions, rows, width))
                    .put(TensorDict.REWARDS, Float32Tensor.of(rewards, rows))
                    .put(TensorDict.IS_TRUNCATED, BoolTensor.of(truncated, rows))
                    .put(TensorDict.ROLLOUT_REWARD, Float32Tensor.scalar((float) r.nextDouble()))
                    .build();
            int[] slotIndices = new int[rows];
            int[] slotCounts = new int[rows];
            for (int i = 0; i < rows; i++) {
                slotIndices[i] = i;
                slotCounts[i] = 1;
            }
            groups.add(new TrainingGroup(100 + g, g % 2, d, slotIndices, slotCounts, 3 + g, 3 + g, 5, 5));
        }
        return new TrainingBatch(42, groups, 6);
    }

    private static byte[] encode(TrainingBatch b) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BatchWireFormat.write(b, out);
        return out.toByteArray();
    }
}
