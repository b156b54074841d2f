package org.rollout.trainer.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.rollout.api.BoolTensor;
import org.rollout.api.DType;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int64Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.testing.Property;

class BatchWireFormatTest {

    /** Batch 7 at version 3: task 42, two rows of three tokens, one slot per row. */
    private static TrainingBatch small() {
        TensorDict rows = TensorDict.builder()
                .put(
                        TensorDict.ATTENTION_MASK,
                        BoolTensor.matrix(new boolean[] {true, true, false}, new boolean[] {true, true, true}))
                .put(TensorDict.LOGPROBS, Float32Tensor.matrix(new float[] {0f, -0.5f, 0f}, new float[] {0f, -1f, -2f}))
                .put(TensorDict.REWARDS, Float32Tensor.vector(1f, 0f))
                .build();
        TrainingGroup g = new TrainingGroup(42, 1, rows, new int[] {0, 1}, new int[] {1, 1}, 2, 2, 3, 3);
        return new TrainingBatch(7, List.of(g), 3);
    }

    private static byte[] encode(TrainingBatch b) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        long n = BatchWireFormat.write(b, out);
        assertThat(n).isEqualTo(out.size());
        // The prepared form knows its length before writing and writes the same bytes.
        BatchWireFormat.Prepared prepared = BatchWireFormat.prepare(b);
        assertThat(prepared.length()).isEqualTo(n);
        ByteArrayOutputStream again = new ByteArrayOutputStream();
        assertThat(prepared.writeTo(again)).isEqualTo(n);
        assertThat(again.toByteArray()).isEqualTo(out.toByteArray());
        return out.toByteArray();
    }

    private static TrainingBatch decode(byte[] bytes) throws IOException {
        return BatchWireFormat.read(new ByteArrayInputStream(bytes));
    }

    @Test
    void everyBatchReadsBackEqualWithItsTensorOrderAndMetadata() {
        Property.forAll("RBATCH round trip", 150, RandomBatches.batches(4, 5, 7), batch -> {
            TrainingBatch back = decode(encode(batch));
            assertThat(back).isEqualTo(batch);
            for (int g = 0; g < batch.size(); g++) {
                assertThat(back.groups().get(g).rows().keys())
                        .containsExactlyElementsOf(batch.groups().get(g).rows().keys());
            }
        });
    }

    @Test
    void tensorsLargerThanOneChunkReadBackEqual() throws IOException {
        SplittableRandom r = new SplittableRandom(5);
        for (DType dtype : DType.values()) {
            // 150 kB of mask, then 0.6 to 2.4 MB: tensors that cross the writer's 1 MiB buffer mid-way.
            TensorDict rows = TensorDict.builder()
                    .put(TensorDict.ATTENTION_MASK, RandomBatches.tensor(r, DType.BOOL, 3, 50_001))
                    .put("big", RandomBatches.tensor(r, dtype, 3, 50_001))
                    .put("bigger", RandomBatches.tensor(r, dtype, 3, 100_003))
                    .build();
            TrainingBatch b = new TrainingBatch(
                    1, List.of(new TrainingGroup(9, 0, rows, new int[] {0}, new int[] {3}, 0, 0, 0, 0)), 0);
            assertThat(decode(encode(b))).as(dtype.wireName()).isEqualTo(b);
        }
    }

    @Test
    void floatBitsTravelUnchanged() throws IOException {
        float[] odd = {-0.0f, Float.MIN_VALUE, Float.NaN, Float.intBitsToFloat(0x7fc00123), Float.NEGATIVE_INFINITY};
        TensorDict rows = TensorDict.builder()
                .put(TensorDict.LOGPROBS, Float32Tensor.of(odd, 1, odd.length))
                .build();
        TrainingBatch b = new TrainingBatch(
                1, List.of(new TrainingGroup(1, 0, rows, new int[] {0}, new int[] {1}, 0, 0, 0, 0)), 0);
        float[] back = decode(encode(b))
                .groups()
                .get(0)
                .rows()
                .float32(TensorDict.LOGPROBS)
                .toArray();
        for (int i = 0; i < odd.length; i++) {
            assertThat(Float.floatToRawIntBits(back[i])).isEqualTo(Float.floatToRawIntBits(odd[i]));
        }
    }

    @Test
    void writesTheDocumentedLayout() throws IOException {
        byte[] bytes = encode(small());
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(new String(bytes, 0, 6, StandardCharsets.US_ASCII)).isEqualTo("RBATCH");
        assertThat(b.getShort(6)).isEqualTo((short) 1);
        assertThat(b.getLong(8)).isEqualTo(7L);
        assertThat(b.getInt(16)).isEqualTo(3);
        assertThat(b.getInt(20)).isEqualTo(1);
        int metaLength = b.getInt(24);
        String meta = new String(bytes, 28, metaLength, StandardCharsets.UTF_8);
        assertThat(meta)
                .isEqualTo("{\"task_id\":42,\"attempt\":1,\"slot_indices\":[0,1],\"slot_row_counts\":[1,1],"
                        + "\"dispatch_version\":2,\"head_version\":2,\"tail_version\":3,\"completion_version\":3,"
                        + "\"tensors\":[{\"key\":\"attention_mask\",\"dtype\":\"bool\",\"shape\":[2,3],\"nbytes\":6},"
                        + "{\"key\":\"logprobs\",\"dtype\":\"float32\",\"shape\":[2,3],\"nbytes\":24},"
                        + "{\"key\":\"rewards\",\"dtype\":\"float32\",\"shape\":[2],\"nbytes\":8}]}");
        int data = 28 + metaLength;
        assertThat(Arrays.copyOfRange(bytes, data, data + 6)).containsExactly(1, 1, 0, 1, 1, 1);
        assertThat(b.getFloat(data + 6 + 4)).isEqualTo(-0.5f);
        assertThat(b.getFloat(data + 6 + 24)).isEqualTo(1f);
        assertThat(new String(bytes, bytes.length - 4, 4, StandardCharsets.US_ASCII))
                .isEqualTo("REND");
        assertThat(bytes.length).isEqualTo(data + 6 + 24 + 8 + 4);
    }

    @Test
    void anEmptyBatchIsAHeaderAndATrailer() throws IOException {
        TrainingBatch empty = new TrainingBatch(3, List.of(), 0);
        byte[] bytes = encode(empty);
        assertThat(bytes).hasSize(BatchWireFormat.HEADER_BYTES + 4);
        assertThat(decode(bytes)).isEqualTo(empty);
    }

    @Test
    void rejectsAStreamWithoutTheMagicShowingWhatCame() {
        byte[] bytes = "<html>not a batch at all</html>".getBytes(StandardCharsets.US_ASCII);
        assertThatThrownBy(() -> decode(bytes))
                .isInstanceOf(BatchFormatException.class)
                .hasMessage("not a rollout batch stream: expected the magic \"RBATCH\", got 0x3c68746d6c3e");
    }

    @Test
    void rejectsAnotherFormatVersion() throws IOException {
        byte[] bytes = encode(small());
        bytes[6] = 2;
        assertThatThrownBy(() -> decode(bytes))
                .isInstanceOf(BatchFormatException.class)
                .hasMessage("unsupported batch format version 2 (this reader knows 1)");
    }

    @Test
    void aStreamCutInsideATensorNamesTheBatchTaskAndKey() throws IOException {
        byte[] bytes = encode(small());
        int metaLength = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getInt(24);
        int cut = 28 + metaLength + 6 + 10; // 10 of logprobs' 24 bytes
        assertThatThrownBy(() -> decode(Arrays.copyOf(bytes, cut)))
                .isInstanceOf(BatchFormatException.class)
                .hasMessage("batch 7, group 0 (task 42), tensor 'logprobs': the stream ended after 10 of the 24 bytes"
                        + " of the data (at byte " + cut + "); the batch was cut off");
    }

    @Test
    void aStreamCutInTheHeaderSaysSo() {
        assertThatThrownBy(() -> decode(new byte[] {'R', 'B'}))
                .isInstanceOf(BatchFormatException.class)
                .hasMessage(
                        "the stream ended after 2 of the 24 bytes of the header (at byte 2); the batch was cut off");
    }

    @Test
    void rejectsABoolByteOtherThanZeroOrOne() throws IOException {
        byte[] bytes = encode(small());
        int metaLength = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getInt(24);
        bytes[28 + metaLength + 2] = 5;
        assertThatThrownBy(() -> decode(bytes))
                .isInstanceOf(BatchFormatException.class)
                .hasMessage("batch 7, group 0 (task 42), tensor 'attention_mask': bool element 2 is 5, must be 0 or 1");
    }

    @Test
    void rejectsAWrongTrailer() throws IOException {
        byte[] bytes = encode(small());
        bytes[bytes.length - 1] = 'X';
        assertThatThrownBy(() -> decode(bytes))
                .isInstanceOf(BatchFormatException.class)
                .hasMessageStartingWith("batch 7: expected the trailer \"REND\" after 1 groups at byte ")
                .hasMessageEndingWith(", got 0x52454e58");
    }

    @Test
    void rejectsAnUnknownDtypeListingTheAllowedOnes() {
        byte[] bytes = stream(meta("{\"key\":\"x\",\"dtype\":\"float16\",\"shape\":[1],\"nbytes\":2}", "[1]"), 2);
        assertThatThrownBy(() -> decode(bytes))
                .isInstanceOf(BatchFormatException.class)
                .hasMessage("batch 5, group 0 (task 11), tensor 'x': unknown dtype 'float16'"
                        + " (allowed: int32, int64, float32, bool)");
    }

    @Test
    void rejectsNbytesThatDisagreeWithTheShape() {
        byte[] bytes = stream(meta("{\"key\":\"x\",\"dtype\":\"int64\",\"shape\":[1,2],\"nbytes\":8}", "[1]"), 8);
        assertThatThrownBy(() -> decode(bytes))
                .isInstanceOf(BatchFormatException.class)
                .hasMessage("batch 5, group 0 (task 11), tensor 'x': nbytes 8 does not match int64[1, 2] (16 bytes)");
    }

    @Test
    void rejectsRankAboveTwo() {
        byte[] bytes = stream(meta("{\"key\":\"x\",\"dtype\":\"int32\",\"shape\":[1,1,1],\"nbytes\":4}", "[1]"), 4);
        assertThatThrownBy(() -> decode(bytes))
                .isInstanceOf(BatchFormatException.class)
                .hasMessage("batch 5, group 0 (task 11), tensor 'x': rank 3 (shape [1, 1, 1]), at most 2");
    }

    @Test
    void rejectsMetadataWithoutARequiredField() {
        String json = meta("{\"key\":\"x\",\"dtype\":\"int32\",\"shape\":[1],\"nbytes\":4}", "[1]")
                .replace("\"head_version\":0,", "");
        assertThatThrownBy(() -> decode(stream(json, 4)))
                .isInstanceOf(BatchFormatException.class)
                .hasMessage("batch 5, group 0 (task 11): metadata field 'head_version' is missing");
    }

    @Test
    void rejectsSlotRowCountsThatDoNotCoverTheRows() {
        byte[] bytes = stream(meta("{\"key\":\"x\",\"dtype\":\"int32\",\"shape\":[1],\"nbytes\":4}", "[2]"), 4);
        assertThatThrownBy(() -> decode(bytes))
                .isInstanceOf(BatchFormatException.class)
                .hasMessage("batch 5, group 0 (task 11): task 11: slot row counts sum to 2 but the group has 1 rows");
    }

    @Test
    void rejectsADuplicateTensorKey() {
        String t = "{\"key\":\"x\",\"dtype\":\"int32\",\"shape\":[1],\"nbytes\":4}";
        byte[] bytes = stream(meta(t + "," + t, "[1]"), 8);
        assertThatThrownBy(() -> decode(bytes))
                .isInstanceOf(BatchFormatException.class)
                .hasMessage("batch 5, group 0 (task 11): tensor key 'x' appears twice");
    }

    @Test
    void rejectsMetadataThatIsNotJson() {
        assertThatThrownBy(() -> decode(stream("{task_id: 1", 0)))
                .isInstanceOf(BatchFormatException.class)
                .hasMessageStartingWith("batch 5, group 0: metadata is not JSON: ");
    }

    @Test
    void rejectsAMetadataLengthAboveTheLimit() {
        ByteBuffer b = header(1).putInt(BatchWireFormat.MAX_METADATA_BYTES + 1);
        assertThatThrownBy(() -> decode(Arrays.copyOf(b.array(), b.position())))
                .isInstanceOf(BatchFormatException.class)
                .hasMessage("batch 5, group 0: metadata of 1048577 bytes exceeds the limit of 1048576");
    }

    @Test
    void int64ValuesKeepAllSixtyFourBits() throws IOException {
        TensorDict rows = TensorDict.builder()
                .put("ids", Int64Tensor.vector(Long.MIN_VALUE, -1L, Long.MAX_VALUE))
                .build();
        TrainingBatch b = new TrainingBatch(
                1, List.of(new TrainingGroup(1, 0, rows, new int[] {0}, new int[] {3}, 0, 0, 0, 0)), 0);
        assertThat(decode(encode(b)).groups().get(0).rows().int64("ids").toArray())
                .containsExactly(Long.MIN_VALUE, -1L, Long.MAX_VALUE);
    }

    /** Group metadata for task 11 with the given tensor descriptors and slot row counts. */
    private static String meta(String tensors, String slotRowCounts) {
        return "{\"task_id\":11,\"attempt\":0,\"slot_indices\":[0],\"slot_row_counts\":" + slotRowCounts
                + ",\"dispatch_version\":0,\"head_version\":0,\"tail_version\":0,\"completion_version\":0,"
                + "\"tensors\":[" + tensors + "]}";
    }

    private static ByteBuffer header(int groups) {
        ByteBuffer b = ByteBuffer.allocate(4096).order(ByteOrder.LITTLE_ENDIAN);
        b.put("RBATCH".getBytes(StandardCharsets.US_ASCII))
                .putShort((short) 1)
                .putLong(5)
                .putInt(0)
                .putInt(groups);
        return b;
    }

    /** Batch 5 with one group of {@code meta}, {@code dataBytes} zero bytes of data, and the trailer. */
    private static byte[] stream(String meta, int dataBytes) {
        byte[] m = meta.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = header(1)
                .putInt(m.length)
                .put(m)
                .put(new byte[dataBytes])
                .put("REND".getBytes(StandardCharsets.US_ASCII));
        return Arrays.copyOf(b.array(), b.position());
    }
}
