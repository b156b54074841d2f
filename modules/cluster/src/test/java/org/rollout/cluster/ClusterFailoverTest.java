package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.api.WorkflowContext;

/**
 * Three cluster nodes in this JVM (three ActorSystems over Artery TCP on 127.0.0.1): the first two
 * may host the singletons, all three run groups. The node holding the singletons crashes (it stops
 * without leaving; the others see it unreachable and the split brain resolver downs it), and the
 * singletons start on the second node from the replicated state.
 */
@Timeout(180)
class ClusterFailoverTest {
    private static final Duration DEADLINE = Duration.ofSeconds(90);
    /**
     * How long one status read after the crash may take before it is tried again: a read the
     * singleton proxy sent towards the crashed node is lost with it, and would otherwise wait out
     * the client's 30 s control timeout although the successor answers seconds after taking over.
     */
    private static final Duration STATUS_READ = Duration.ofSeconds(5);

    private final List<ClusterRollout> nodes = new ArrayList<>();

    @AfterEach
    void stop() {
        nodes.forEach(ClusterRollout::close);
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
                        # A crash: terminating the system does not leave the cluster first.
                        pekko.coordinated-shutdown.run-by-actor-system-terminate = off
                        pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                        """.formatted(port, seedPort, String.join(",", roles)))
                .withFallback(TestRollout.PEKKO);
    }

    private ClusterRollout start(String name, int port, int seedPort, Path stats, String... roles) {
        TestRollout t = new TestRollout();
        // A batch the trainer held when the singletons' node crashed comes again once this has
        // passed since the take-over (its acknowledgement may still come until then).
        t.ackTimeout = Duration.ofSeconds(8);
        return start(t, 2, name, port, seedPort, stats, roles);
    }

    private ClusterRollout start(
            TestRollout t, int batchSize, String name, int port, int seedPort, Path stats, String... roles) {
        t.consumerBatchSize = batchSize;
        t.maxConcurrent = 4;
        t.eta = 0;
        t.statsFile = stats;
        ClusterRollout node =
                ClusterRollout.start(t.spec(), name, nodeConfig(port, seedPort, roles), Duration.ofSeconds(3));
        nodes.add(node);
        return node;
    }

    @Test
    void theSingletonsNodeCrashesTheVersionHoldsAndNoBatchIsLostOrDeliveredTwice(
            @org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        int p1 = freePort();
        int p2 = freePort();
        int p3 = freePort();
        ClusterRollout n1 = start("node-1", p1, p1, dir.resolve("s1.jsonl"), "coordinator", "rollout");
        TestRollout.await("node 1 up", DEADLINE, () -> isUp(n1));
        ClusterRollout n2 = start("node-2", p2, p1, dir.resolve("s2.jsonl"), "coordinator", "rollout");
        ClusterRollout n3 = start("node-3", p3, p1, dir.resolve("s3.jsonl"), "rollout");
        TestRollout.await("three nodes up", DEADLINE, () -> upMembers(n3) == 3 && upMembers(n1) == 3);
        LocalRolloutClient trainer = n3.client();

        List<Long> acked = new ArrayList<>();
        int version = 0;
        for (int step = 1; step <= 3; step++) {
            TrainingBatch b = retry(() -> pull(trainer));
            b.groups().forEach(g -> acked.add(g.taskId()));
            trainer.acknowledge(b);
            version = step;
            int v = version;
            retry(() -> trainer.publishWeights(v, dir.resolve("w" + v)));
        }
        // The statistics come from the collector's node (node 1) to the trainer's (node 3): its file's lines.
        assertStatsAreTheLinesOf(trainer, dir.resolve("s1.jsonl"), version);

        TrainingBatch unacked = retry(() -> pull(trainer));
        Set<Long> pending = new HashSet<>(
                unacked.groups().stream().map(TrainingGroup::taskId).toList());
        assertThat(pending).hasSize(2).doesNotContainAnyElementsOf(acked);

        n1.system().terminate(); // crash: no leave, no hand-over
        n1.system().getWhenTerminated().toCompletableFuture().get(30, java.util.concurrent.TimeUnit.SECONDS);

        // The successor starts at the replicated version, never below it.
        int seen = retry(() -> trainer.status(STATUS_READ).version());
        assertThat(seen).isEqualTo(version);

        // Every task of the unacknowledged batch comes again; no acknowledged task does.
        List<Long> after = new ArrayList<>();
        while (!pending.isEmpty()) {
            TrainingBatch b = retry(() -> pull(trainer));
            for (TrainingGroup g : b.groups()) {
                assertThat(acked).as("an acknowledged task delivered again").doesNotContain(g.taskId());
                pending.remove(g.taskId());
                after.add(g.taskId());
                acked.add(g.taskId());
            }
            trainer.acknowledge(b);
            version++;
            int v = version;
            retry(() -> trainer.publishWeights(v, dir.resolve("w" + v)));
        }
        // And the run goes on past the failover.
        for (int i = 0; i < 2; i++) {
            TrainingBatch b = retry(() -> pull(trainer));
            b.groups().forEach(g -> assertThat(acked).doesNotContain(g.taskId()));
            b.groups().forEach(g -> acked.add(g.taskId()));
            trainer.acknowledge(b);
            version++;
            int v = version;
            retry(() -> trainer.publishWeights(v, dir.resolve("w" + v)));
        }
        assertThat(new HashSet<>(acked)).hasSize(acked.size());
        assertThat(retry(() -> trainer.status().version())).isEqualTo(version);
        assertThat(n2.system().whenTerminated().isCompleted()).isFalse();
        // The collector now on node 2 knows the lines written since it took over: node 2's file.
        assertStatsAreTheLinesOf(trainer, dir.resolve("s2.jsonl"), version);
    }

    /**
     * Waits until every line of the versions below {@code below} is written, then checks that
     * {@code trainer.stats} answers those lines as {@code file} holds them, in version order.
     */
    private static void assertStatsAreTheLinesOf(LocalRolloutClient trainer, Path file, int below) throws Exception {
        TestRollout.await("statistics of the versions below " + below, DEADLINE, () -> {
            try {
                return retry(() -> trainer.stats(0)).completeBelow() >= below;
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
        org.rollout.trainer.StatsPage page = retry(() -> trainer.stats(0));
        int complete = page.completeBelow();
        var written = java.nio.file.Files.readAllLines(file).stream()
                .map(org.rollout.trainer.wire.GatewayJson::parseStatsLine)
                .filter(l -> l.version() < complete)
                .sorted(java.util.Comparator.comparingInt(org.rollout.trainer.VersionStats::version))
                .toList();
        assertThat(page.lines().stream().filter(l -> l.version() < complete).toList())
                .isNotEmpty()
                .isEqualTo(written);
    }

    /**
     * The trainer holds a batch whose groups all ran on the singletons' node when that node crashes;
     * the successor runs them again, and every re-run fails (the workflow fails on any attempt
     * after the first). Only then does the trainer acknowledge the batch. The tasks are delivered:
     * the failed re-runs are not counted, the staleness budget counts exactly what the trainer
     * received, and a drain ends with nothing left buffered.
     */
    @Test
    void aBatchAcknowledgedAfterTheRerunsOfItsLostTasksFailedCountsAsDelivered(
            @org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        int p1 = freePort();
        int p2 = freePort();
        int p3 = freePort();
        ClusterRollout n1 =
                start(failingRerun(), 4, "node-1", p1, p1, dir.resolve("s1.jsonl"), "coordinator", "rollout");
        TestRollout.await("node 1 up", DEADLINE, () -> isUp(n1));
        // node-2 can host the singletons but runs no groups: the groups of the held batch all run on node-1.
        ClusterRollout n2 = start(failingRerun(), 4, "node-2", p2, p1, dir.resolve("s2.jsonl"), "coordinator");
        TestRollout.await("two nodes up", DEADLINE, () -> upMembers(n2) == 2 && upMembers(n1) == 2);
        LocalRolloutClient trainer = n2.client();

        Set<Long> delivered = new HashSet<>();
        TrainingBatch first = retry(() -> pull(trainer));
        first.groups().forEach(g -> delivered.add(g.taskId()));
        trainer.acknowledge(first);
        retry(() -> trainer.publishWeights(1, dir.resolve("w1")));
        TrainingBatch held = retry(() -> pull(trainer));
        List<Long> heldTasks = held.groups().stream().map(TrainingGroup::taskId).toList();
        assertThat(heldTasks).hasSize(4).doesNotContainAnyElementsOf(delivered);

        // A node that runs groups joins, then the singletons' node crashes with the held batch's outcomes.
        ClusterRollout n3 = start(failingRerun(), 4, "node-3", p3, p1, dir.resolve("s3.jsonl"), "rollout");
        TestRollout.await("three nodes up", DEADLINE, () -> upMembers(n3) == 3);
        n1.system().terminate();
        n1.system().getWhenTerminated().toCompletableFuture().get(30, java.util.concurrent.TimeUnit.SECONDS);

        // The held batch's tasks run again on node-3 and fail (the collector holds their rejections).
        TestRollout.await("the re-runs of the held batch failed", DEADLINE, () -> {
            try {
                org.rollout.trainer.RolloutStatus c = trainer.status(STATUS_READ);
                return c.heldOutcomes() + c.rejectedByReason().getOrDefault("failed", 0L) == 4;
            } catch (IllegalStateException e) {
                return false; // the singletons are moving
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        trainer.acknowledge(held);
        delivered.addAll(heldTasks);
        retry(() -> trainer.publishWeights(2, dir.resolve("w2")));

        // The run goes on, and then drains: no more versions, pull until nothing is left.
        int version = 2;
        for (int i = 0; i < 2; i++) {
            TrainingBatch b = retry(() -> pull(trainer));
            b.groups().forEach(g -> assertThat(delivered).doesNotContain(g.taskId()));
            b.groups().forEach(g -> delivered.add(g.taskId()));
            trainer.acknowledge(b);
            int v = ++version;
            retry(() -> trainer.publishWeights(v, dir.resolve("w" + v)));
        }
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (true) {
            Optional<TrainingBatch> b = trainer.nextBatch(Duration.ofSeconds(2));
            if (b.isPresent()) {
                b.get().groups().forEach(g -> assertThat(delivered).doesNotContain(g.taskId()));
                b.get().groups().forEach(g -> delivered.add(g.taskId()));
                trainer.acknowledge(b.get());
                continue;
            }
            org.rollout.trainer.RolloutStatus s = trainer.status();
            if (s.running() == 0 && s.unacknowledgedBatches() == 0) {
                assertThat(s.bufferedGroups())
                        .as("groups left unbatched after the drain")
                        .isZero();
                assertThat(s.accepted())
                        .as("accepted groups = groups the trainer received")
                        .isEqualTo(delivered.size());
                assertThat(s.rejectedByReason())
                        .as("the failed re-runs of delivered tasks")
                        .isEmpty();
                assertThat(trainer.collectorStatus().heldOutcomes()).isZero();
                break;
            }
            assertThat(System.nanoTime() - deadline)
                    .as("the run drains; last status %s", s)
                    .isNegative();
        }
    }

    /** The echo workflow, failing on every attempt after the first. */
    private static TestRollout failingRerun() {
        TestRollout t = new TestRollout();
        RolloutWorkflow echo = TestRollout.echo(t.gconfig());
        t.workflow = (engine, data) -> {
            if (WorkflowContext.current().attempt() > 0) {
                throw new IllegalStateException(
                        "attempt " + WorkflowContext.current().attempt() + " fails");
            }
            return echo.runEpisode(engine, data);
        };
        return t;
    }

    private static TrainingBatch pull(LocalRolloutClient c) throws InterruptedException {
        Optional<TrainingBatch> b = c.nextBatch(Duration.ofSeconds(5));
        if (b.isEmpty()) {
            throw new IllegalStateException("no batch yet");
        }
        return b.get();
    }

    /** Calls {@code call} until it succeeds: requests sent to a node that just crashed time out. */
    private static <T> T retry(Callable<T> call) throws Exception {
        long end = System.nanoTime() + DEADLINE.toNanos();
        while (true) {
            try {
                return call.call();
            } catch (IllegalStateException e) {
                if (System.nanoTime() > end) {
                    throw e;
                }
            }
        }
    }

    private static boolean isUp(ClusterRollout n) {
        return Cluster.get(n.system()).selfMember().status() == MemberStatus.up();
    }

    private static long upMembers(ClusterRollout n) {
        return TestRollout.list(Cluster.get(n.system()).state().getMembers()).stream()
                .filter(m -> m.status() == MemberStatus.up())
                .count();
    }
}
