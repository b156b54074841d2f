package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.trainer.wire.BatchWireFormat;
import org.rollout.trainer.wire.EncodedBatch;

/**
 * A batch pulled through a node other than the collector's, for a trainer gateway: the collector's
 * node encodes it as RBATCH on its data plane and the puller's node relays the bytes without
 * decoding them. The bytes are those the collector's node would have written itself; a holder that
 * stops half-way fails the relay naming the batch, the node and the bytes, as the holder's failure,
 * not the reader's.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(120)
class BatchRelayTest {
    private static final Duration DEADLINE = Duration.ofSeconds(60);

    private final TwoNodes nodes = new TwoNodes();

    @AfterAll
    void shutdown() {
        nodes.close();
    }

    private ActorRef<Collector.Command> collectorOn(ActorTestKit kit, String name, int batchSize) {
        return TestCollectors.spawn(kit, name, batchSize, Duration.ofMinutes(10), false);
    }

    private LocalRolloutClient pullerOnB(ActorRef<Collector.Command> collectorOnA) {
        TestProbe<RolloutCoordinator.Command> coordinator = nodes.b.createTestProbe();
        TestProbe<WeightVersion.Command> weights = nodes.b.createTestProbe();
        return new LocalRolloutClient(
                nodes.b.system(),
                new LocalRollout.Refs(coordinator.getRef(), nodes.seenFromB(collectorOnA), weights.getRef()),
                DEADLINE);
    }

    @Test
    void aBatchOnAnotherNodeIsRelayedAsTheBytesItsHolderEncodes() throws Exception {
        int groups = 3;
        ActorRef<Collector.Command> onA = collectorOn(nodes.a, "relay-collector", groups);
        TrainingGroup[] sent = new TrainingGroup[groups];
        for (int i = 0; i < groups; i++) {
            sent[i] = Payloads.group(500 + i, 8, 8_192);
            onA.tell(Payloads.accepted(sent[i]));
        }
        LargePayloads onB = LargePayloads.get(nodes.b.system());
        long relayedBefore = onB.batchesRelayed();
        long decodedBefore = onB.streamsReceived();

        EncodedBatch relayed = pullerOnB(onA).nextEncodedBatch(DEADLINE).orElseThrow();
        assertThat(relayed.groups()).isEqualTo(groups);
        assertThat(relayed.taskIds()).containsExactly(500L, 501L, 502L);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        long written;
        try (relayed) {
            written = relayed.writeTo(out);
        }

        TrainingBatch expected = new TrainingBatch(relayed.batchId(), List.of(sent), 0);
        ByteArrayOutputStream direct = new ByteArrayOutputStream();
        BatchWireFormat.write(expected, direct);
        assertThat(written).isEqualTo(relayed.length()).isEqualTo(direct.size());
        assertThat(out.toByteArray()).isEqualTo(direct.toByteArray());
        assertThat(BatchWireFormat.read(new ByteArrayInputStream(out.toByteArray()))
                        .groups())
                .containsExactly(sent);
        assertThat(onB.batchesRelayed()).isEqualTo(relayedBefore + 1);
        assertThat(onB.bytesRelayed()).isGreaterThanOrEqualTo(direct.size());
        // Nothing was decoded on the relaying node.
        assertThat(onB.streamsReceived()).isEqualTo(decodedBefore);
    }

    @Test
    void aBatchBelowTheThresholdIsEncodedOnThePullersNode() throws Exception {
        ActorRef<Collector.Command> onA = collectorOn(nodes.a, "small-collector", 1);
        TrainingGroup small = Payloads.group(600, 2, 16);
        onA.tell(Payloads.accepted(small));
        LargePayloads onB = LargePayloads.get(nodes.b.system());
        long relayedBefore = onB.batchesRelayed();

        try (EncodedBatch b = pullerOnB(onA).nextEncodedBatch(DEADLINE).orElseThrow()) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            b.writeTo(out);
            assertThat(BatchWireFormat.read(new ByteArrayInputStream(out.toByteArray()))
                            .groups())
                    .containsExactly(small);
        }
        assertThat(onB.batchesRelayed()).isEqualTo(relayedBefore);
    }

    @Test
    void aHolderThatStopsHalfWayFailsTheRelayAsTheSourcesFailure() throws Exception {
        try (ServerSocket holder = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            CompletableFuture<String> asked = CompletableFuture.supplyAsync(() -> {
                try (Socket s = holder.accept()) {
                    byte[] hello = s.getInputStream().readNBytes(5 + 32 + 1);
                    OutputStream o = s.getOutputStream();
                    o.write('Y');
                    o.write(ByteBuffer.allocate(8).putLong(1_000).array());
                    o.write(new byte[400]);
                    o.flush();
                    return new String(hello, StandardCharsets.US_ASCII);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            DirectRef ref = new DirectRef("127.0.0.1", holder.getLocalPort(), "cd".repeat(16));
            EncodedBatch b = LargePayloads.get(nodes.b.system()).relay(ref, 77, 2, List.of(1L, 2L));
            assertThat(b.length()).isEqualTo(1_000);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            assertThatThrownBy(() -> b.writeTo(out))
                    .isInstanceOf(EncodedBatch.SourceFailedException.class)
                    .hasMessageContaining("batch 77")
                    .hasMessageContaining("127.0.0.1:" + holder.getLocalPort())
                    .hasMessageContaining("400 of 1000 bytes");
            assertThat(out.size()).isEqualTo(400);
            assertThat(asked.get()).isEqualTo("RLB1 " + "cd".repeat(16) + "\n");
        }
    }

    @Test
    void aBatchItsHolderNoLongerHoldsFailsTheRelayNamingIt() {
        DirectRef unknown =
                new DirectRef("127.0.0.1", LargePayloads.get(nodes.a.system()).dataPlanePort(), "ef".repeat(16));
        assertThatThrownBy(() -> LargePayloads.get(nodes.b.system()).relay(unknown, 78, 1, List.of(3L)))
                .hasMessageContaining("batch 78")
                .hasMessageContaining("no longer holds the payload");
    }
}
