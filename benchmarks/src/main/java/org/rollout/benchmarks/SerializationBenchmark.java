package org.rollout.benchmarks;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.cbor.CBORFactory;
import java.io.IOException;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.infra.Blackhole;
import org.rollout.api.Int32Tensor;
import org.rollout.api.TensorDict;

/**
 * Kryo against Jackson CBOR for one 16 × 8k group ({@link GroupFixture}, merged: five [16, 8192]
 * matrices and the rewards), as a flat record of primitive arrays ({@link GroupPayload}): a full
 * round trip (encode, then decode the bytes) with each. Kryo: plain Kryo 5, registration required,
 * the default serializers of {@code int[]}, {@code float[]}, {@code boolean[]} and records (bulk
 * array writes). CBOR: one {@code ObjectMapper} over {@code CBORFactory}, default settings (arrays
 * of CBOR integers and 32-bit floats).
 *
 * <p>This measures the two encodings of the same data, not the cluster's Pekko serializer binding
 * (which adds its own framing, pooling and manifest handling).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class SerializationBenchmark {

    /**
     * The group as the wire sees it: flat row-major arrays plus the shape.
     *
     * @param taskId the group's task
     * @param rows R
     * @param width L
     * @param inputIds [R·L]
     * @param attentionMask [R·L]
     * @param lossMask [R·L]
     * @param logprobs [R·L]
     * @param versions [R·L]
     * @param rewards [R]
     */
    public record GroupPayload(
            long taskId,
            int rows,
            int width,
            int[] inputIds,
            boolean[] attentionMask,
            int[] lossMask,
            float[] logprobs,
            int[] versions,
            float[] rewards) {

        static GroupPayload of(long taskId, TensorDict merged) {
            Int32Tensor ids = merged.int32(TensorDict.INPUT_IDS);
            return new GroupPayload(
                    taskId,
                    ids.dim(0),
                    ids.dim(1),
                    ids.toArray(),
                    merged.bool(TensorDict.ATTENTION_MASK).toArray(),
                    merged.int32(TensorDict.LOSS_MASK).toArray(),
                    merged.float32(TensorDict.LOGPROBS).toArray(),
                    merged.int32(TensorDict.VERSIONS).toArray(),
                    merged.float32(TensorDict.REWARDS).toArray());
        }

        boolean sameAs(GroupPayload o) {
            return taskId == o.taskId
                    && rows == o.rows
                    && width == o.width
                    && Arrays.equals(inputIds, o.inputIds)
                    && Arrays.equals(attentionMask, o.attentionMask)
                    && Arrays.equals(lossMask, o.lossMask)
                    && Arrays.equals(logprobs, o.logprobs)
                    && Arrays.equals(versions, o.versions)
                    && Arrays.equals(rewards, o.rewards);
        }
    }

    private GroupPayload payload;
    private Kryo kryo;
    private Output output;
    private ObjectMapper cbor;

    /** Sizes in bytes of the payload encoded each way (for the summary; not measured). */
    public record Sizes(int kryoBytes, int cborBytes, long rawBytes) {}

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        payload = GroupPayload.of(42, new GroupFixture().merged);
        kryo = newKryo();
        output = new Output(1 << 20, -1);
        cbor = new ObjectMapper(new CBORFactory());
        if (!kryoRoundTrip().sameAs(payload) || !cborRoundTrip().sameAs(payload)) {
            throw new IllegalStateException("a round trip changed the payload");
        }
    }

    static Kryo newKryo() {
        Kryo k = new Kryo();
        k.setRegistrationRequired(true);
        k.register(int[].class, 100);
        k.register(float[].class, 101);
        k.register(boolean[].class, 102);
        k.register(GroupPayload.class, 103);
        return k;
    }

    /** The encoded sizes of the fixture's payload. */
    public static Sizes sizes() throws IOException {
        GroupPayload p = GroupPayload.of(42, new GroupFixture().merged);
        Output out = new Output(1 << 20, -1);
        newKryo().writeObject(out, p);
        int cells = p.rows() * p.width();
        long raw = 4L * cells * 4 + cells + 4L * p.rewards().length;
        return new Sizes(out.position(), new ObjectMapper(new CBORFactory()).writeValueAsBytes(p).length, raw);
    }

    @Benchmark
    public GroupPayload kryoRoundTrip() {
        output.reset();
        kryo.writeObject(output, payload);
        return kryo.readObject(new Input(output.getBuffer(), 0, output.position()), GroupPayload.class);
    }

    @Benchmark
    public GroupPayload cborRoundTrip() throws IOException {
        byte[] bytes = cbor.writeValueAsBytes(payload);
        return cbor.readValue(bytes, GroupPayload.class);
    }

    /** Both, back to back in alternating order ({@link PairTimes}: subject = CBOR, baseline = Kryo). */
    @Benchmark
    public void interleaved(PairTimes times, Blackhole bh) throws IOException {
        boolean baselineFirst = times.baselineFirstThisRound();
        for (int k = 0; k < 2; k++) {
            boolean baseline = (k == 0) == baselineFirst;
            long t0 = System.nanoTime();
            bh.consume(baseline ? kryoRoundTrip() : cborRoundTrip());
            long elapsed = System.nanoTime() - t0;
            if (baseline) {
                times.baselineNanos += elapsed;
            } else {
                times.subjectNanos += elapsed;
            }
        }
        times.rounds++;
    }
}
