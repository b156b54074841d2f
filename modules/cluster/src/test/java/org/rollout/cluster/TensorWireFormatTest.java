package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.rollout.api.BoolTensor;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Int64Tensor;
import org.rollout.api.Tensor;

/**
 * The tensors' wire form is Kryo's own fixed-width little-endian layout, whichever way the
 * elements are copied: a tensor written in bulk reads back with Kryo's element readers, and the
 * bulk reader takes what Kryo's element writers wrote. Both also hold through streams whose
 * buffers split elements (chunks that are not a multiple of an element's width).
 */
class TensorWireFormatTest {
    private static final int N = 3 * KryoRegistrations.BLOCK + 17;

    private final Random random = new Random(20261204);

    @Test
    void bulkWrittenTensorsAreKryosFixedWidthElements() {
        int[] ints = random.ints(N).toArray();
        long[] longs = random.longs(N).toArray();
        float[] floats = new float[N];
        for (int i = 0; i < N; i++) {
            floats[i] = (float) random.nextGaussian() * 1e3f;
        }
        floats[5] = Float.NEGATIVE_INFINITY;
        floats[6] = -0.0f;

        Input ints32 = bodyOf(Int32Tensor.of(ints, N));
        assertThat(ints32.readInts(N)).isEqualTo(ints);
        Input ints64 = bodyOf(Int64Tensor.of(longs, N));
        assertThat(ints64.readLongs(N)).isEqualTo(longs);
        boolean[] bools = new boolean[N];
        for (int i = 0; i < N; i++) {
            bools[i] = random.nextBoolean();
        }
        Input booleans = bodyOf(BoolTensor.of(bools, N));
        assertThat(booleans.readBooleans(N)).isEqualTo(bools);
        Input floats32 = bodyOf(Float32Tensor.of(floats, N));
        float[] back = floats32.readFloats(N);
        for (int i = 0; i < N; i++) {
            assertThat(Float.floatToRawIntBits(back[i]))
                    .as("element %d", i)
                    .isEqualTo(Float.floatToRawIntBits(floats[i]));
        }
    }

    @Test
    void kryoWrittenElementsReadBackAsTensorsThroughSplitChunks() {
        int[] ints = random.ints(N).toArray();
        Kryo kryo = KryoRegistrations.newKryo();
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        Output out = new Output(sink, 1_001);
        kryo.writeClass(out, Int32Tensor.class);
        out.writeVarInt(1, true);
        out.writeVarInt(N, true);
        out.writeInts(ints, 0, N);
        out.flush();

        Input in = new Input(new ByteArrayInputStream(sink.toByteArray()), 999);
        Object read = kryo.readClassAndObject(in);
        assertThat(read).isEqualTo(Int32Tensor.of(ints, N));
    }

    @Test
    void viewsOfEveryTypeRoundTripThroughSplitChunks() {
        int rows = 5;
        int width = KryoRegistrations.BLOCK / 2 + 3;
        int[] ints = random.ints(rows * width).toArray();
        long[] longs = random.longs(rows * width).toArray();
        float[] floats = new float[rows * width];
        boolean[] bools = new boolean[rows * width];
        for (int i = 0; i < floats.length; i++) {
            floats[i] = random.nextFloat();
            bools[i] = random.nextBoolean();
        }
        for (Tensor whole : new Tensor[] {
            Int32Tensor.of(ints, rows, width), Int64Tensor.of(longs, rows, width), Float32Tensor.of(floats, rows, width)
        }) {
            Tensor view = switch (whole) {
                case Int32Tensor t -> t.slice(1, 4);
                case Int64Tensor t -> t.slice(1, 4);
                case Float32Tensor t -> t.slice(1, 4);
                case BoolTensor t -> t.slice(1, 4);
                default -> throw new AssertionError(whole);
            };
            Kryo kryo = KryoRegistrations.newKryo();
            ByteArrayOutputStream sink = new ByteArrayOutputStream();
            Output out = new Output(sink, 1_003);
            kryo.writeClassAndObject(out, view);
            out.flush();
            Object back = kryo.readClassAndObject(new Input(new ByteArrayInputStream(sink.toByteArray()), 997));
            assertThat(back).as("%s", view.getClass().getSimpleName()).isEqualTo(view);
            assertThat(Arrays.equals(((Tensor) back).shape(), new int[] {3, width}))
                    .isTrue();
        }
    }

    /** The bytes after the class id and shape of a rank-1 tensor written by the cluster's serializer. */
    private static Input bodyOf(Tensor t) {
        Kryo kryo = KryoRegistrations.newKryo();
        Output out = new Output(64, -1);
        kryo.writeClassAndObject(out, t);
        Input in = new Input(out.toBytes());
        kryo.readClass(in);
        assertThat(in.readVarInt(true)).isEqualTo(1);
        assertThat(in.readVarInt(true)).isEqualTo(N);
        return in;
    }
}
