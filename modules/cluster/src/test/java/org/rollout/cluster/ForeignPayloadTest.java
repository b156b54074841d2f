package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.io.Output;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import scala.util.Try;

/**
 * The receiving side of serialization: bytes that name a class outside our lists are refused
 * before anything of that class is built, whichever serializer they claim. (The sending side —
 * an unregistered or Java-only message is not sent — is in {@link MessageSerializationTest} and
 * {@link CrossNodeTest}.)
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ForeignPayloadTest {
    private final ActorTestKit kit = ActorTestKit.create("foreign-payload-test", TestRollout.PEKKO);
    private final Serialization serialization = SerializationExtension.get(Adapter.toClassic(kit.system()));

    @AfterAll
    void shutdown() {
        kit.shutdownTestKit();
    }

    /** A class in no list; counts how often it is built or deserialized. */
    static final class Foreign implements Serializable {
        static final AtomicInteger BUILT = new AtomicInteger();
        int value;

        Foreign() {
            BUILT.incrementAndGet();
        }

        private void readObject(ObjectInputStream in) throws IOException, ClassNotFoundException {
            BUILT.incrementAndGet();
            in.defaultReadObject();
        }
    }

    private KryoPayloadSerializer kryo() throws java.io.NotSerializableException {
        return (KryoPayloadSerializer) serialization.serializerFor(Collector.BatchReply.class);
    }

    @Test
    void kryoRefusesBytesThatNameAForeignClassWithoutBuildingIt() throws Exception {
        Kryo open = new Kryo();
        open.setRegistrationRequired(false);
        Output out = new Output(256, -1);
        Foreign f = new Foreign();
        f.value = 7;
        open.writeClassAndObject(out, f);
        byte[] bytes = out.toBytes();
        int built = Foreign.BUILT.get();

        KryoPayloadSerializer kryo = kryo();
        assertThatThrownBy(() -> kryo.fromBinaryJava(bytes, null))
                .hasMessageContaining("Class is not registered: " + Foreign.class.getName());
        assertThat(Foreign.BUILT.get()).isEqualTo(built);
    }

    @Test
    void kryoRefusesAClassIdOutsideItsRegistrationList() throws Exception {
        Output out = new Output(16, -1);
        out.writeVarInt(999 + 2, true); // Kryo writes a registered class as its id + 2
        byte[] bytes = out.toBytes();
        KryoPayloadSerializer kryo = kryo();
        assertThatThrownBy(() -> kryo.fromBinaryJava(bytes, null))
                .hasMessageContaining("Encountered unregistered class ID: 999");
    }

    @Test
    void cborRefusesAManifestNamingAClassOutsideTheBindings() throws Exception {
        Collector.AckReply valid = new Collector.AckReply(5, true);
        int cbor = serialization.findSerializerFor(valid).identifier();
        byte[] bytes = serialization.serialize(valid).get();

        Try<Object> foreign = serialization.deserialize(bytes, cbor, Foreign.class.getName());
        assertThat(foreign.isFailure()).isTrue();
        assertThat(foreign.failed().get())
                .hasMessageContaining("[" + Foreign.class.getName() + "]")
                .hasMessageContaining("for security reasons");

        Try<Object> gadget = serialization.deserialize(bytes, cbor, "java.lang.ProcessBuilder");
        assertThat(gadget.isFailure()).isTrue();
        assertThat(gadget.failed().get())
                .hasMessageContaining("[java.lang.ProcessBuilder]")
                .hasMessageContaining("for security reasons");
    }

    @Test
    void javaSerializedBytesAreRefusedWithoutBeingRead() throws Exception {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(b)) {
            out.writeObject(new Foreign());
        }
        int built = Foreign.BUILT.get();
        int javaSerializerId = 1; // Pekko's JavaSerializer
        Try<Object> read = serialization.deserialize(b.toByteArray(), javaSerializerId, "");
        assertThat(read.isFailure()).isTrue();
        assertThat(read.failed().get()).hasMessageContaining("allow-java-serialization");
        assertThat(Foreign.BUILT.get()).isEqualTo(built);
    }
}
