package org.rollout.cluster;

import java.io.NotSerializableException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.serialization.SerializerWithStringManifest;
import org.rollout.cluster.DurableState.Cursor;
import org.rollout.cluster.DurableState.LedgerPart;
import org.rollout.cluster.DurableState.OpenTask;
import org.rollout.cluster.DurableState.VersionRecord;

/**
 * Pekko's serializer for the values {@link ReplicatedState} keeps in Distributed Data ({@link
 * DurableState.LedgerEntry}: a ledger key's part, with its open tasks and cursor, and the weight
 * version), bound in this module's {@code reference.conf} under the name {@code rollout-ledger},
 * identifier {@value #ID}. Jackson CBOR wrote each open task as a map with its field names and type
 * name (about 130 bytes, and the class name as the manifest); here it is a few varints (typically
 * 5–8 bytes inside a part, manifest one letter). Distributed Data ships a key's whole part in every
 * write to it and in its full-state gossip, so the bytes per open task decide what a write costs
 * (docs/scaling.md).
 *
 * <p>The formats, all integers as LEB128 varints ({@code u}: unsigned, {@code z}: zigzag of a
 * difference, computed with wrapping arithmetic so every {@code long} round-trips):
 *
 * <pre>
 *   "T" OpenTask       flags(1 byte: 1 isEval, 2 accepted, 4 possiblyDelivered) u(taskId) u(attempt)
 *                      z(taskId − sourceIndex) u(dispatchVersion)
 *   "C" Cursor         u(nextTaskId) z(nextTaskId − trainTaken) z(trainTaken − accepted) u(incarnation)
 *   "V" VersionRecord  flags(1 byte: 1 path present) u(version) [u(UTF-8 length) UTF-8 bytes]
 *   "P" LedgerPart     u(task count) Cursor's fields, then each task as an OpenTask's fields, its
 *                      id written as u(taskId − previous task's id) after the first
 * </pre>
 *
 * <p>A training task's {@code sourceIndex} is its prompt's index, a little below its task id, so
 * the difference is one or two bytes; a negative value (never written by the engine) costs ten.
 * {@code VersionRecord.path} may be null and comes back null; the other fields are primitives.
 *
 * <p>Errors: an unknown manifest raises {@link NotSerializableException} (Pekko's signal for a
 * message from a newer node); bytes that do not decode under their manifest (cut short, too long,
 * an unknown flag, a varint over its width) raise {@link IllegalArgumentException} naming the
 * manifest and the record, so a log line says which value of which key is damaged.
 */
public final class LedgerEntrySerializer extends SerializerWithStringManifest {
    /** The serializer identifier on the wire; Pekko reserves 0 to 40, {@code rollout-kryo} is 7001. */
    public static final int ID = 7_002;

    static final String TASK = "T";
    static final String CURSOR = "C";
    static final String VERSION = "V";
    static final String PART = "P";

    /** The fewest bytes one task of a part takes: a flag byte and four varints. */
    private static final int MIN_TASK_BYTES = 5;

    private static final int EVAL = 1;
    private static final int ACCEPTED = 2;
    private static final int POSSIBLY_DELIVERED = 4;
    private static final int PATH_PRESENT = 1;

    /** Called by Pekko's serialization extension, once per actor system. */
    public LedgerEntrySerializer(ExtendedActorSystem system) {}

    /** For tests and tools without an actor system. */
    LedgerEntrySerializer() {}

    @Override
    public int identifier() {
        return ID;
    }

    @Override
    public String manifest(Object o) {
        return switch (o) {
            case OpenTask t -> TASK;
            case Cursor c -> CURSOR;
            case VersionRecord v -> VERSION;
            case LedgerPart p -> PART;
            default ->
                throw new IllegalArgumentException("rollout-ledger serializes ledger entries only, not "
                        + o.getClass().getName());
        };
    }

    @Override
    public byte[] toBinary(Object o) {
        Out out = new Out();
        switch (o) {
            case OpenTask t -> writeTask(out, t, t.taskId());
            case Cursor c -> writeCursor(out, c);
            case LedgerPart p -> {
                out.u(p.tasks().size());
                writeCursor(out, p.cursor());
                long previous = 0;
                for (OpenTask t : p.tasks()) {
                    writeTask(out, t, t.taskId() - previous);
                    previous = t.taskId();
                }
            }
            case VersionRecord v -> {
                out.b(v.path() == null ? 0 : PATH_PRESENT);
                out.u(v.version() & 0xFFFF_FFFFL);
                if (v.path() != null) {
                    byte[] utf8 = v.path().getBytes(StandardCharsets.UTF_8);
                    out.u(utf8.length);
                    out.bytes(utf8);
                }
            }
            default ->
                throw new IllegalArgumentException("rollout-ledger serializes ledger entries only, not "
                        + o.getClass().getName());
        }
        return out.toBytes();
    }

    @Override
    public Object fromBinary(byte[] bytes, String manifest) throws NotSerializableException {
        In in = new In(bytes, manifest);
        Object value = switch (manifest) {
            case TASK -> readTask(in, 0);
            case CURSOR -> readCursor(in);
            case PART -> {
                int count = in.u32();
                if (count > in.remaining() / MIN_TASK_BYTES) {
                    throw in.malformed(
                            "a count of " + Integer.toUnsignedString(count) + " tasks in " + in.remaining() + " bytes");
                }
                Cursor cursor = readCursor(in);
                List<OpenTask> tasks = new ArrayList<>(count);
                long previous = 0;
                for (int i = 0; i < count; i++) {
                    OpenTask t = readTask(in, previous);
                    if (i > 0 && t.taskId() <= previous) {
                        throw in.malformed("task " + i + "'s id " + Long.toUnsignedString(t.taskId())
                                + " does not ascend from " + Long.toUnsignedString(previous));
                    }
                    tasks.add(t);
                    previous = t.taskId();
                }
                yield new LedgerPart(cursor, tasks);
            }
            case VERSION -> {
                int flags = in.flags(PATH_PRESENT);
                int version = in.u32();
                String path = null;
                if ((flags & PATH_PRESENT) != 0) {
                    path = in.utf8(in.u32());
                }
                yield new VersionRecord(version, path);
            }
            default ->
                throw new NotSerializableException("rollout-ledger: unknown manifest '" + manifest
                        + "' (known: T for DurableState.OpenTask, C for DurableState.Cursor, V for"
                        + " DurableState.VersionRecord, P for DurableState.LedgerPart); is the sending node"
                        + " of a newer build?");
        };
        in.end();
        return value;
    }

    /** The record a manifest names, for errors. */
    static String recordOf(String manifest) {
        return switch (manifest) {
            case TASK -> "DurableState.OpenTask";
            case CURSOR -> "DurableState.Cursor";
            case VERSION -> "DurableState.VersionRecord";
            case PART -> "DurableState.LedgerPart";
            default -> "an unknown record";
        };
    }

    /** An open task, its id written as {@code idDelta} (the id itself, or its step from the previous). */
    private static void writeTask(Out out, OpenTask t, long idDelta) {
        out.b((t.isEval() ? EVAL : 0)
                | (t.accepted() ? ACCEPTED : 0)
                | (t.possiblyDelivered() ? POSSIBLY_DELIVERED : 0));
        out.u(idDelta);
        out.u(t.attempt() & 0xFFFF_FFFFL);
        out.z(t.taskId() - t.sourceIndex());
        out.u(t.dispatchVersion() & 0xFFFF_FFFFL);
    }

    /** An open task written by {@link #writeTask} with its id as a step from {@code previousId}. */
    private static OpenTask readTask(In in, long previousId) {
        int flags = in.flags(EVAL | ACCEPTED | POSSIBLY_DELIVERED);
        long taskId = previousId + in.u64();
        int attempt = in.u32();
        long sourceIndex = taskId - in.z64();
        int dispatchVersion = in.u32();
        return new OpenTask(
                taskId,
                attempt,
                (flags & EVAL) != 0,
                sourceIndex,
                dispatchVersion,
                (flags & ACCEPTED) != 0,
                (flags & POSSIBLY_DELIVERED) != 0);
    }

    private static void writeCursor(Out out, Cursor c) {
        out.u(c.nextTaskId());
        out.z(c.nextTaskId() - c.trainTaken());
        out.z(c.trainTaken() - c.accepted());
        out.u(c.incarnation());
    }

    private static Cursor readCursor(In in) {
        long next = in.u64();
        long trainTaken = next - in.z64();
        long accepted = trainTaken - in.z64();
        return new Cursor(next, trainTaken, accepted, in.u64());
    }

    /** A growing byte buffer with varint writers. */
    private static final class Out {
        private byte[] buf = new byte[16];
        private int n;

        void b(int v) {
            if (n == buf.length) {
                buf = Arrays.copyOf(buf, buf.length * 2);
            }
            buf[n++] = (byte) v;
        }

        /** Unsigned LEB128 of all 64 bits: at most 10 bytes. */
        void u(long v) {
            while ((v & ~0x7FL) != 0) {
                b((int) ((v & 0x7F) | 0x80));
                v >>>= 7;
            }
            b((int) v);
        }

        /** Zigzag, then unsigned: small differences of either sign are small. */
        void z(long v) {
            u((v << 1) ^ (v >> 63));
        }

        void bytes(byte[] b) {
            if (n + b.length > buf.length) {
                buf = Arrays.copyOf(buf, Math.max(buf.length * 2, n + b.length));
            }
            System.arraycopy(b, 0, buf, n, b.length);
            n += b.length;
        }

        byte[] toBytes() {
            return Arrays.copyOf(buf, n);
        }
    }

    /** A strict reader: every error names the manifest, the record and where it went wrong. */
    private static final class In {
        private final byte[] bytes;
        private final String manifest;
        private int pos;

        In(byte[] bytes, String manifest) {
            if (bytes == null) {
                throw new IllegalArgumentException(
                        "rollout-ledger: no bytes for manifest '" + manifest + "' (" + recordOf(manifest) + ")");
            }
            this.bytes = bytes;
            this.manifest = manifest;
        }

        IllegalArgumentException malformed(String what) {
            return new IllegalArgumentException("rollout-ledger: malformed " + recordOf(manifest) + " (manifest '"
                    + manifest + "', " + bytes.length + " bytes): " + what);
        }

        int remaining() {
            return bytes.length - pos;
        }

        int flags(int known) {
            int at = pos;
            int f = next("flags") & 0xFF;
            if ((f & ~known) != 0) {
                throw malformed("unknown flag bits 0x" + Integer.toHexString(f & ~known) + " at byte " + at);
            }
            return f;
        }

        private int next(String field) {
            if (pos >= bytes.length) {
                throw malformed("cut short at byte " + pos + ", reading " + field);
            }
            return bytes[pos++];
        }

        long u64() {
            long v = 0;
            for (int shift = 0; ; shift += 7) {
                int b = next("a varint");
                if (shift == 63 && (b & 0xFE) != 0) {
                    throw malformed("a varint longer than 64 bits ending at byte " + (pos - 1));
                }
                v |= (long) (b & 0x7F) << shift;
                if ((b & 0x80) == 0) {
                    return v;
                }
            }
        }

        int u32() {
            long v = u64();
            if ((v >>> 32) != 0) {
                throw malformed(
                        "a 32-bit field holds " + Long.toUnsignedString(v) + " (ending at byte " + (pos - 1) + ")");
            }
            return (int) v;
        }

        long z64() {
            long v = u64();
            return (v >>> 1) ^ -(v & 1);
        }

        String utf8(int length) {
            if (length < 0 || length > bytes.length - pos) {
                throw malformed("a string of " + Integer.toUnsignedString(length) + " bytes at byte " + pos
                        + " runs past the end");
            }
            String s = new String(bytes, pos, length, StandardCharsets.UTF_8);
            pos += length;
            return s;
        }

        void end() {
            if (pos != bytes.length) {
                throw malformed((bytes.length - pos) + " byte(s) follow the record at byte " + pos);
            }
        }
    }
}
