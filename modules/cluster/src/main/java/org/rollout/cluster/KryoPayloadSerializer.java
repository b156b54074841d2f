package org.rollout.cluster;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import com.esotericsoftware.kryo.util.Pool;
import java.io.InputStream;
import java.io.OutputStream;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.serialization.JSerializer;

/**
 * Pekko's serializer for {@link KryoSerializable} messages (tensor payloads), bound in this
 * module's {@code reference.conf} under the name {@code rollout-kryo}, identifier {@value #ID}.
 *
 * <p>Every message is written as Kryo's class id followed by its body ({@link KryoRegistrations}:
 * a fixed list, registration required, no reflection), so no manifest travels. Besides the
 * byte-array form Pekko uses for one message, {@link #write} and {@link #read} work on streams:
 * that is how {@link LargePayloads} moves a payload bigger than one frame in chunks without ever
 * holding its whole serialized form.
 *
 * <p>Thread safety: Kryo instances are not thread-safe; they come from a pool (at most {@value
 * #POOLED} kept), one per call. Errors: a class that is not registered, or bytes that do not decode,
 * raise Kryo's exception; Pekko logs it and drops the message (the connection is unharmed).
 */
public final class KryoPayloadSerializer extends JSerializer {
    /** The serializer identifier on the wire; Pekko reserves 0 to 40. */
    public static final int ID = 7_001;

    private static final int POOLED = 16;

    private final Pool<Kryo> kryos = new Pool<>(true, false, POOLED) {
        @Override
        protected Kryo create() {
            return KryoRegistrations.newKryo();
        }
    };

    /** Called by Pekko's serialization extension, once per actor system. */
    public KryoPayloadSerializer(ExtendedActorSystem system) {}

    @Override
    public int identifier() {
        return ID;
    }

    @Override
    public boolean includeManifest() {
        return false;
    }

    @Override
    public byte[] toBinary(Object o) {
        Kryo k = kryos.obtain();
        try {
            Output out = new Output(4096, -1);
            k.writeClassAndObject(out, o);
            return out.toBytes();
        } finally {
            kryos.free(k);
        }
    }

    @Override
    public Object fromBinaryJava(byte[] bytes, Class<?> manifest) {
        Kryo k = kryos.obtain();
        try {
            return k.readClassAndObject(new Input(bytes));
        } finally {
            kryos.free(k);
        }
    }

    /**
     * Writes {@code o} to {@code stream} through a buffer of {@code chunkBytes}: the stream sees
     * writes of at most that many bytes, and nothing else of the serialized form is kept.
     *
     * @return the number of bytes written
     */
    long write(Object o, OutputStream stream, int chunkBytes) {
        Kryo k = kryos.obtain();
        try {
            Output out = new Output(stream, chunkBytes);
            k.writeClassAndObject(out, o);
            out.flush();
            return out.total();
        } finally {
            kryos.free(k);
        }
    }

    /**
     * Reads one object from {@code stream} through a buffer of {@code chunkBytes}, and checks that
     * nothing follows it.
     *
     * @param what names the payload in errors (task id, batch id)
     */
    Object read(InputStream stream, int chunkBytes, String what) {
        return read(stream, chunkBytes, what, false);
    }

    /**
     * Reads one object from {@code stream} as {@link #read} does, followed by the data plane's end
     * byte ({@link DataPlane#END}) instead of the end of the stream: the stream stays open for the
     * next one, and nothing may follow the end byte meanwhile.
     */
    Object readFramed(InputStream stream, int chunkBytes, String what) {
        return read(stream, chunkBytes, what, true);
    }

    private Object read(InputStream stream, int chunkBytes, String what, boolean framed) {
        Kryo k = kryos.obtain();
        try {
            Input in = new Input(stream, chunkBytes);
            Object o = k.readClassAndObject(in);
            if (framed) {
                int end = in.readByte() & 0xFF;
                if (end != DataPlane.END || in.position() != in.limit()) {
                    throw new IllegalStateException(what + ": the payload does not end after its " + in.total()
                            + " bytes ("
                            + (end != DataPlane.END
                                    ? "byte " + end + " where the end byte belongs"
                                    : "bytes follow the end byte")
                            + "); the stream is corrupt");
                }
                return o;
            }
            if (!in.end()) {
                throw new IllegalStateException(
                        what + ": bytes follow the payload after " + in.total() + " bytes; the stream is corrupt");
            }
            return o;
        } finally {
            kryos.free(k);
        }
    }
}
