package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.TrainingBatch;

/** The stream form of large payloads within one system, its failures, and its settings. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class LargePayloadsTest {
    private final ActorTestKit kit = ActorTestKit.create("large-payloads-test", TestRollout.PEKKO);
    private final LargePayloads payloads = LargePayloads.get(kit.system());

    @AfterAll
    void shutdown() {
        kit.shutdownTestKit();
    }

    @Test
    void aBatchOfferedAsAStreamIsReceivedEqual() throws Exception {
        TrainingBatch batch = Payloads.batch(3, 4, 5, 3000);
        var ref = payloads.offer(new Collector.BatchReply(batch), "batch 3");
        Collector.BatchReply back = payloads.receive(ref, Collector.BatchReply.class, "batch 3")
                .toCompletableFuture()
                .get(60, TimeUnit.SECONDS);
        assertThat(back.batch()).isEqualTo(batch);
        assertThat(back.batch().groups()).containsExactlyElementsOf(batch.groups());
    }

    @Test
    void aPayloadThatCannotBeSerializedFailsTheReceiverNamingIt() {
        var ref = payloads.offer(new CrossNodeTest.Unregistered(1), "task 8 attempt 0");
        assertThatThrownBy(() -> payloads.receive(ref, Collector.GroupFinished.class, "task 8 attempt 0")
                        .toCompletableFuture()
                        .get(60, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .hasMessageStartingWith("task 8 attempt 0: receiving the streamed payload failed")
                // The sender failed the stream: the receiver learns of a failure, not of a short payload.
                .hasMessageNotContaining("Buffer underflow");
    }

    @Test
    void aStreamCarryingAnotherTypeIsRefusedNamingBoth() {
        var ref = payloads.offer(new Collector.BatchReply(null), "batch 4");
        assertThatThrownBy(() -> payloads.receive(ref, Collector.GroupFinished.class, "batch 4")
                        .toCompletableFuture()
                        .get(60, TimeUnit.SECONDS))
                .cause()
                .hasMessage("batch 4: expected a GroupFinished on the stream, received "
                        + Collector.BatchReply.class.getName());
    }

    @Test
    void aStreamedGroupThatCannotBeReceivedIsRejectedAsFailedNamingTheTask() {
        TestProbe<RolloutCoordinator.Command> coordinator = kit.createTestProbe();
        ActorRef<Collector.Command> c = TestCollectors.spawn(kit, "lp", 1, Duration.ofMinutes(5), false);
        c.tell(new Collector.Attach(coordinator.getRef(), 0, 0, java.util.List.of(), java.util.List.of()));
        try (LogCapture log = new LogCapture()) {
            var broken = payloads.offer(new CrossNodeTest.Unregistered(1), "task 5 attempt 2");
            c.tell(new Collector.StreamedGroupFinished(5, 2, false, 0, 0, 10, 1_000_000, broken, null));

            RolloutCoordinator.TaskFinished done =
                    coordinator.expectMessageClass(RolloutCoordinator.TaskFinished.class, Duration.ofSeconds(60));
            assertThat(done.taskId()).isEqualTo(5);
            assertThat(done.attempt()).isEqualTo(2);
            assertThat(done.accepted()).isFalse();
            assertThat(done.reason()).isEqualTo("failed");
            assertThat(log.errorsContaining(
                            "task 5 attempt 2: the group's result (about 1000000 bytes) could not" + " be received"))
                    .hasSize(1);
        }
    }

    @Test
    void byteSizesAreReadWithUnits() {
        assertThat(LargePayloads.chunkSize(
                        com.typesafe.config.ConfigFactory.parseString("rollout.large_payload_chunk_size = 64 KiB")))
                .isEqualTo(65536);
    }

    @Test
    void aThresholdOrChunkThatWouldNotFitInAFrameIsRefusedNamingTheFrameSize() {
        assertThatThrownBy(() -> LargePayloads.checkAgainstFrame(300_000, 131_072, 262_144))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'rollout.large_payload_threshold': 300000 (allowed: at most"
                        + " pekko.remote.artery.advanced.maximum-frame-size (262144) - 8192 = 253952 bytes)");
        assertThatThrownBy(() -> LargePayloads.checkAgainstFrame(0, 260_000, 262_144))
                .hasMessageContaining("'rollout.large_payload_chunk_size': 260000");
    }

    @Test
    void estimatesAreUpperBoundsOfTheSerializedSize() throws Exception {
        KryoPayloadSerializer kryo = (KryoPayloadSerializer) org.apache.pekko.serialization.SerializationExtension.get(
                        org.apache.pekko.actor.typed.javadsl.Adapter.toClassic(kit.system()))
                .serializerFor(Collector.BatchReply.class);
        for (TrainingBatch b : List.of(Payloads.batch(1, 1, 1, 1), Payloads.batch(2, 3, 4, 500))) {
            assertThat((long) kryo.toBinary(new Collector.BatchReply(b)).length)
                    .isLessThanOrEqualTo(LargePayloads.estimatedBytes(b));
        }
        Collector.GroupFinished g = Payloads.accepted(Payloads.group(3, 2, 100));
        assertThat((long) kryo.toBinary(g).length).isLessThanOrEqualTo(LargePayloads.estimatedBytes(g));
    }
}
