package org.rollout.benchmarks;

import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.infra.Blackhole;
import org.rollout.api.TrainingGroup;
import org.rollout.cluster.KryoPayloadSerializer;

/**
 * The cluster's own tensor serializer ({@link KryoPayloadSerializer}, the binding that carries a
 * group between nodes and a batch to the gateway) on one 16 × 8k group ({@link GroupFixture}),
 * against the floor of moving the same bytes: encode (group → Kryo bytes) then decode (bytes →
 * group), and, as the baseline, two {@code System.arraycopy}s of that many bytes (one for each way).
 *
 * <p>Its ratio is the serializer's cost in units of a memory copy: what a byte costs on its way
 * between the group's arrays and a socket, on each side of a cross-node transfer.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class PayloadCodecBenchmark {
    private KryoPayloadSerializer codec;
    private TrainingGroup group;
    private byte[] encoded;
    private byte[] copyFrom;
    private byte[] copyTo;

    @Setup(Level.Trial)
    public void setUp() {
        codec = new KryoPayloadSerializer(null);
        GroupFixture fixture = new GroupFixture();
        int rows = fixture.merged.batchSize();
        group = new TrainingGroup(
                42,
                0,
                fixture.merged,
                IntStream.range(0, rows).toArray(),
                IntStream.range(0, rows).map(i -> 1).toArray(),
                3,
                3,
                4,
                4);
        encoded = codec.toBinary(group);
        copyFrom = encoded.clone();
        copyTo = new byte[encoded.length];
        if (!group.equals(codec.fromBinaryJava(encoded, null))) {
            throw new IllegalStateException("a round trip through the serializer changed the group");
        }
    }

    /** The serialized size of the fixture's group, in bytes (for the summary; not measured). */
    public static int encodedBytes() {
        PayloadCodecBenchmark b = new PayloadCodecBenchmark();
        b.setUp();
        return b.encoded.length;
    }

    /** The sending side alone: group → bytes. */
    @Benchmark
    public byte[] encode() {
        return codec.toBinary(group);
    }

    /** The receiving side alone: bytes → group (fresh tensors). */
    @Benchmark
    public Object decode() {
        return codec.fromBinaryJava(encoded, null);
    }

    @Benchmark
    public Object roundTrip() {
        return codec.fromBinaryJava(codec.toBinary(group), null);
    }

    @Benchmark
    public byte[] copyFloor() {
        System.arraycopy(copyFrom, 0, copyTo, 0, copyFrom.length);
        System.arraycopy(copyTo, 0, copyFrom, 0, copyTo.length);
        return copyFrom;
    }

    /** Both, back to back in alternating order ({@link PairTimes}: subject = serializer, baseline = copies). */
    @Benchmark
    public void interleaved(PairTimes times, Blackhole bh) {
        boolean baselineFirst = times.baselineFirstThisRound();
        for (int k = 0; k < 2; k++) {
            boolean baseline = (k == 0) == baselineFirst;
            long t0 = System.nanoTime();
            bh.consume(baseline ? copyFloor() : roundTrip());
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
