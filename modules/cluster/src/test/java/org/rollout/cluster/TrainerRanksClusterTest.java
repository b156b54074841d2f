package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;

/**
 * A cluster whose trainer pulls with two data-parallel ranks ({@code
 * rollout.train_data_parallel_size = 2}): three nodes in this JVM over Artery TCP on 127.0.0.1,
 * two of them coordinator nodes. Each rank's coordinator and collector run on one of those, with
 * a replicated ledger of its own, and the two ranks' collectors on different nodes. The node
 * holding rank 1's collector crashes while rank 1's trainer holds a batch; rank 1 moves to the
 * other node and recovers from its own ledger: its unacknowledged tasks come again to rank 1,
 * nothing acknowledged comes again, and both ranks go on.
 */
@Timeout(240)
class TrainerRanksClusterTest {
    private static final Duration DEADLINE = Duration.ofSeconds(90);
    private static final Duration STATUS_READ = Duration.ofSeconds(5);

    private final List<ClusterRollout> nodes = new ArrayList<>();

    @AfterEach
    void stop() {
        nodes.forEach(ClusterRollout::close);
    }

    private ClusterRollout start(String name, int port, int seedPort, Path stats, String... roles) {
        TestRollout t = new TestRollout();
        t.consumerBatchSize = 4;
        t.maxConcurrent = 8;
        t.eta = 0;
        t.statsFile = stats;
        t.ackTimeout = Duration.ofSeconds(8);
        ClusterRollout node = ClusterRollout.start(
                t.spec().withTrainerRanks(2),
                name,
                com.typesafe.config.ConfigFactory.parseString("pekko.cluster.sharding.rebalance-interval = 1s")
                        .withFallback(ClusterFailoverTest.nodeConfig(port, seedPort, roles)),
                Duration.ofSeconds(3));
        nodes.add(node);
        return node;
    }

    @Test
    void theRanksRunOnDifferentNodesAndEachRecoversFromItsOwnLedgerWhenItsNodeCrashes(@TempDir Path dir)
            throws Exception {
        int p1 = ClusterFailoverTest.freePort();
        int p2 = ClusterFailoverTest.freePort();
        int p3 = ClusterFailoverTest.freePort();
        ClusterRollout n1 = start("node-1", p1, p1, dir.resolve("s1.jsonl"), "coordinator", "rollout");
        TestRollout.await("node 1 up", DEADLINE, () -> upMembers(n1) == 1);
        ClusterRollout n2 = start("node-2", p2, p1, dir.resolve("s2.jsonl"), "coordinator", "rollout");
        ClusterRollout n3 = start("node-3", p3, p1, dir.resolve("s3.jsonl"), "rollout");
        TestRollout.await("three nodes up", DEADLINE, () -> upMembers(n3) == 3 && upMembers(n1) == 3);
        TestRollout.await(
                "one rank's collector on each coordinator node",
                DEADLINE,
                () -> here(n1).size() == 1 && here(n2).size() == 1);
        assertThat(here(n3)).isEmpty();
        ClusterRollout rank1Node = here(n1).contains(1) ? n1 : n2;
        assertThat(n3.ranks()).isEqualTo(2);
        List<LocalRolloutClient> ranks = List.of(n3.client(0), n3.client(1));

        Set<Long> acked = new HashSet<>();
        int version = 0;
        for (int step = 1; step <= 2; step++) {
            stepBothRanks(ranks, acked);
            version = step;
            publish(ranks.get(0), dir, version);
        }
        TrainingBatch held = retry(() -> pull(ranks.get(1)));
        Set<Long> pending = new HashSet<>(taskIds(held));
        assertThat(pending).hasSize(2).doesNotContainAnyElementsOf(acked);
        assertThat(pending).allMatch(id -> id % 2 == 1);

        rank1Node.system().terminate(); // crash: no leave, no hand-over
        rank1Node.system().getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        int seen = retry(() -> ranks.get(1).status(STATUS_READ).version());
        assertThat(seen).isEqualTo(version);

        // Rank 1's unacknowledged tasks come again to rank 1; rank 0 goes on with its own.
        while (!pending.isEmpty()) {
            TrainingBatch b = retry(() -> pull(ranks.get(1)));
            for (long id : taskIds(b)) {
                assertThat(acked).as("an acknowledged task delivered again").doesNotContain(id);
                assertThat(id % 2).isEqualTo(1);
                pending.remove(id);
                acked.add(id);
            }
            ranks.get(1).acknowledge(b);
            TrainingBatch a = retry(() -> pull(ranks.get(0)));
            for (long id : taskIds(a)) {
                assertThat(acked.add(id)).as("task %d delivered once", id).isTrue();
                assertThat(id % 2).isZero();
            }
            ranks.get(0).acknowledge(a);
            version++;
            publish(ranks.get(0), dir, version);
        }
        for (int i = 0; i < 2; i++) {
            stepBothRanks(ranks, acked);
            version++;
            publish(ranks.get(0), dir, version);
        }
        int last = version;
        assertThat(retry(() -> ranks.get(0).status(STATUS_READ).version())).isEqualTo(last);
        assertThat(retry(() -> ranks.get(1).status(STATUS_READ).version())).isEqualTo(last);
        ClusterRollout survivor = rank1Node == n1 ? n2 : n1;
        assertThat(here(survivor)).containsExactlyInAnyOrder(0, 1);
    }

    /** The ranks whose collector runs on {@code node}; empty while it cannot say. */
    private static Set<Integer> here(ClusterRollout node) {
        try {
            return node.collectorRanksHere().toCompletableFuture().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            return Set.of();
        }
    }

    /** One step: each rank pulls its batch, of its own tasks, none delivered before, and acknowledges it. */
    private static void stepBothRanks(List<LocalRolloutClient> ranks, Set<Long> acked) throws Exception {
        for (int r = 0; r < ranks.size(); r++) {
            LocalRolloutClient rank = ranks.get(r);
            TrainingBatch b = retry(() -> pull(rank));
            assertThat(b.groups()).hasSize(2);
            for (long id : taskIds(b)) {
                assertThat(acked.add(id)).as("task %d delivered once", id).isTrue();
                assertThat(id % 2).isEqualTo((long) r);
            }
            rank.acknowledge(b);
        }
    }

    private static void publish(LocalRolloutClient client, Path dir, int version) throws Exception {
        retry(() -> client.publishWeights(version, dir.resolve("w" + version)));
    }

    private static List<Long> taskIds(TrainingBatch b) {
        return b.groups().stream().map(TrainingGroup::taskId).toList();
    }

    private static TrainingBatch pull(LocalRolloutClient c) throws Exception {
        return c.nextBatch(Duration.ofSeconds(10)).orElseThrow(() -> new IllegalStateException("no batch yet"));
    }

    private static int upMembers(ClusterRollout n) {
        int up = 0;
        for (var m : Cluster.get(n.system()).state().getMembers()) {
            if (m.status() == MemberStatus.up()) {
                up++;
            }
        }
        return up;
    }

    /** Calls {@code call} until it succeeds, for at most {@link #DEADLINE}: the cluster settles after a crash. */
    private static <T> T retry(Callable<T> call) throws Exception {
        long end = System.nanoTime() + DEADLINE.toNanos();
        while (true) {
            try {
                return call.call();
            } catch (Exception e) {
                if (System.nanoTime() > end) {
                    throw e;
                }
                java.util.concurrent.locks.LockSupport.parkNanos(100_000_000L); // then try again
            }
        }
    }
}
