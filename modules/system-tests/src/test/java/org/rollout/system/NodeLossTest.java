package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;

/**
 * A node JVM is killed with SIGKILL in the middle of a run (no leave, no hand-over): nothing the
 * trainer was promised is lost, nothing it acknowledged comes again.
 */
@Timeout(300)
class NodeLossTest {
    /** 20 ms per decode step: a group takes long enough that a node has several in flight. */
    private static final String[] SLOW_DECODE = {"--decode-base-us", "20000"};

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    @Test
    void shouldFinishTheGroupsOfAKilledRolloutNodeElsewhere() throws Exception {
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(3)
                        // Every group crosses to the collector on the data plane, as large ones do:
                        // a transfer from the killed node can die with it.
                        .withConfig("rollout.large_payload_threshold=0")
                        .withServerFlags(SLOW_DECODE)
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false)) {
            t.startMonitor(Duration.ofMillis(500));
            steps(t, 8);
            // Node 3 has only the rollout and gateway roles; wait until it runs some groups. The
            // trainer keeps training meanwhile: without pulls and new versions the staleness budget
            // stops admission within a second or two, and then no node has anything in flight.
            awaitInFlightOn(c, t, "node-3", 2);
            c.killNode(3);
            int acknowledgedAtKill = t.batchesAcknowledged();
            // What the journal says was in flight there when it died (a group may have finished
            // between the wait and the kill).
            Set<Long> inFlight = TaskAccounting.read(c.nodeProcesses()).inFlightOn("node-3");

            // The run goes on: more batches than node 3 could have held come through.
            steps(t, acknowledgedAtKill + 10);
            t.drain(Duration.ofSeconds(120));

            TaskAccounting journal = TaskAccounting.read(c.nodeProcesses());
            List<Long> movedElsewhere = inFlight.stream()
                    .filter(task -> journal.nodesByTask.get(task).stream().anyMatch(n -> !n.equals("node-3")))
                    .toList();
            RunReport report = RunReport.of(run.testName(), c, t, new Faults())
                    .with("groups in flight on node-3 at its kill", inFlight)
                    .with("  of them dispatched again to another node", movedElsewhere);
            for (long task : inFlight) {
                assertThat(journal.ended(task))
                        .as("task %d, in flight on the killed node, ended", task)
                        .isTrue();
            }
            assertThat(movedElsewhere)
                    .as("groups of the killed node finished elsewhere")
                    .isNotEmpty();
            assertThat(t.batchesAcknowledged()).isGreaterThanOrEqualTo(acknowledgedAtKill + 10);
            report.printAndAssertClean();
        }
    }

    @Test
    void shouldKeepTheVersionAndEveryAcknowledgementWhenTheSingletonNodeIsKilled() throws Exception {
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(3)
                        .withServerFlags(SLOW_DECODE)
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false)) {
            t.startMonitor(Duration.ofMillis(200));
            steps(t, 10);
            int versionBefore = t.version();
            // Two batches pulled (through node 1's gateway, the trainer's first contact point) when
            // the singletons' node dies: one is acknowledged after the kill, one never.
            TrainingBatch ackedAfterKill = Waits.until(
                    "a batch to acknowledge after the kill",
                    Duration.ofSeconds(60),
                    () -> t.pull(Duration.ofSeconds(2)));
            TrainingBatch unacknowledged = Waits.until(
                    "a batch to hold unacknowledged", Duration.ofSeconds(60), () -> t.pull(Duration.ofSeconds(2)));
            Set<Long> pending = new HashSet<>(
                    unacknowledged.groups().stream().map(TrainingGroup::taskId).toList());

            int holder = c.killSingletonNode();
            assertThat(holder)
                    .as("the seed, the oldest node, held the singletons")
                    .isEqualTo(1);
            // Answered once the successor has taken over; its tasks must never come again.
            t.acknowledgeUntilAnswered(ackedAfterKill);

            // The successor serves the version written before the kill, never an older one.
            int versionAfter = Waits.until(
                    "the status from the successor",
                    Duration.ofSeconds(90),
                    () -> Optional.of(t.observe().version()));
            assertThat(versionAfter).isEqualTo(versionBefore);
            assertThat(c.singletonNode(Duration.ofSeconds(60))).isEqualTo(2);

            // Every task of the unacknowledged batch comes again; the monitor and the trainer check
            // that no acknowledged task does.
            Set<Long> redelivered = new HashSet<>();
            Waits.untilTrue("the unacknowledged batch's tasks delivered again", Duration.ofSeconds(120), () -> {
                t.step(Duration.ofSeconds(2), true)
                        .ifPresent(b -> b.groups().stream()
                                .map(TrainingGroup::taskId)
                                .filter(pending::contains)
                                .forEach(redelivered::add));
                return redelivered.containsAll(pending);
            });
            int afterKill = t.batchesAcknowledged();
            steps(t, afterKill + 5);
            t.drain(Duration.ofSeconds(120));

            RunReport report = RunReport.of(run.testName(), c, t, new Faults())
                    .with("version before the kill / read from the successor", versionBefore + " / " + versionAfter)
                    .with(
                            "tasks of the batch acknowledged after the kill",
                            ackedAfterKill.groups().stream()
                                    .map(TrainingGroup::taskId)
                                    .toList())
                    .with("tasks of the batch unacknowledged at the kill", pending)
                    .with("  delivered again", redelivered);
            assertThat(t.version()).isGreaterThan(versionBefore);
            report.printAndAssertClean();
        }
    }

    /**
     * Trains (pulls, acknowledges, publishes) until the task journal shows at least {@code atLeast}
     * groups in flight on {@code node} at once; returns them.
     */
    static Set<Long> awaitInFlightOn(TestCluster c, CheckedTrainer t, String node, int atLeast)
            throws InterruptedException {
        // Read as the journal grows: short groups end within the time a full read of a long run takes.
        TaskAccounting.Follower journal = new TaskAccounting.Follower();
        return Waits.until("" + atLeast + " groups in flight on " + node, Duration.ofSeconds(120), () -> {
            // Looked at for 200 ms after each step: its publish admits groups a moment after it returns.
            for (int look = 0; look < 20; look++) {
                Set<Long> running = journal.update(c.nodeProcesses()).inFlightOn(node);
                if (running.size() >= atLeast) {
                    return Optional.of(running);
                }
                Thread.sleep(10);
            }
            t.step(Duration.ofMillis(500), true);
            return Optional.empty();
        });
    }

    /**
     * Waits until {@code node} has been given a group since this call (it is taking work), training
     * meanwhile. Unlike {@link #awaitInFlightOn} this does not need to catch a group while it runs,
     * which groups of a few milliseconds make a matter of luck.
     */
    static void awaitDispatchTo(TestCluster c, CheckedTrainer t, String node) throws InterruptedException {
        long[] before = {-1};
        int batchesBefore = t.batchesAcknowledged();
        try {
            Waits.untilTrue("a group dispatched to " + node, Duration.ofSeconds(120), () -> {
                long now = TaskAccounting.read(c.nodeProcesses()).dispatchesTo(node);
                if (before[0] < 0) {
                    before[0] = now;
                }
                if (now > before[0]) {
                    return true;
                }
                t.step(Duration.ofMillis(500), true);
                return false;
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; " + dispatchDiagnosis(c, t, node, batchesBefore), e);
        }
    }

    /** What a wait for a dispatch saw: the dispatches per node, the batches, the coordinator's word on {@code node}'s runner. */
    private static String dispatchDiagnosis(TestCluster c, CheckedTrainer t, String node, int batchesBefore) {
        StringBuilder why = new StringBuilder();
        try {
            why.append("dispatches per node ")
                    .append(TaskAccounting.read(c.nodeProcesses()).dispatchesByNode)
                    .append(", batches acknowledged while waiting ")
                    .append(t.batchesAcknowledged() - batchesBefore);
            List<String> runnerLines = new ArrayList<>();
            for (ManagedProcess p : c.nodeProcesses()) {
                p.lines().stream()
                        .filter(l -> l.contains("runner on " + node) || l.contains("runner on pekko"))
                        .forEach(runnerLines::add);
            }
            for (int i = 1; i <= c.nodeCount(); i++) {
                why.append(", node-").append(i).append(c.isAlive(i) ? " up" : " down");
                c.metrics(i)
                        .ifPresent(text -> text.lines()
                                .filter(l -> l.startsWith("rollout_groups_in_flight"))
                                .forEach(l -> why.append(" [").append(l).append(']')));
            }
            why.append(", the coordinators' last lines on its runner: ")
                    .append(runnerLines.subList(Math.max(0, runnerLines.size() - 6), runnerLines.size()));
        } catch (Exception | AssertionError e) {
            why.append(" (diagnosis failed: ").append(e).append(')');
        }
        return why.toString();
    }

    /** Trains until {@code acknowledged} batches were acknowledged, publishing after each. */
    static void steps(CheckedTrainer t, int acknowledged) throws InterruptedException {
        Waits.untilTrue(acknowledged + " acknowledged batches", Duration.ofSeconds(180), () -> {
            t.step(Duration.ofSeconds(2), true);
            return t.batchesAcknowledged() >= acknowledged;
        });
    }
}
