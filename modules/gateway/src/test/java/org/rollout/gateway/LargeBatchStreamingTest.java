package org.rollout.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.rollout.api.BoolTensor;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.wire.BatchWireFormat;

/**
 * An 80 MiB batch through the gateway. Measured (and printed), not timed: the live heap beyond the
 * batch itself while the transfer is half done, with gateway and trainer in this one JVM; and what
 * the trainer's thread allocates to receive the batch through {@link RolloutClient#connect}.
 */
class LargeBatchStreamingTest {
    private static final int GROUPS = 72;
    private static final int ROWS = 4;
    private static final int LENGTH = 32_768;
    private static final long MIB = 1 << 20;
    /** Live heap beyond the batch and what the reader has decoded so far, at the half-way point. */
    private static final long EXTRA_HEAP_BOUND = 16 * MIB;

    /** 72 groups of 4 rows × 32768 tokens: bool mask, int32 ids, float32 logprobs, float32 rewards (≈ 81 MiB). */
    static TrainingBatch large() {
        List<TrainingGroup> groups = new ArrayList<>(GROUPS);
        for (int g = 0; g < GROUPS; g++) {
            BoolTensor.Builder mask = BoolTensor.builder(ROWS, LENGTH);
            Int32Tensor.Builder ids = Int32Tensor.builder(ROWS, LENGTH);
            Float32Tensor.Builder logprobs = Float32Tensor.builder(ROWS, LENGTH);
            for (int i = 0; i < ROWS * LENGTH; i++) {
                mask.set(i, (i + g) % 3 != 0);
                ids.set(i, g * 1_000_003 + i);
                logprobs.set(i, -((i % 977) + g) / 100f);
            }
            TensorDict rows = TensorDict.builder()
                    .put(TensorDict.ATTENTION_MASK, mask.build())
                    .put(TensorDict.INPUT_IDS, ids.build())
                    .put(TensorDict.LOGPROBS, logprobs.build())
                    .put(TensorDict.REWARDS, Float32Tensor.vector(0f, 0.25f, 0.5f, g))
                    .build();
            groups.add(new TrainingGroup(g, 0, rows, new int[] {0, 1, 2, 3}, new int[] {1, 1, 1, 1}, 0, 0, 0, 0));
        }
        return new TrainingBatch(41, groups, 0);
    }

    @Test
    void aLargeBatchStreamsWithBoundedExtraHeapOnBothSides() throws Exception {
        TrainingBatch big = large();
        long encoded = BatchWireFormat.write(big, OutputStream.nullOutputStream());
        assertThat(encoded).isGreaterThan(64 * MIB);
        FakeEngine engine = new FakeEngine();
        engine.batch = big;
        try (TrainerGateway g = TrainerGateway.start(GatewayConfig.defaults(), engine);
                HttpClient http = HttpClient.newBuilder()
                        .version(HttpClient.Version.HTTP_1_1)
                        .build()) {
            long before = liveHeap();
            HttpResponse<InputStream> r = http.send(
                    HttpRequest.newBuilder(URI.create(g.uri() + "/v1/batches/next?wait=10"))
                            .POST(HttpRequest.BodyPublishers.noBody())
                            .build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            assertThat(r.statusCode()).isEqualTo(200);
            // A plain body of the exact encoded length (no chunk framing), still written as it is encoded.
            assertThat(r.headers().firstValue("Transfer-Encoding")).isEmpty();
            assertThat(r.headers().firstValueAsLong("Content-Length")).hasValue(encoded);
            HalfWayProbe probe = new HalfWayProbe(r.body(), encoded / 2);
            TrainingBatch received;
            try (InputStream in = probe) {
                received = BatchWireFormat.read(in);
                assertThat(in.read()).isEqualTo(-1);
            }
            assertThat(received).isEqualTo(big);

            // What the reader has decoded by the probe is as large as what it has read (these dtypes
            // take as many bytes decoded as on the wire), give or take the tensor being filled.
            long extra = probe.liveHeapAtProbe - before - probe.probedAt;
            System.out.printf(
                    Locale.ROOT,
                    "large batch: %.1f MiB on the wire; live heap beyond the batch and the decoded half, half-way"
                            + " through: %.1f MiB (gateway and trainer together)%n",
                    encoded / (double) MIB,
                    extra / (double) MIB);
            assertThat(extra).isLessThan(EXTRA_HEAP_BOUND);
        }
    }

    @Test
    void theJavaClientAllocatesAboutTheDecodedBatchToReceiveIt() throws Exception {
        TrainingBatch big = large();
        long encoded = BatchWireFormat.write(big, OutputStream.nullOutputStream());
        FakeEngine engine = new FakeEngine();
        engine.batch = big;
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        try (TrainerGateway g = TrainerGateway.start(GatewayConfig.defaults(), engine);
                RolloutClient c = RolloutClient.connect(ClientConfig.of(g.uri().toString()))) {
            c.status(); // connection set up before measuring
            long threadBefore = threads.getCurrentThreadAllocatedBytes();
            long totalBefore = threads.getTotalThreadAllocatedBytes();
            TrainingBatch received = c.nextBatch(Duration.ofSeconds(10)).orElseThrow();
            long onTrainerThread = threads.getCurrentThreadAllocatedBytes() - threadBefore;
            long everywhere = threads.getTotalThreadAllocatedBytes() - totalBefore;
            assertThat(received).isEqualTo(big);
            System.out.printf(
                    Locale.ROOT,
                    "large batch via RolloutClient.connect: %.1f MiB on the wire; allocated on the trainer's thread"
                            + " %.1f MiB (%.2f× the wire size: the decoded tensors plus chunk buffers); allocated by"
                            + " all threads, gateway and HTTP client included, %.1f MiB%n",
                    encoded / (double) MIB,
                    onTrainerThread / (double) MIB,
                    onTrainerThread / (double) encoded,
                    everywhere / (double) MIB);
            // The decoded tensors are the wire size; anything near twice that would be a second copy.
            assertThat(onTrainerThread).isLessThan(encoded + EXTRA_HEAP_BOUND);
        }
    }

    /** Live heap after full collections (the test's own figure, not a tuning knob). */
    private static long liveHeap() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** Counts bytes read; the first time the count passes {@code at}, measures the live heap. */
    private static final class HalfWayProbe extends FilterInputStream {
        private final long at;
        private long read;
        long probedAt = -1;
        long liveHeapAtProbe;

        HalfWayProbe(InputStream in, long at) {
            super(in);
            this.at = at;
        }

        @Override
        public int read() throws IOException {
            int b = super.read();
            if (b >= 0) {
                advance(1);
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = super.read(b, off, len);
            if (n > 0) {
                advance(n);
            }
            return n;
        }

        private void advance(int n) {
            read += n;
            if (probedAt < 0 && read >= at) {
                probedAt = read;
                liveHeapAtProbe = liveHeap();
            }
        }
    }
}
