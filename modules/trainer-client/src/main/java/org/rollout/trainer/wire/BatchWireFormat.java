package org.rollout.trainer.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.rollout.api.BoolTensor;
import org.rollout.api.DType;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Int64Tensor;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;

/**
 * "RBATCH v1": how a {@link TrainingBatch} travels from the trainer gateway to a trainer, in any
 * language. Little-endian throughout; documented byte by byte in docs/protocol.md ("Trainer
 * gateway").
 *
 * <pre>
 *   header   24 bytes   "RBATCH" · u16 format version (1) · i64 batch id · i32 version at hand-out · i32 group count
 *   group ×N            u32 metadata length M · M bytes of UTF-8 JSON (task id, attempt, slots, versions,
 *                       tensors: key, dtype, shape, nbytes) · each tensor's nbytes of raw row-major data
 *   trailer   4 bytes   "REND"
 * </pre>
 *
 * <p>Streaming: {@link #write} (and {@link Prepared#writeTo}, for a writer that needs the exact
 * length first) copies tensors to the stream through one 1 MiB buffer, so a batch of any size costs
 * the writer a constant amount of memory, the stream sees large writes, and a slow reader
 * back-pressures it through the stream. {@link #read} fills each tensor's builder chunk by chunk, so the reader holds
 * the decoded batch and one 64 KiB buffer, never the encoded bytes. Neither closes the stream.
 *
 * <p>Errors: a malformed or truncated stream is a {@link BatchFormatException} naming the batch,
 * group, task and tensor key where it went wrong; other {@link IOException}s are the stream's own.
 * Stateless and thread-safe.
 */
public final class BatchWireFormat {
    /** The media type of a batch body. */
    public static final String CONTENT_TYPE = "application/x-rollout-batch";
    /** The format version this class writes and reads. */
    public static final int FORMAT_VERSION = 1;
    /** The size of the fixed header. */
    public static final int HEADER_BYTES = 24;
    /** The longest group metadata block a reader accepts. */
    public static final int MAX_METADATA_BYTES = 1 << 20;

    static final byte[] MAGIC = "RBATCH".getBytes(StandardCharsets.US_ASCII);
    static final byte[] TRAILER = "REND".getBytes(StandardCharsets.US_ASCII);
    static final int CHUNK_BYTES = 64 * 1024;
    /** The writer's buffer: the size of the writes a stream sees. */
    static final int WRITE_CHUNK_BYTES = 1 << 20;
    /** Elements per bulk copy through the writer's and reader's reused arrays. */
    static final int COPY_ELEMENTS = 16 * 1024;

    private static final ObjectMapper JSON = new ObjectMapper();

    private BatchWireFormat() {}

    /**
     * Writes {@code batch} to {@code out}; does not flush or close it.
     *
     * @return the number of bytes written
     */
    public static long write(TrainingBatch batch, OutputStream out) throws IOException {
        return new Writer(out, metadataOf(batch)).batch(batch);
    }

    /**
     * A batch ready to be written: its groups' metadata encoded once, so that its exact length is
     * known before a byte goes out (an HTTP response can then carry a {@code Content-Length} and be
     * written in large writes instead of chunks).
     */
    public static final class Prepared {
        private final TrainingBatch batch;
        private final List<byte[]> metadata;
        private final long length;

        private Prepared(TrainingBatch batch, List<byte[]> metadata) {
            this.batch = batch;
            this.metadata = metadata;
            long n = HEADER_BYTES + TRAILER.length;
            for (int i = 0; i < metadata.size(); i++) {
                n += 4 + metadata.get(i).length;
                for (Tensor t : batch.groups().get(i).rows().asMap().values()) {
                    n += (long) t.numel() * itemSize(t.dtype());
                }
            }
            this.length = n;
        }

        /** The number of bytes {@link #writeTo} writes. */
        public long length() {
            return length;
        }

        /**
         * Writes the batch to {@code out}; does not flush or close it.
         *
         * @return the number of bytes written, {@link #length()}
         */
        public long writeTo(OutputStream out) throws IOException {
            return new Writer(out, metadata).batch(batch);
        }
    }

    /** Encodes {@code batch}'s group metadata, which gives the batch's exact encoded length. */
    public static Prepared prepare(TrainingBatch batch) throws IOException {
        return new Prepared(batch, metadataOf(batch));
    }

    private static List<byte[]> metadataOf(TrainingBatch batch) throws IOException {
        List<byte[]> out = new ArrayList<>(batch.groups().size());
        for (TrainingGroup g : batch.groups()) {
            out.add(JSON.writeValueAsBytes(metadata(g)));
        }
        return out;
    }

    /**
     * Reads one batch from {@code in}, leaving the stream just after its trailer.
     *
     * @throws BatchFormatException when the stream is not a well-formed RBATCH v1 batch or ends early
     */
    public static TrainingBatch read(InputStream in) throws IOException {
        return new Reader(in).batch();
    }

    /** The size in bytes of one element of {@code dtype} on the wire (bool: one byte, 0 or 1). */
    public static int itemSize(DType dtype) {
        return switch (dtype) {
            case INT32, FLOAT32 -> 4;
            case INT64 -> 8;
            case BOOL -> 1;
        };
    }

    private static final class Writer {
        private final OutputStream out;
        private final List<byte[]> metadata;
        private final ByteBuffer buf = ByteBuffer.allocate(WRITE_CHUNK_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        private long written;
        private boolean[] bools;

        Writer(OutputStream out, List<byte[]> metadata) {
            this.out = out;
            this.metadata = metadata;
        }

        long batch(TrainingBatch batch) throws IOException {
            buf.put(MAGIC)
                    .putShort((short) FORMAT_VERSION)
                    .putLong(batch.batchId())
                    .putInt(batch.versionAtHandout())
                    .putInt(batch.groups().size());
            for (int i = 0; i < batch.groups().size(); i++) {
                group(batch.groups().get(i), metadata.get(i));
            }
            room(TRAILER.length);
            buf.put(TRAILER);
            drain();
            return written;
        }

        private void group(TrainingGroup g, byte[] meta) throws IOException {
            room(4);
            buf.putInt(meta.length);
            bytes(meta);
            for (Tensor t : g.rows().asMap().values()) {
                tensor(t);
            }
        }

        /**
         * Fills the write buffer behind whatever it holds, one bulk copy per slice from the tensor
         * into a little-endian view of the buffer (bools through a reused array, as bytes), and
         * writes it out whenever it is full: the stream sees writes of {@value #WRITE_CHUNK_BYTES}
         * bytes.
         */
        private void tensor(Tensor t) throws IOException {
            int n = t.numel();
            int size = itemSize(t.dtype());
            for (int from = 0; from < n; ) {
                if (buf.remaining() < size) {
                    drain();
                }
                int len = Math.min(Math.min(buf.remaining() / size, COPY_ELEMENTS), n - from);
                int at = buf.position();
                switch (t) {
                    case Int32Tensor x -> {
                        x.copyTo(from, slice(at, len * size).asIntBuffer(), len);
                    }
                    case Int64Tensor x -> {
                        x.copyTo(from, slice(at, len * size).asLongBuffer(), len);
                    }
                    case Float32Tensor x -> {
                        x.copyTo(from, slice(at, len * size).asFloatBuffer(), len);
                    }
                    case BoolTensor x -> {
                        x.copyTo(from, bools(), 0, len);
                        byte[] a = buf.array();
                        int base = at;
                        for (int k = 0; k < len; k++) {
                            a[base + k] = bools[k] ? (byte) 1 : (byte) 0;
                        }
                    }
                }
                buf.position(at + len * size);
                from += len;
            }
        }

        /** {@code len} bytes of the write buffer from {@code at}, little-endian. */
        private ByteBuffer slice(int at, int len) {
            return buf.slice(at, len).order(ByteOrder.LITTLE_ENDIAN);
        }

        private void bytes(byte[] b) throws IOException {
            if (b.length <= buf.remaining()) {
                buf.put(b);
                return;
            }
            drain();
            out.write(b);
            written += b.length;
        }

        private void room(int n) throws IOException {
            if (buf.remaining() < n) {
                drain();
            }
        }

        private void drain() throws IOException {
            if (buf.position() > 0) {
                out.write(buf.array(), 0, buf.position());
                written += buf.position();
                buf.clear();
            }
        }

        private boolean[] bools() {
            return bools == null ? (bools = new boolean[COPY_ELEMENTS]) : bools;
        }
    }

    static ObjectNode metadata(TrainingGroup g) {
        ObjectNode m = JSON.createObjectNode();
        m.put("task_id", g.taskId());
        m.put("attempt", g.attempt());
        ArrayNode slots = m.putArray("slot_indices");
        Arrays.stream(g.slotIndices()).forEach(slots::add);
        ArrayNode counts = m.putArray("slot_row_counts");
        Arrays.stream(g.slotRowCounts()).forEach(counts::add);
        m.put("dispatch_version", g.dispatchVersion());
        m.put("head_version", g.headVersion());
        m.put("tail_version", g.tailVersion());
        m.put("completion_version", g.completionVersion());
        ArrayNode tensors = m.putArray("tensors");
        for (Map.Entry<String, Tensor> e : g.rows().asMap().entrySet()) {
            Tensor t = e.getValue();
            ObjectNode d = tensors.addObject();
            d.put("key", e.getKey());
            d.put("dtype", t.dtype().wireName());
            ArrayNode shape = d.putArray("shape");
            Arrays.stream(t.shape()).forEach(shape::add);
            d.put("nbytes", (long) t.numel() * itemSize(t.dtype()));
        }
        return m;
    }

    private static final class Reader {
        private final InputStream in;
        private final byte[] chunk = new byte[CHUNK_BYTES];
        private final ByteBuffer view = ByteBuffer.wrap(chunk).order(ByteOrder.LITTLE_ENDIAN);
        // One chunk's bools on their way into a tensor builder; allocated on first use, then reused.
        private boolean[] bools;
        private long position;
        /** Where reading is, for messages; null before the batch id is known. */
        private String where;

        Reader(InputStream in) {
            this.in = in;
        }

        TrainingBatch batch() throws IOException {
            fill(HEADER_BYTES, "the header");
            byte[] magic = Arrays.copyOf(chunk, MAGIC.length);
            if (!Arrays.equals(magic, MAGIC)) {
                throw new BatchFormatException("not a rollout batch stream: expected the magic \"RBATCH\", got 0x"
                        + HexFormat.of().formatHex(magic));
            }
            int format = Short.toUnsignedInt(view.getShort(6));
            if (format != FORMAT_VERSION) {
                throw new BatchFormatException(
                        "unsupported batch format version " + format + " (this reader knows " + FORMAT_VERSION + ")");
            }
            long batchId = view.getLong(8);
            int version = view.getInt(16);
            int groupCount = view.getInt(20);
            where = "batch " + batchId;
            if (groupCount < 0) {
                throw new BatchFormatException(where + ": negative group count " + groupCount);
            }
            List<TrainingGroup> groups = new ArrayList<>(Math.min(groupCount, 4096));
            for (int i = 0; i < groupCount; i++) {
                groups.add(group(batchId, i));
            }
            where = "batch " + batchId + ", trailer";
            fill(TRAILER.length, "the trailer");
            if (!Arrays.equals(Arrays.copyOf(chunk, TRAILER.length), TRAILER)) {
                throw new BatchFormatException(
                        "batch " + batchId + ": expected the trailer \"REND\" after " + groupCount
                                + " groups at byte " + (position - TRAILER.length) + ", got 0x"
                                + HexFormat.of().formatHex(chunk, 0, TRAILER.length));
            }
            return new TrainingBatch(batchId, groups, version);
        }

        private TrainingGroup group(long batchId, int index) throws IOException {
            where = "batch " + batchId + ", group " + index;
            fill(4, "the metadata length");
            long length = Integer.toUnsignedLong(view.getInt(0));
            if (length > MAX_METADATA_BYTES) {
                throw new BatchFormatException(
                        where + ": metadata of " + length + " bytes exceeds the limit of " + MAX_METADATA_BYTES);
            }
            byte[] meta = in.readNBytes((int) length);
            position += meta.length;
            if (meta.length < length) {
                throw truncated("the metadata", length, meta.length);
            }
            JsonNode m;
            try {
                m = JSON.readTree(meta);
            } catch (IOException e) {
                throw new BatchFormatException(where + ": metadata is not JSON: " + e.getMessage(), e);
            }
            if (m == null || !m.isObject()) {
                throw new BatchFormatException(where + ": metadata must be a JSON object");
            }
            long taskId = longField(m, "task_id");
            where = "batch " + batchId + ", group " + index + " (task " + taskId + ")";
            int attempt = intField(m, "attempt");
            int[] slots = intArray(m, "slot_indices");
            int[] counts = intArray(m, "slot_row_counts");
            int dispatch = intField(m, "dispatch_version");
            int head = intField(m, "head_version");
            int tail = intField(m, "tail_version");
            int completion = intField(m, "completion_version");
            JsonNode tensors = m.get("tensors");
            if (tensors == null || !tensors.isArray()) {
                throw new BatchFormatException(where + ": metadata field 'tensors' must be an array");
            }
            String groupWhere = where;
            TensorDict.Builder rows = TensorDict.builder();
            List<String> keys = new ArrayList<>();
            for (JsonNode d : tensors) {
                String key = textField(d, "key");
                if (keys.contains(key)) {
                    throw new BatchFormatException(groupWhere + ": tensor key '" + key + "' appears twice");
                }
                keys.add(key);
                where = groupWhere + ", tensor '" + key + "'";
                rows.put(key, tensor(d));
                where = groupWhere;
            }
            try {
                return new TrainingGroup(
                        taskId, attempt, rows.build(), slots, counts, dispatch, head, tail, completion);
            } catch (IllegalArgumentException e) {
                throw new BatchFormatException(groupWhere + ": " + e.getMessage(), e);
            }
        }

        private Tensor tensor(JsonNode d) throws IOException {
            String dtypeName = textField(d, "dtype");
            DType dtype = Arrays.stream(DType.values())
                    .filter(t -> t.wireName().equals(dtypeName))
                    .findFirst()
                    .orElseThrow(() -> new BatchFormatException(
                            where + ": unknown dtype '" + dtypeName + "' (allowed: int32, int64, float32, bool)"));
            int[] shape = intArray(d, "shape");
            if (shape.length > 2) {
                throw new BatchFormatException(
                        where + ": rank " + shape.length + " (shape " + Arrays.toString(shape) + "), at most 2");
            }
            long numel = 1;
            for (int dim : shape) {
                if (dim < 0) {
                    throw new BatchFormatException(where + ": negative dimension in shape " + Arrays.toString(shape));
                }
                numel *= dim;
                if (numel > Integer.MAX_VALUE - 8) {
                    throw new BatchFormatException(where + ": shape " + Arrays.toString(shape) + " is too large");
                }
            }
            long nbytes = longField(d, "nbytes");
            if (nbytes != numel * itemSize(dtype)) {
                throw new BatchFormatException(where + ": nbytes " + nbytes + " does not match " + dtypeName
                        + Arrays.toString(shape) + " (" + numel * itemSize(dtype) + " bytes)");
            }
            int n = (int) numel;
            int step = CHUNK_BYTES / itemSize(dtype);
            return switch (dtype) {
                case INT32 -> {
                    Int32Tensor.Builder b = Int32Tensor.builder(shape);
                    for (int from = 0; from < n; from += step) {
                        int len = Math.min(step, n - from);
                        data(len * 4, nbytes, from * 4L);
                        b.copyFrom(from, view.asIntBuffer(), len);
                    }
                    yield b.build();
                }
                case INT64 -> {
                    Int64Tensor.Builder b = Int64Tensor.builder(shape);
                    for (int from = 0; from < n; from += step) {
                        int len = Math.min(step, n - from);
                        data(len * 8, nbytes, from * 8L);
                        b.copyFrom(from, view.asLongBuffer(), len);
                    }
                    yield b.build();
                }
                case FLOAT32 -> {
                    Float32Tensor.Builder b = Float32Tensor.builder(shape);
                    for (int from = 0; from < n; from += step) {
                        int len = Math.min(step, n - from);
                        data(len * 4, nbytes, from * 4L);
                        b.copyFrom(from, view.asFloatBuffer(), len);
                    }
                    yield b.build();
                }
                case BOOL -> {
                    BoolTensor.Builder b = BoolTensor.builder(shape);
                    boolean[] tmp = bools();
                    for (int from = 0; from < n; from += step) {
                        int len = Math.min(step, n - from);
                        data(len, nbytes, from);
                        for (int k = 0; k < len; k++) {
                            byte v = chunk[k];
                            if (v != 0 && v != 1) {
                                throw new BatchFormatException(
                                        where + ": bool element " + (from + k) + " is " + v + ", must be 0 or 1");
                            }
                            tmp[k] = v == 1;
                        }
                        b.copyFrom(from, tmp, 0, len);
                    }
                    yield b.build();
                }
            };
        }

        private boolean[] bools() {
            return bools == null ? (bools = new boolean[CHUNK_BYTES]) : bools;
        }

        /** Reads the next {@code len} data bytes of a tensor of {@code total} bytes, {@code done} read so far. */
        private void data(int len, long total, long done) throws IOException {
            int got = in.readNBytes(chunk, 0, len);
            position += got;
            if (got < len) {
                throw truncated("the data", total, done + got);
            }
        }

        private void fill(int len, String what) throws IOException {
            int got = in.readNBytes(chunk, 0, len);
            position += got;
            if (got < len) {
                throw truncated(what, len, got);
            }
        }

        private BatchFormatException truncated(String what, long expected, long got) {
            return new BatchFormatException(
                    (where == null ? "" : where + ": ") + "the stream ended after " + got + " of the " + expected
                            + " bytes of " + what + " (at byte " + position + "); the batch was cut off");
        }

        private JsonNode field(JsonNode node, String name) throws BatchFormatException {
            JsonNode v = node == null ? null : node.get(name);
            if (v == null || v.isNull()) {
                throw new BatchFormatException(where + ": metadata field '" + name + "' is missing");
            }
            return v;
        }

        private long longField(JsonNode node, String name) throws BatchFormatException {
            JsonNode v = field(node, name);
            if (!v.isIntegralNumber() || !v.canConvertToLong()) {
                throw new BatchFormatException(where + ": metadata field '" + name + "' must be an integer, got " + v);
            }
            return v.longValue();
        }

        private int intField(JsonNode node, String name) throws BatchFormatException {
            JsonNode v = field(node, name);
            if (!v.isIntegralNumber() || !v.canConvertToInt()) {
                throw new BatchFormatException(
                        where + ": metadata field '" + name + "' must be a 32-bit integer, got " + v);
            }
            return v.intValue();
        }

        private String textField(JsonNode node, String name) throws BatchFormatException {
            JsonNode v = field(node, name);
            if (!v.isTextual()) {
                throw new BatchFormatException(where + ": metadata field '" + name + "' must be a string, got " + v);
            }
            return v.textValue();
        }

        private int[] intArray(JsonNode node, String name) throws BatchFormatException {
            JsonNode v = field(node, name);
            if (!v.isArray()) {
                throw new BatchFormatException(where + ": metadata field '" + name + "' must be an array, got " + v);
            }
            int[] out = new int[v.size()];
            for (int i = 0; i < out.length; i++) {
                JsonNode e = v.get(i);
                if (!e.isIntegralNumber() || !e.canConvertToInt()) {
                    throw new BatchFormatException(where + ": element " + i + " of metadata field '" + name
                            + "' must be an integer, got " + e);
                }
                out[i] = e.intValue();
            }
            return out;
        }
    }
}
