package org.rollout.cluster;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.KryoException;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.rollout.api.BoolTensor;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Int64Tensor;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;

/**
 * The fixed Kryo registration list of the tensor payloads, with explicit ids and a hand-written
 * serializer per class. Both ends of a connection must run the same list: an id names a class on
 * the wire, so ids are never reused or renumbered; a new class takes the next free id.
 *
 * <pre>
 *   id   class                         wire form
 *   100  Int32Tensor                   rank and dims (varints), then the elements in blocks
 *   101  Int64Tensor                     (fixed width, little-endian, in blocks of 8192 elements
 *   102  Float32Tensor                    copied in bulk through a staging buffer: no loop over
 *   103  BoolTensor                       bytes, no copy of the whole tensor on either side;
 *                                         one byte per bool)
 *   104  TensorDict                    entry count, then key + class id + tensor per entry, in order
 *   105  TrainingGroup                 ids and versions, rows (a TensorDict), slot arrays
 *   106  TrainingBatch                 batch id, version at hand-out, groups
 *   107  Collector.GroupFinished       header fields, outcome (class id + body), metrics, stats
 *   108  Collector.Accepted            a TrainingGroup
 *   109  Collector.Rejected            reason (by name), detail
 *   110  Collector.BatchReply          a TrainingBatch or nothing
 *   111  ScalarStats.Totals            sums and counts by key, in recording order
 * </pre>
 *
 * <p>Registration is required, and nothing is serialized by reflection: a class not listed here
 * fails with Kryo's "Class is not registered" on the sender. Maps come back as unmodifiable
 * insertion-ordered maps; tensors come back as fresh, compact tensors (a view's offset is not
 * kept). Read errors name the class and the field being read.
 */
final class KryoRegistrations {
    /** Elements copied per block when a tensor is written or read. */
    static final int BLOCK = 8192;

    private KryoRegistrations() {}

    /** A Kryo instance with the whole list registered and registration required. Not thread-safe. */
    static Kryo newKryo() {
        Kryo k = new Kryo();
        k.setRegistrationRequired(true);
        k.setReferences(false);
        Staging staging = new Staging();
        k.register(Int32Tensor.class, new Int32TensorSerializer(staging), 100);
        k.register(Int64Tensor.class, new Int64TensorSerializer(staging), 101);
        k.register(Float32Tensor.class, new Float32TensorSerializer(staging), 102);
        k.register(BoolTensor.class, new BoolTensorSerializer(staging), 103);
        k.register(TensorDict.class, new TensorDictSerializer(), 104);
        k.register(TrainingGroup.class, new TrainingGroupSerializer(), 105);
        k.register(TrainingBatch.class, new TrainingBatchSerializer(), 106);
        k.register(Collector.GroupFinished.class, new GroupFinishedSerializer(), 107);
        k.register(Collector.Accepted.class, new AcceptedSerializer(), 108);
        k.register(Collector.Rejected.class, new RejectedSerializer(), 109);
        k.register(Collector.BatchReply.class, new BatchReplySerializer(), 110);
        k.register(ScalarStats.Totals.class, new TotalsSerializer(), 111);
        return k;
    }

    // ---- tensors ----

    private static void writeShape(Output out, Tensor t) {
        int[] shape = t.shape();
        out.writeVarInt(shape.length, true);
        for (int d : shape) {
            out.writeVarInt(d, true);
        }
    }

    private static int[] readShape(Input in, String what) {
        int rank = in.readVarInt(true);
        if (rank > 2) {
            throw new KryoException(what + ": rank " + rank + " on the wire; tensors have rank 0 to 2");
        }
        int[] shape = new int[rank];
        long numel = 1;
        for (int i = 0; i < rank; i++) {
            shape[i] = in.readVarInt(true);
            numel *= Math.max(0, shape[i]);
            if (shape[i] < 0 || numel > Integer.MAX_VALUE) {
                throw new KryoException(
                        what + ": impossible shape on the wire (dimension " + i + " is " + shape[i] + ")");
            }
        }
        return shape;
    }

    private static int numel(int[] shape) {
        int n = 1;
        for (int d : shape) {
            n *= d;
        }
        return n;
    }

    /**
     * One Kryo instance's staging buffer for tensor elements: {@value #BLOCK} elements of up to 8
     * bytes, with a little-endian view for each element type, and a block of bools. An element
     * block goes between a tensor and the buffer in one bulk copy (no loop over bytes), and between
     * the buffer and Kryo's stream as bytes; the layout is Kryo's own fixed-width one ({@code
     * Output.writeInts} and friends), so either side can read what the other writes.
     */
    static final class Staging {
        final byte[] bytes = new byte[BLOCK * Long.BYTES];
        final boolean[] bools = new boolean[BLOCK];
        final IntBuffer ints;
        final LongBuffer longs;
        final FloatBuffer floats;

        Staging() {
            ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
            ints = b.asIntBuffer();
            longs = b.asLongBuffer();
            floats = b.asFloatBuffer();
        }
    }

    static final class Int32TensorSerializer extends Serializer<Int32Tensor> {
        private final Staging staging;

        Int32TensorSerializer(Staging staging) {
            this.staging = staging;
        }

        @Override
        public void write(Kryo kryo, Output out, Int32Tensor t) {
            writeShape(out, t);
            int n = t.numel();
            IntBuffer view = staging.ints;
            for (int from = 0; from < n; from += BLOCK) {
                int len = Math.min(BLOCK, n - from);
                t.copyTo(from, view.clear(), len);
                out.writeBytes(staging.bytes, 0, len * Integer.BYTES);
            }
        }

        @Override
        public Int32Tensor read(Kryo kryo, Input in, Class<? extends Int32Tensor> type) {
            int[] shape = readShape(in, "int32 tensor");
            Int32Tensor.Builder b = Int32Tensor.builder(shape);
            int n = numel(shape);
            IntBuffer view = staging.ints;
            for (int from = 0; from < n; from += BLOCK) {
                int len = Math.min(BLOCK, n - from);
                in.readBytes(staging.bytes, 0, len * Integer.BYTES);
                b.copyFrom(from, view.clear(), len);
            }
            return b.build();
        }
    }

    static final class Int64TensorSerializer extends Serializer<Int64Tensor> {
        private final Staging staging;

        Int64TensorSerializer(Staging staging) {
            this.staging = staging;
        }

        @Override
        public void write(Kryo kryo, Output out, Int64Tensor t) {
            writeShape(out, t);
            int n = t.numel();
            LongBuffer view = staging.longs;
            for (int from = 0; from < n; from += BLOCK) {
                int len = Math.min(BLOCK, n - from);
                t.copyTo(from, view.clear(), len);
                out.writeBytes(staging.bytes, 0, len * Long.BYTES);
            }
        }

        @Override
        public Int64Tensor read(Kryo kryo, Input in, Class<? extends Int64Tensor> type) {
            int[] shape = readShape(in, "int64 tensor");
            Int64Tensor.Builder b = Int64Tensor.builder(shape);
            int n = numel(shape);
            LongBuffer view = staging.longs;
            for (int from = 0; from < n; from += BLOCK) {
                int len = Math.min(BLOCK, n - from);
                in.readBytes(staging.bytes, 0, len * Long.BYTES);
                b.copyFrom(from, view.clear(), len);
            }
            return b.build();
        }
    }

    static final class Float32TensorSerializer extends Serializer<Float32Tensor> {
        private final Staging staging;

        Float32TensorSerializer(Staging staging) {
            this.staging = staging;
        }

        @Override
        public void write(Kryo kryo, Output out, Float32Tensor t) {
            writeShape(out, t);
            int n = t.numel();
            FloatBuffer view = staging.floats;
            for (int from = 0; from < n; from += BLOCK) {
                int len = Math.min(BLOCK, n - from);
                t.copyTo(from, view.clear(), len);
                out.writeBytes(staging.bytes, 0, len * Float.BYTES);
            }
        }

        @Override
        public Float32Tensor read(Kryo kryo, Input in, Class<? extends Float32Tensor> type) {
            int[] shape = readShape(in, "float32 tensor");
            Float32Tensor.Builder b = Float32Tensor.builder(shape);
            int n = numel(shape);
            FloatBuffer view = staging.floats;
            for (int from = 0; from < n; from += BLOCK) {
                int len = Math.min(BLOCK, n - from);
                in.readBytes(staging.bytes, 0, len * Float.BYTES);
                b.copyFrom(from, view.clear(), len);
            }
            return b.build();
        }
    }

    static final class BoolTensorSerializer extends Serializer<BoolTensor> {
        private final Staging staging;

        BoolTensorSerializer(Staging staging) {
            this.staging = staging;
        }

        @Override
        public void write(Kryo kryo, Output out, BoolTensor t) {
            writeShape(out, t);
            int n = t.numel();
            boolean[] block = staging.bools;
            byte[] bytes = staging.bytes;
            for (int from = 0; from < n; from += BLOCK) {
                int len = Math.min(BLOCK, n - from);
                t.copyTo(from, block, 0, len);
                for (int i = 0; i < len; i++) {
                    bytes[i] = (byte) (block[i] ? 1 : 0);
                }
                out.writeBytes(bytes, 0, len);
            }
        }

        @Override
        public BoolTensor read(Kryo kryo, Input in, Class<? extends BoolTensor> type) {
            int[] shape = readShape(in, "bool tensor");
            BoolTensor.Builder b = BoolTensor.builder(shape);
            int n = numel(shape);
            boolean[] block = staging.bools;
            byte[] bytes = staging.bytes;
            for (int from = 0; from < n; from += BLOCK) {
                int len = Math.min(BLOCK, n - from);
                in.readBytes(bytes, 0, len);
                for (int i = 0; i < len; i++) {
                    block[i] = bytes[i] != 0;
                }
                b.copyFrom(from, block, 0, len);
            }
            return b.build();
        }
    }

    // ---- dicts, groups, batches ----

    static final class TensorDictSerializer extends Serializer<TensorDict> {
        @Override
        public void write(Kryo kryo, Output out, TensorDict d) {
            out.writeVarInt(d.size(), true);
            d.forEach((key, t) -> {
                out.writeString(key);
                kryo.writeClassAndObject(out, t);
            });
        }

        @Override
        public TensorDict read(Kryo kryo, Input in, Class<? extends TensorDict> type) {
            int n = in.readVarInt(true);
            TensorDict.Builder b = TensorDict.builder();
            for (int i = 0; i < n; i++) {
                String key = in.readString();
                Object t = kryo.readClassAndObject(in);
                if (!(t instanceof Tensor tensor)) {
                    throw new KryoException("tensor key '" + key + "': expected a tensor on the wire, found "
                            + (t == null ? "null" : t.getClass().getName()));
                }
                b.put(key, tensor);
            }
            return b.build();
        }
    }

    static final class TrainingGroupSerializer extends Serializer<TrainingGroup> {
        @Override
        public void write(Kryo kryo, Output out, TrainingGroup g) {
            out.writeVarLong(g.taskId(), true);
            out.writeVarInt(g.attempt(), true);
            out.writeInt(g.dispatchVersion());
            out.writeInt(g.headVersion());
            out.writeInt(g.tailVersion());
            out.writeInt(g.completionVersion());
            writeIntArray(out, g.slotIndices());
            writeIntArray(out, g.slotRowCounts());
            kryo.writeObject(out, g.rows());
        }

        @Override
        public TrainingGroup read(Kryo kryo, Input in, Class<? extends TrainingGroup> type) {
            long taskId = in.readVarLong(true);
            int attempt = in.readVarInt(true);
            int dispatch = in.readInt();
            int head = in.readInt();
            int tail = in.readInt();
            int completion = in.readInt();
            int[] slots = readIntArray(in);
            int[] counts = readIntArray(in);
            TensorDict rows = kryo.readObject(in, TensorDict.class);
            try {
                return new TrainingGroup(taskId, attempt, rows, slots, counts, dispatch, head, tail, completion);
            } catch (IllegalArgumentException e) {
                throw new KryoException(
                        "task " + taskId + ": the group on the wire is inconsistent: " + e.getMessage(), e);
            }
        }
    }

    static final class TrainingBatchSerializer extends Serializer<TrainingBatch> {
        @Override
        public void write(Kryo kryo, Output out, TrainingBatch b) {
            out.writeVarLong(b.batchId(), true);
            out.writeInt(b.versionAtHandout());
            out.writeVarInt(b.groups().size(), true);
            for (TrainingGroup g : b.groups()) {
                kryo.writeObject(out, g);
            }
        }

        @Override
        public TrainingBatch read(Kryo kryo, Input in, Class<? extends TrainingBatch> type) {
            long id = in.readVarLong(true);
            int version = in.readInt();
            int n = in.readVarInt(true);
            List<TrainingGroup> groups = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                groups.add(kryo.readObject(in, TrainingGroup.class));
            }
            return new TrainingBatch(id, groups, version);
        }
    }

    // ---- collector messages ----

    static final class GroupFinishedSerializer extends Serializer<Collector.GroupFinished> {
        @Override
        public void write(Kryo kryo, Output out, Collector.GroupFinished g) {
            out.writeVarLong(g.taskId(), true);
            out.writeVarInt(g.attempt(), true);
            out.writeBoolean(g.isEval());
            out.writeInt(g.dispatchVersion());
            out.writeInt(g.completionVersion());
            out.writeVarLong(g.generatedTokens(), true);
            kryo.writeClassAndObject(out, g.outcome());
            writeDoubles(out, g.groupMetrics());
            kryo.writeObjectOrNull(out, g.workflowStats(), ScalarStats.Totals.class);
        }

        @Override
        public Collector.GroupFinished read(Kryo kryo, Input in, Class<? extends Collector.GroupFinished> type) {
            long taskId = in.readVarLong(true);
            int attempt = in.readVarInt(true);
            boolean isEval = in.readBoolean();
            int dispatch = in.readInt();
            int completion = in.readInt();
            long tokens = in.readVarLong(true);
            Object outcome = kryo.readClassAndObject(in);
            if (outcome != null && !(outcome instanceof Collector.Outcome)) {
                throw new KryoException("task " + taskId + ": expected a group outcome on the wire, found "
                        + outcome.getClass().getName());
            }
            Map<String, Double> metrics = readDoubles(in);
            ScalarStats.Totals stats = kryo.readObjectOrNull(in, ScalarStats.Totals.class);
            return new Collector.GroupFinished(
                    taskId, attempt, isEval, dispatch, completion, (Collector.Outcome) outcome, metrics, stats, tokens);
        }
    }

    static final class AcceptedSerializer extends Serializer<Collector.Accepted> {
        @Override
        public void write(Kryo kryo, Output out, Collector.Accepted a) {
            kryo.writeObject(out, a.group());
        }

        @Override
        public Collector.Accepted read(Kryo kryo, Input in, Class<? extends Collector.Accepted> type) {
            return new Collector.Accepted(kryo.readObject(in, TrainingGroup.class));
        }
    }

    static final class RejectedSerializer extends Serializer<Collector.Rejected> {
        @Override
        public void write(Kryo kryo, Output out, Collector.Rejected r) {
            out.writeString(r.reason() == null ? null : r.reason().name());
            out.writeString(r.detail());
        }

        @Override
        public Collector.Rejected read(Kryo kryo, Input in, Class<? extends Collector.Rejected> type) {
            String name = in.readString();
            String detail = in.readString();
            RejectReason reason = null;
            if (name != null) {
                try {
                    reason = RejectReason.valueOf(name);
                } catch (IllegalArgumentException e) {
                    throw new KryoException("unknown reject reason '" + name + "' on the wire", e);
                }
            }
            return new Collector.Rejected(reason, detail);
        }
    }

    static final class BatchReplySerializer extends Serializer<Collector.BatchReply> {
        @Override
        public void write(Kryo kryo, Output out, Collector.BatchReply r) {
            kryo.writeObjectOrNull(out, r.batch(), TrainingBatch.class);
        }

        @Override
        public Collector.BatchReply read(Kryo kryo, Input in, Class<? extends Collector.BatchReply> type) {
            return new Collector.BatchReply(kryo.readObjectOrNull(in, TrainingBatch.class));
        }
    }

    static final class TotalsSerializer extends Serializer<ScalarStats.Totals> {
        @Override
        public void write(Kryo kryo, Output out, ScalarStats.Totals t) {
            writeDoubles(out, t.sums());
            Map<String, Long> counts = t.counts();
            out.writeVarInt(counts.size(), true);
            counts.forEach((k, v) -> {
                out.writeString(k);
                out.writeVarLong(v, true);
            });
        }

        @Override
        public ScalarStats.Totals read(Kryo kryo, Input in, Class<? extends ScalarStats.Totals> type) {
            Map<String, Double> sums = readDoubles(in);
            int n = in.readVarInt(true);
            Map<String, Long> counts = new LinkedHashMap<>();
            for (int i = 0; i < n; i++) {
                counts.put(in.readString(), in.readVarLong(true));
            }
            return new ScalarStats.Totals(sums == null ? Map.of() : sums, counts);
        }
    }

    // ---- small pieces ----

    private static void writeIntArray(Output out, int[] a) {
        out.writeVarInt(a.length, true);
        out.writeInts(a, 0, a.length);
    }

    private static int[] readIntArray(Input in) {
        return in.readInts(in.readVarInt(true));
    }

    /** A map of strings to doubles; null is written as size 0 and read back as null. */
    private static void writeDoubles(Output out, Map<String, Double> m) {
        if (m == null) {
            out.writeVarInt(0, true);
            return;
        }
        out.writeVarInt(m.size() + 1, true);
        m.forEach((k, v) -> {
            out.writeString(k);
            out.writeDouble(v);
        });
    }

    private static Map<String, Double> readDoubles(Input in) {
        int n = in.readVarInt(true) - 1;
        if (n < 0) {
            return null;
        }
        Map<String, Double> m = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            m.put(in.readString(), in.readDouble());
        }
        return Collections.unmodifiableMap(m);
    }
}
