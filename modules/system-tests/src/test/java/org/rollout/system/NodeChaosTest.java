package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Rollout nodes killed with SIGKILL mid-group again and again (kill, restart, kill again,
 * restart, another node): every group in flight on the killed node ends (elsewhere), nothing is lost, nothing
 * acknowledged comes again, and a restarted node is given groups again. The kill of the node
 * holding the singletons is {@link NodeLossTest}'s, and {@link SoakTest} does both at random.
 */
@Timeout(420)
class NodeChaosTest {
    /** 5 ms per decode step: groups last long enough that each node has some in flight. */
    private static final String[] DECODE = {"--decode-base-us", "5000"};

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    @Test
    void shouldFinishTheGroupsOfARolloutNodeKilledRepeatedly() throws Exception {
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(3)
                        .withServerFlags(DECODE)
                        .withConfig("rollout.consumer_batch_size=8", "rollout.max_concurrent_rollouts=24")
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false, 24, 8)) {
            t.startMonitor(Duration.ofMillis(500));
            NodeLossTest.steps(t, 4);
            Set<Long> inFlightAtKills = new HashSet<>();
            List<String> kills = new ArrayList<>();
            // Node 1 holds the singletons; node 3 dies mid-group, comes back, dies again, comes
            // back; then node 2.
            for (int victim : new int[] {3, 3, 2}) {
                NodeLossTest.awaitInFlightOn(c, t, "node-" + victim, 1);
                c.killNode(victim);
                Set<Long> inFlight = TaskAccounting.read(c.nodeProcesses()).inFlightOn("node-" + victim);
                inFlightAtKills.addAll(inFlight);
                kills.add("node-" + victim + " with " + inFlight.size() + " groups in flight");
                NodeLossTest.steps(t, t.batchesAcknowledged() + 3);
                c.restartNode(victim);
                NodeLossTest.steps(t, t.batchesAcknowledged() + 3);
            }
            // The restarted nodes are given groups again (a node restarted on its old host and port
            // used to be dropped by the coordinator for good: RolloutCoordinator.onRunnerGone).
            NodeLossTest.awaitInFlightOn(c, t, "node-3", 1);
            NodeLossTest.awaitInFlightOn(c, t, "node-2", 1);
            NodeLossTest.steps(t, t.batchesAcknowledged() + 3);
            t.drain(Duration.ofSeconds(150));

            TaskAccounting journal = TaskAccounting.read(c.nodeProcesses());
            List<Long> notEnded = inFlightAtKills.stream()
                    .filter(task -> !journal.ended(task))
                    .toList();
            RunReport report = RunReport.of(run.testName(), c, t, new Faults())
                    .with("kills", kills)
                    .with("groups in flight on killed rollout nodes", inFlightAtKills.size())
                    .with("  of them not ended", notEnded);
            report.printAndAssertClean();
            assertThat(notEnded)
                    .as("groups in flight on a killed node that never ended")
                    .isEmpty();
            assertThat(journal.redispatches).as("groups dispatched again").isPositive();
        }
    }

    /**
     * A rolling restart: every node in turn, the singletons' node included, stopped with SIGTERM
     * during a run (it drains, leaves and exits 0) and started again before the next. Nothing is
     * lost or delivered twice and the version never goes backwards; the report gives how long each
     * stop took and the longest wait of the trainer for a batch, against the same before the restarts.
     */
    @Test
    void shouldRollARestartThroughEveryNodeBySigterm() throws Exception {
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(3)
                        .withCoordinators(3)
                        .withServerFlags(DECODE)
                        .withConfig("rollout.consumer_batch_size=8", "rollout.max_concurrent_rollouts=24")
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false, 24, 8)) {
            t.startMonitor(Duration.ofMillis(500));
            NodeLossTest.steps(t, 2);
            long before = System.nanoTime();
            NodeLossTest.steps(t, t.batchesAcknowledged() + 4);
            double baselineSecondsPerBatch = (System.nanoTime() - before) / 1e9 / 4;
            List<String> restarts = new ArrayList<>();
            for (int victim = 1; victim <= 3; victim++) {
                NodeLossTest.awaitDispatchTo(c, t, "node-" + victim);
                int acked = t.batchesAcknowledged();
                long sigterm = System.nanoTime();
                int status = c.terminateNode(victim, Duration.ofSeconds(40));
                double stopSeconds = (System.nanoTime() - sigterm) / 1e9;
                assertThat(status)
                        .as("exit status of node-" + victim + " after SIGTERM")
                        .isZero();
                // Batches keep coming while the node is away.
                NodeLossTest.steps(t, acked + 2);
                double firstBatchesSeconds = (System.nanoTime() - sigterm) / 1e9;
                c.restartNode(victim);
                NodeLossTest.steps(t, t.batchesAcknowledged() + 2);
                restarts.add(String.format(
                        java.util.Locale.ROOT,
                        "node-%d: stopped in %.1f s (exit 0), 2 batches %.1f s after SIGTERM",
                        victim,
                        stopSeconds,
                        firstBatchesSeconds));
            }
            NodeLossTest.steps(t, t.batchesAcknowledged() + 3);
            t.drain(Duration.ofSeconds(150));
            RunReport report = RunReport.of(run.testName(), c, t, new Faults())
                    .with("rolling restart (SIGTERM, then start)", restarts)
                    .with(
                            "seconds per batch before the restarts",
                            String.format(java.util.Locale.ROOT, "%.2f", baselineSecondsPerBatch));
            report.printAndAssertClean();
        }
    }
}
