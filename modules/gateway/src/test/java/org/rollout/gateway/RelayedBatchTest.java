package org.rollout.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.rollout.api.TrainingBatch;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.RolloutStatus;
import org.rollout.trainer.wire.BatchWireFormat;
import org.rollout.trainer.wire.EncodedBatch;
import org.rollout.trainer.wire.EncodedBatchSource;

/**
 * A pull answered from an engine that hands out batches already encoded (a batch relayed from the
 * node that holds it): the gateway writes those bytes as they are, with the batch's id, groups and
 * length, and never asks for the batch object. When the holder stops half-way the trainer does not
 * get the batch whole, so the gateway releases it for the next pull at once.
 */
@Timeout(60)
class RelayedBatchTest {

    /** Hands out {@code batch}'s RBATCH bytes once, all of them or only the first {@code cutAfter}. */
    static final class RelayingEngine implements RolloutClient, EncodedBatchSource {
        volatile TrainingBatch batch;
        volatile long cutAfter = -1;
        final AtomicInteger objectPulls = new AtomicInteger();
        final List<Long> released = new CopyOnWriteArrayList<>();

        @Override
        public Optional<EncodedBatch> nextEncodedBatch(Duration wait) throws InterruptedException {
            TrainingBatch b = batch;
            batch = null;
            if (b == null) {
                return Optional.empty();
            }
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try {
                BatchWireFormat.write(b, bytes);
            } catch (IOException e) {
                throw new AssertionError(e);
            }
            byte[] encoded = bytes.toByteArray();
            long cut = cutAfter;
            return Optional.of(new EncodedBatch() {
                @Override
                public long batchId() {
                    return b.batchId();
                }

                @Override
                public int groups() {
                    return b.size();
                }

                @Override
                public List<Long> taskIds() {
                    return b.groups().stream().map(g -> g.taskId()).toList();
                }

                @Override
                public long length() {
                    return encoded.length;
                }

                @Override
                public long writeTo(OutputStream out) throws IOException {
                    if (cut >= 0) {
                        out.write(encoded, 0, (int) cut);
                        out.flush();
                        throw new SourceFailedException("batch " + b.batchId() + ": the holder went away", null);
                    }
                    out.write(encoded);
                    return encoded.length;
                }
            });
        }

        @Override
        public TrainingBatch nextBatch() {
            throw new AssertionError("the gateway pulls with a timeout");
        }

        @Override
        public Optional<TrainingBatch> nextBatch(Duration timeout) {
            objectPulls.incrementAndGet();
            return Optional.empty();
        }

        @Override
        public void acknowledge(TrainingBatch b) {}

        @Override
        public void release(long batchId) {
            released.add(batchId);
        }

        @Override
        public PublishResult publishWeights(int version, Path weights) {
            throw new AssertionError("not used");
        }

        @Override
        public RolloutStatus status() {
            return FakeEngine.STATUS;
        }

        @Override
        public void close() {}
    }

    @Test
    void aBatchHandedOutEncodedIsWrittenAsItIs() throws Exception {
        TrainingBatch batch = LargeBatchStreamingTest.large();
        RelayingEngine engine = new RelayingEngine();
        engine.batch = batch;
        try (TrainerGateway g = TrainerGateway.start(GatewayConfig.defaults(), engine);
                RolloutClient trainer =
                        RolloutClient.connect(ClientConfig.of(g.uri().toString()))) {
            TrainingBatch received = trainer.nextBatch(Duration.ofSeconds(30)).orElseThrow();
            assertThat(received).isEqualTo(batch);
            assertThat(engine.objectPulls).hasValue(0);
            assertThat(engine.released).isEmpty();
        }
    }

    @Test
    void aHolderThatStopsHalfWayReleasesTheBatchForTheNextPull() throws Exception {
        TrainingBatch batch = LargeBatchStreamingTest.large();
        RelayingEngine engine = new RelayingEngine();
        engine.batch = batch;
        engine.cutAfter = 5L << 20;
        try (TrainerGateway g = TrainerGateway.start(GatewayConfig.defaults(), engine);
                java.net.http.HttpClient http = java.net.http.HttpClient.newBuilder()
                        .version(java.net.http.HttpClient.Version.HTTP_1_1)
                        .build()) {
            java.net.http.HttpRequest pull = java.net.http.HttpRequest.newBuilder(
                            java.net.URI.create(g.uri() + "/v1/batches/next?wait=10"))
                    .POST(java.net.http.HttpRequest.BodyPublishers.noBody())
                    .build();
            // The body is announced whole and ends early: the trainer's read fails, it never has the batch.
            assertThatThrownBy(() -> http.send(pull, java.net.http.HttpResponse.BodyHandlers.ofByteArray()))
                    .isInstanceOf(IOException.class);
            TestRollout.await(
                    "the gateway to release the batch", Duration.ofSeconds(30), () -> engine.released.size() == 1);
            assertThat(engine.released).containsExactly(batch.batchId());
            assertThat(g.handler().batchesReleased()).isEqualTo(1);
        }
    }
}
