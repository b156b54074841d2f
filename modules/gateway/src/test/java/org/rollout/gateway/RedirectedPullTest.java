package org.rollout.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.gateway.TestRollout.await;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.cluster.ClusterRollout;
import org.rollout.cluster.LargePayloads;
import org.rollout.cluster.NodeGateway;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.GatewayRequestException;
import org.rollout.trainer.HttpRolloutClient;
import org.rollout.trainer.RolloutClient;

/**
 * A trainer pulling through the gateway of a node that does not hold the batches, in a real
 * cluster of actor systems on 127.0.0.1 with real gateways: the pull is redirected to the gateway
 * of the collector's node and the batch goes from there straight to the trainer, never over the
 * data plane (nothing relayed); when that gateway cannot be reached, or the collector's node is
 * lost between the redirect and the read, the trainer pulls through its contact point again and
 * every task reaches it once; a collector's node without a gateway keeps relaying.
 *
 * <p>Every batch above 0 bytes would cross nodes on the data plane ({@code
 * rollout.large_payload_threshold = 0}), so a batch that went any other way than the redirect
 * shows in the relay counters.
 */
@Timeout(240)
class RedirectedPullTest {
    private static final Duration DEADLINE = Duration.ofSeconds(60);

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() {
        for (int i = open.size() - 1; i >= 0; i--) {
            try {
                open.get(i).close();
            } catch (Exception e) {
                // closing: the test's outcome is decided
            }
        }
        open.clear();
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static Config nodeConfig(int port, int seedPort, String... roles) {
        return ConfigFactory.parseString("""
                        pekko.actor.provider = cluster
                        pekko.remote.artery.transport = tcp
                        pekko.remote.artery.canonical.hostname = "127.0.0.1"
                        pekko.remote.artery.canonical.port = %d
                        pekko.cluster.seed-nodes = ["pekko://rollout@127.0.0.1:%d"]
                        pekko.cluster.roles = [%s]
                        pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
                        pekko.cluster.downing-provider-class = "org.apache.pekko.cluster.sbr.SplitBrainResolverProvider"
                        pekko.cluster.split-brain-resolver.active-strategy = keep-majority
                        pekko.cluster.split-brain-resolver.stable-after = 3s
                        pekko.cluster.failure-detector.acceptable-heartbeat-pause = 4s
                        pekko.cluster.singleton.hand-over-retry-interval = 500ms
                        pekko.actor.default-dispatcher.fork-join-executor.parallelism-max = 2
                        pekko.coordinated-shutdown.run-by-actor-system-terminate = off
                        pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                        rollout.large_payload_threshold = 0
                        """.formatted(port, seedPort, String.join(",", roles)))
                .withFallback(TestRollout.PEKKO);
    }

    private ClusterRollout node(String name, int port, int seedPort, String... roles) {
        TestRollout t = new TestRollout(64);
        t.consumerBatchSize = 2;
        t.maxConcurrent = 4;
        t.eta = 1_000; // the trainer below publishes nothing
        t.ackTimeout = Duration.ofSeconds(20);
        ClusterRollout n =
                ClusterRollout.start(t.spec(), name, nodeConfig(port, seedPort, roles), Duration.ofSeconds(3));
        open.add(n);
        return n;
    }

    private TrainerGateway gateway(ClusterRollout n) throws IOException {
        TrainerGateway g = TrainerGateway.start(GatewayConfig.defaults(), n.client());
        open.add(g);
        return g;
    }

    private HttpRolloutClient trainer(ClientConfig config) {
        HttpRolloutClient c = (HttpRolloutClient) RolloutClient.connect(config.withPollWait(Duration.ofSeconds(1)));
        open.add(c);
        return c;
    }

    private static long upMembers(ClusterRollout n) {
        return java.util.stream.StreamSupport.stream(
                        Cluster.get(n.system()).state().getMembers().spliterator(), false)
                .filter(m -> m.status() == MemberStatus.up())
                .count();
    }

    /** Pulls and acknowledges {@code batches} batches; fails when a task comes twice. Returns the tasks. */
    private static List<Long> pullAndAcknowledge(RolloutClient trainer, int batches, Set<Long> seen)
            throws InterruptedException {
        List<Long> tasks = new ArrayList<>();
        for (int i = 0; i < batches; i++) {
            TrainingBatch b = trainer.nextBatch(DEADLINE).orElseThrow(() -> new AssertionError("no batch in time"));
            for (TrainingGroup g : b.groups()) {
                assertThat(seen.add(g.taskId()))
                        .as("task %d delivered once", g.taskId())
                        .isTrue();
                tasks.add(g.taskId());
            }
            trainer.acknowledge(b);
        }
        return tasks;
    }

    @Test
    void aPullThroughAGatewayOnAnotherNodeIsRedirectedAndReadFromTheCollectorsNode() throws Exception {
        int pa = freePort();
        ClusterRollout a = node("node-a", pa, pa, "coordinator", "rollout");
        await("node a up", DEADLINE, () -> upMembers(a) == 1);
        ClusterRollout b = node("node-b", freePort(), pa, "rollout");
        await("two nodes up", DEADLINE, () -> upMembers(a) == 2 && upMembers(b) == 2);
        TrainerGateway onA = gateway(a);
        NodeGateway.get(a.system()).advertise(onA.uri());
        TrainerGateway onB = gateway(b);
        NodeGateway.get(b.system()).advertise(onB.uri());

        HttpRolloutClient trainer = trainer(ClientConfig.of(onB.uri().toString()));
        pullAndAcknowledge(trainer, 5, new HashSet<>());

        // One pull went through B and was redirected; every later one went straight to A.
        assertThat(onB.pullsRedirected()).isEqualTo(1);
        assertThat(trainer.pullsFromHolder()).isGreaterThanOrEqualTo(5);
        assertThat(trainer.redirectsFellBack()).isZero();
        // No batch crossed the data plane: nothing relayed, nothing sent from A as a large payload.
        assertThat(LargePayloads.get(b.system()).batchesRelayed()).isZero();
        assertThat(LargePayloads.get(a.system()).batchesRelayed()).isZero();
        // Keep-alive: one connection to B's gateway (the redirected pull) and one to A's for every later pull.
        assertThat(trainer.pullConnectionsOpened()).isEqualTo(2);
        assertThat(onA.connectionsAccepted()).isEqualTo(1);
    }

    @Test
    void whenTheCollectorsGatewayCannotBeReachedThePullIsRelayedAndEveryTaskComesOnce() throws Exception {
        int pa = freePort();
        ClusterRollout a = node("node-a", pa, pa, "coordinator", "rollout");
        await("node a up", DEADLINE, () -> upMembers(a) == 1);
        ClusterRollout b = node("node-b", freePort(), pa, "rollout");
        await("two nodes up", DEADLINE, () -> upMembers(a) == 2 && upMembers(b) == 2);
        // A's gateway is advertised but gone (closed, or unreachable from the trainer).
        TrainerGateway onA = gateway(a);
        NodeGateway.get(a.system()).advertise(onA.uri());
        onA.close();
        TrainerGateway onB = gateway(b);

        HttpRolloutClient trainer = trainer(ClientConfig.of(onB.uri().toString()));
        pullAndAcknowledge(trainer, 4, new HashSet<>());

        assertThat(onB.pullsRedirected())
                .as("one redirect, then a minute without")
                .isEqualTo(1);
        assertThat(trainer.redirectsFellBack()).isEqualTo(1);
        assertThat(LargePayloads.get(b.system()).batchesRelayed()).isGreaterThanOrEqualTo(4);
    }

    @Test
    void aCollectorsNodeWithoutAGatewayKeepsTheRelayAndSoDoesAClientThatDoesNotFollow() throws Exception {
        int pa = freePort();
        ClusterRollout a = node("node-a", pa, pa, "coordinator", "rollout");
        await("node a up", DEADLINE, () -> upMembers(a) == 1);
        ClusterRollout b = node("node-b", freePort(), pa, "rollout");
        await("two nodes up", DEADLINE, () -> upMembers(a) == 2 && upMembers(b) == 2);
        TrainerGateway onB = gateway(b);
        Set<Long> seen = new HashSet<>();

        HttpRolloutClient follows = trainer(ClientConfig.of(onB.uri().toString()));
        pullAndAcknowledge(follows, 3, seen);
        assertThat(onB.pullsRedirected()).isZero();
        assertThat(LargePayloads.get(b.system()).batchesRelayed()).isGreaterThanOrEqualTo(3);

        // With a gateway on A, a client that does not follow redirects is still relayed.
        TrainerGateway onA = gateway(a);
        NodeGateway.get(a.system()).advertise(onA.uri());
        long relayed = LargePayloads.get(b.system()).batchesRelayed();
        HttpRolloutClient stays = trainer(ClientConfig.of(onB.uri().toString()).withPullRedirects(false));
        pullAndAcknowledge(stays, 3, seen);
        assertThat(onB.pullsRedirected()).isZero();
        assertThat(LargePayloads.get(b.system()).batchesRelayed()).isGreaterThanOrEqualTo(relayed + 3);
        assertThat(onA.connectionsAccepted()).isZero();
    }

    /**
     * The next batch, while the collector moves to its successor: a pull that waits longer than the
     * gateway's ask to the collector (its wait and 30 s; on a loaded machine the take-over can take
     * that long) is answered 500 and pulled again, as any trainer pulling during a take-over does.
     */
    private static Optional<TrainingBatch> pullThroughTheTakeOver(RolloutClient trainer) throws InterruptedException {
        long end = System.nanoTime() + Duration.ofSeconds(150).toNanos();
        while (true) {
            try {
                return trainer.nextBatch(Duration.ofSeconds(120));
            } catch (GatewayRequestException e) {
                if (e.status() != 500 || System.nanoTime() - end > 0) {
                    throw e;
                }
            }
        }
    }

    @Test
    void theCollectorsNodeLostBetweenTheRedirectAndTheReadLosesNothingAndDeliversNothingTwice() throws Exception {
        int pa = freePort();
        ClusterRollout a = node("node-a", pa, pa, "coordinator", "rollout");
        await("node a up", DEADLINE, () -> upMembers(a) == 1);
        ClusterRollout b = node("node-b", freePort(), pa, "coordinator", "rollout");
        ClusterRollout c = node("node-c", freePort(), pa, "rollout");
        await("three nodes up", DEADLINE, () -> upMembers(a) == 3 && upMembers(b) == 3 && upMembers(c) == 3);
        TrainerGateway onA = gateway(a);
        TrainerGateway onB = gateway(b);
        NodeGateway.get(b.system()).advertise(onB.uri());
        Set<Long> seen = new HashSet<>();

        // First the redirect works: A's gateway serves the pulls.
        NodeGateway.get(a.system()).advertise(onA.uri());
        HttpRolloutClient trainer = trainer(ClientConfig.of(onB.uri().toString())
                .withRequestTimeout(Duration.ofSeconds(60))
                .withRetry(Duration.ofMillis(100), Duration.ofSeconds(1), Duration.ofSeconds(120)));
        pullAndAcknowledge(trainer, 2, seen);
        assertThat(onB.pullsRedirected()).isEqualTo(1);

        // Then A advertises a door that, once a trainer comes through it after a redirect, crashes A
        // (no leave, no hand-over) and shuts: the collector's node is gone between redirect and read.
        AtomicInteger knocked = new AtomicInteger();
        ServerSocket door = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
        open.add(door);
        CompletableFuture<Void> crashed = CompletableFuture.runAsync(() -> {
            try (Socket s = door.accept()) {
                knocked.incrementAndGet();
                onA.close();
                a.system().terminate();
                a.system().getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        NodeGateway.get(a.system()).advertise(URI.create("http://127.0.0.1:" + door.getLocalPort()));
        // The trainer pulls A's gateway directly now; closing it sends the next pull back through B,
        // which is redirected to the door.
        onA.close();

        Optional<TrainingBatch> after = pullThroughTheTakeOver(trainer);
        crashed.get(60, TimeUnit.SECONDS);
        assertThat(knocked).hasValue(1);
        assertThat(after).as("a batch from the successor, pulled through B").isPresent();
        for (TrainingGroup g : after.get().groups()) {
            assertThat(seen.add(g.taskId()))
                    .as("task %d delivered once", g.taskId())
                    .isTrue();
        }
        trainer.acknowledge(after.get());
        assertThat(trainer.redirectsFellBack()).isGreaterThanOrEqualTo(1);
        // The successor runs on B: its batches are served there, and none twice.
        pullAndAcknowledge(trainer, 3, seen);
    }
}
