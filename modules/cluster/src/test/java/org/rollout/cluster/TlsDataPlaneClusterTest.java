package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.ByteArrayOutputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.trainer.wire.BatchWireFormat;
import org.rollout.trainer.wire.EncodedBatch;

/**
 * Two actor systems in one cluster over Artery's {@code tls-tcp} ({@code cluster-config/tls.conf},
 * stores from {@code gen-keystores.sh}): large payloads cross on the TLS data plane, not on stream
 * refs — a group into a collector on the other node, a batch pulled and decoded, a batch relayed as
 * RBATCH. A third system with the self-signed rogue certificate cannot fetch a payload it was told
 * of, and the refusal is counted where the metric reads it. {@code large_payload_transport =
 * "stream-ref"} still opts out.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(300)
class TlsDataPlaneClusterTest {
    private static final Duration DEADLINE = Duration.ofSeconds(60);

    private TlsStores stores;
    private TwoNodes nodes;

    @BeforeAll
    void startNodes(@TempDir Path dir) throws Exception {
        stores = TlsStores.generate(dir.resolve("tls"));
        nodes = new TwoNodes(stores.tlsTcp(), stores.tlsTcp());
    }

    @AfterAll
    void shutdown() {
        if (nodes != null) {
            // Not shutdownTestKit: Artery may wait on a TLS stream to a peer already gone (see
            // TransportProfilesTest#shutdown); that is not what this test checks.
            ActorTestKit.shutdown(nodes.b.system(), Duration.ofSeconds(100), false);
            ActorTestKit.shutdown(nodes.a.system(), Duration.ofSeconds(100), false);
        }
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
    void largePayloadsCrossOnTheTlsDataPlaneInEveryForm() throws Exception {
        LargePayloads onA = LargePayloads.get(nodes.a.system());
        LargePayloads onB = LargePayloads.get(nodes.b.system());
        assertThat(nodes.a.system().settings().config().getString("pekko.remote.artery.transport"))
                .isEqualTo("tls-tcp");
        assertThat(onA.dataPlanePort()).as("a data plane under tls-tcp").isPositive();
        assertThat(onA.dataPlaneEncrypted()).isTrue();
        assertThat(onB.dataPlaneEncrypted()).isTrue();

        java.util.Map<String, Long> refusedBefore = new java.util.HashMap<>();
        for (String reason : LargePayloads.dataPlaneRefusalReasons()) {
            refusedBefore.put(reason, onA.dataPlaneRefused(reason));
        }

        // A group from A into a collector on B: offered on A's data plane, not as a stream ref.
        ActorRef<Collector.Command> collectorOnB = collectorOn(nodes.b, "tls-group-collector", 1);
        TrainingGroup group = Payloads.group(1, 8, 8_192);
        Collector.GroupFinished finished = Payloads.accepted(group);
        assertThat(onA.streams(nodes.seenFromA(collectorOnB), LargePayloads.estimatedBytes(finished)))
                .isTrue();
        long sentBefore = onA.bytesSent();
        CollectorTransfers.deliver(nodes.seenFromA(collectorOnB), finished, onA);
        TestProbe<Collector.PullReply> trainer = nodes.b.createTestProbe();
        collectorOnB.tell(new Collector.PullBatch(DEADLINE, 0, trainer.getRef()));
        Collector.PullReply reply = trainer.receiveMessage(DEADLINE);
        assertThat(((Collector.BatchReply) reply).batch().groups()).containsExactly(group);
        assertThat(onA.bytesSent() - sentBefore).isGreaterThan(LargePayloads.estimatedBytes(group) / 2);

        // A batch on A's collector pulled on B, decoded; then one relayed as RBATCH.
        ActorRef<Collector.Command> collectorOnA = collectorOn(nodes.a, "tls-batch-collector", 2);
        TrainingGroup[] groups = {Payloads.group(10, 8, 8_192), Payloads.group(11, 8, 8_192)};
        for (TrainingGroup g : groups) {
            collectorOnA.tell(Payloads.accepted(g));
        }
        TrainingBatch pulled = pullerOnB(collectorOnA).nextBatch(DEADLINE).orElseThrow();
        assertThat(pulled.groups()).containsExactly(groups);

        TrainingGroup[] more = {Payloads.group(20, 8, 8_192), Payloads.group(21, 8, 8_192)};
        for (TrainingGroup g : more) {
            collectorOnA.tell(Payloads.accepted(g));
        }
        long relayedBefore = onB.batchesRelayed();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        long batchId;
        try (EncodedBatch relayed =
                pullerOnB(collectorOnA).nextEncodedBatch(DEADLINE).orElseThrow()) {
            batchId = relayed.batchId();
            relayed.writeTo(out);
        }
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        BatchWireFormat.write(new TrainingBatch(batchId, List.of(more), 0), expected);
        assertThat(out.toByteArray()).isEqualTo(expected.toByteArray());
        assertThat(onB.batchesRelayed()).isEqualTo(relayedBefore + 1);

        for (String reason : LargePayloads.dataPlaneRefusalReasons()) {
            assertThat(onA.dataPlaneRefused(reason))
                    .as("A refused for %s", reason)
                    .isEqualTo(refusedBefore.get(reason));
        }
    }

    @Test
    void aSystemWithAnUntrustedCertificateCannotFetchAndIsCounted() throws Exception {
        LargePayloads onA = LargePayloads.get(nodes.a.system());
        TrainingBatch batch = Payloads.batch(30, 2, 8, 4_096);
        DirectRef ref = onA.offerDirect(new Collector.BatchReply(batch), "batch 30");
        assertThat(ref).isNotNull();
        // Its certificate was not issued by the CA the data plane names, so the JDK presents none.
        long refusedBefore = onA.dataPlaneRefused("no_certificate");
        // Not in the cluster: it only knows the ref, as a peer that sniffed an envelope would.
        ActorTestKit rogue = ActorTestKit.create(
                "Rollout",
                ConfigFactory.parseString("pekko.actor.provider = remote")
                        .withFallback(stores.tlsTcp(stores.rogue()))
                        .withFallback(TwoNodes.CLUSTER)
                        .withFallback(TestRollout.PEKKO));
        try {
            assertThatThrownBy(() -> LargePayloads.get(rogue.system())
                            .receive(ref, Collector.BatchReply.class, "batch 30")
                            .toCompletableFuture()
                            .get(60, TimeUnit.SECONDS))
                    .hasMessageContaining("batch 30");
        } finally {
            ActorTestKit.shutdown(rogue.system(), Duration.ofSeconds(100), false);
        }
        TestRollout.await(
                "A to count the refusal", DEADLINE, () -> onA.dataPlaneRefused("no_certificate") == refusedBefore + 1);
        // The payload is still offered: B, of the cluster, fetches it.
        Collector.BatchReply back = LargePayloads.get(nodes.b.system())
                .receive(ref, Collector.BatchReply.class, "batch 30")
                .toCompletableFuture()
                .get(60, TimeUnit.SECONDS);
        assertThat(back.batch()).isEqualTo(batch);
    }

    @Test
    void streamRefsRemainAnExplicitOptOut() {
        Config optOut = ConfigFactory.parseString(
                        "rollout.large_payload_transport = \"stream-ref\"\npekko.actor.provider = remote")
                .withFallback(stores.tlsTcp())
                .withFallback(TwoNodes.CLUSTER)
                .withFallback(TestRollout.PEKKO);
        ActorTestKit kit = ActorTestKit.create("Rollout", optOut);
        try {
            LargePayloads p = LargePayloads.get(kit.system());
            assertThat(p.dataPlanePort()).isEqualTo(-1);
            assertThat(p.dataPlaneEncrypted()).isFalse();
            assertThat(p.offerDirect(new Collector.BatchReply(null), "nothing")).isNull();
        } finally {
            ActorTestKit.shutdown(kit.system(), Duration.ofSeconds(100), false);
        }
    }
}
