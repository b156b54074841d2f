package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The coordinator's book of tasks, one transition per test. */
class TaskLedgerTest {

    private static TaskLedger.Task<String> task(long id, int attempt, String runner, boolean eval) {
        return new TaskLedger.Task<>(id, attempt, Map.of("prompt", "p" + id), eval, id, runner, 2, 0L, false);
    }

    private static TaskLedger<String> twoRunners() {
        TaskLedger<String> l = new TaskLedger<>();
        l.join("a", "node-a", 2);
        l.join("b", "node-b", 2);
        return l;
    }

    @Test
    void theRunnerKeptInPreferenceOrderIsTheOneAScanOfEveryRunnerChooses() {
        // Random joins, departures, dispatches (training and evaluation, to the chosen runner or
        // to any), finishes and a recovery's restore: after each, the kept order and the scan agree.
        java.util.Random random = new java.util.Random(20261204);
        TaskLedger<String> l = new TaskLedger<>();
        List<Long> running = new java.util.ArrayList<>();
        long nextId = 0;
        int nextRunner = 0;
        int checks = 0;
        for (int step = 0; step < 20_000; step++) {
            int op = random.nextInt(100);
            List<String> joined = List.copyOf(l.loads().keySet());
            if (op < 4 || joined.isEmpty()) {
                String r = "r" + nextRunner++;
                l.join(r, "node-" + r, 1 + random.nextInt(4));
            } else if (op < 6 && joined.size() > 1) {
                l.leave(joined.get(random.nextInt(joined.size())));
            } else if (op < 55) {
                boolean eval = random.nextInt(5) == 0;
                String r = random.nextBoolean() ? l.leastLoaded(eval) : joined.get(random.nextInt(joined.size()));
                if (r != null) {
                    l.dispatch(task(nextId, 0, r, eval));
                    running.add(nextId++);
                }
            } else if (op < 58) {
                // A recovery: tasks found open on runners that joined, their loads counted again.
                String r = joined.get(random.nextInt(joined.size()));
                l.restore(List.of(task(nextId, 0, r, false)), List.of(), List.of());
                running.add(nextId++);
            } else if (!running.isEmpty()) {
                l.finish(running.remove(random.nextInt(running.size())));
            }
            for (boolean over : new boolean[] {false, true}) {
                assertThat(l.leastLoaded(over))
                        .as("step %d, over capacity %s", step, over)
                        .isEqualTo(TaskLedger.leastLoaded(l.loads(), over));
                checks++;
            }
        }
        assertThat(checks).isEqualTo(40_000);
        assertThat(nextRunner).isGreaterThan(100);
    }

    @Test
    void shouldCountADispatchedTaskOnItsRunnerAndReleaseItWhenItFinishes() {
        TaskLedger<String> l = twoRunners();
        l.dispatch(task(1, 0, "a", false));
        assertThat(l.inFlightByNode()).containsEntry("node-a", 1).containsEntry("node-b", 0);
        assertThat(l.leastLoaded(false)).isEqualTo("b");

        assertThat(l.finish(1)).isNotNull();
        assertThat(l.inFlight()).isZero();
        assertThat(l.inFlightByNode()).containsEntry("node-a", 0);
        assertThat(l.finish(1)).as("finished once").isNull();
    }

    @Test
    void shouldKeepAnAcceptedTaskUntilATrainerConsumesIt() {
        TaskLedger<String> l = twoRunners();
        var t = l.dispatch(task(1, 0, "a", false));
        l.accepted(l.finish(1));
        assertThat(l.isAcceptedUnacked(1)).isTrue();
        assertThat(l.openTaskIds()).containsExactly(1L);
        assertThat(l.acceptedByRunner()).containsExactly(Map.entry("a", List.of(1L)));

        TaskLedger.Consumed<String> c = l.consume(List.of(1L, 99L));
        assertThat(c.retired()).containsExactly(t);
        assertThat(c.rerunsStopped()).isEmpty();
        assertThat(c.unknown()).as("a task retired before").isEqualTo(1);
        assertThat(l.openTaskIds()).isEmpty();
    }

    @Test
    void shouldStopTheRerunOfATaskThatATrainerConsumedFromAPredecessorsBatch() {
        TaskLedger<String> l = twoRunners();
        var rerun = l.dispatch(task(7, 1, "b", false));
        TaskLedger.Consumed<String> c = l.consume(List.of(7L));
        assertThat(c.rerunsStopped()).containsExactly(rerun);
        assertThat(l.inFlight()).isZero();
        assertThat(l.inFlightByNode()).containsEntry("node-b", 0);
    }

    @Test
    void shouldQueueTheTasksOfALostRunnerToBeDispatchedAgainOnce() {
        TaskLedger<String> l = twoRunners();
        var one = l.dispatch(task(1, 0, "a", false));
        var two = l.dispatch(task(2, 0, "a", false));
        l.dispatch(task(3, 0, "b", false));
        assertThat(l.leave("a")).containsExactlyInAnyOrder(one, two);
        assertThat(l.leave("a")).as("queued already").isEmpty();
        assertThat(l.hasRunner("a")).isFalse();
        assertThat(l.knownRunners()).as("still named by its tasks").contains("a", "b");

        var first = l.nextToRedispatch().orElseThrow();
        l.dispatch(task(first.taskId(), 1, "b", false));
        assertThat(l.isCurrent(first)).as("the old attempt is replaced").isFalse();
        // A task that finished while it waited is not dispatched again.
        long other = first.taskId() == 1 ? 2 : 1;
        l.finish(other);
        assertThat(l.nextToRedispatch()).isEmpty();
    }

    @Test
    void shouldNeverLetEvaluationTakeATrainingPlace() {
        TaskLedger<String> l = new TaskLedger<>();
        l.join("a", "node-a", 1);
        l.dispatch(task(1, 0, "a", true));
        assertThat(l.leastLoaded(false))
                .as("an eval group leaves the training place free")
                .isEqualTo("a");
        l.dispatch(task(2, 0, "a", false));
        assertThat(l.leastLoaded(false)).isNull();
        assertThat(l.leastLoaded(true)).isEqualTo("a");
    }

    @Test
    void shouldCountTheTasksARunnerAlreadyHasWhenItJoinsAfterARecovery() {
        TaskLedger<String> l = new TaskLedger<>();
        l.restore(List.of(task(1, 0, "a", false), task(2, 0, "a", true)), List.of(), List.of());
        assertThat(l.join("a", "node-a", 2)).isTrue();
        assertThat(l.join("a", "node-a", 2)).as("joined once").isFalse();
        assertThat(l.inFlightByNode()).containsEntry("node-a", 2);
        assertThat(l.leastLoaded(false)).as("one training place of two is free").isEqualTo("a");
    }

    @Test
    void shouldTellTheCollectorWhichTasksMayBeInATrainersHands() {
        TaskLedger<String> l = twoRunners();
        l.dispatch(new TaskLedger.Task<>(5, 1, Map.of(), false, 5, "a", 1, 0L, true));
        l.dispatch(task(6, 0, "a", false));
        assertThat(l.possiblyDelivered()).containsExactly(5L);
        assertThat(l.dispatch(task(8, 0, "b", false)).entry(true).accepted()).isTrue();
    }

    @Test
    void shouldDropADiscardedAcceptedTask() {
        TaskLedger<String> l = twoRunners();
        l.dispatch(task(1, 0, "a", false));
        l.accepted(l.finish(1));
        assertThat(l.discard(1)).isNotNull();
        assertThat(l.discard(1)).isNull();
        assertThat(l.openTaskIds()).isEmpty();
    }

    @Test
    void handingOutMarksEachAcceptedTaskOnceAndLeavesOthersAlone() {
        TaskLedger<String> l = twoRunners();
        for (long id = 1; id <= 3; id++) {
            l.dispatch(task(id, 0, "a", false));
        }
        l.accepted(l.finish(1));
        l.accepted(l.finish(2));
        List<DurableState.OpenTask> marked = l.handedOut(List.of(1L, 2L, 3L, 99L));
        assertThat(marked)
                .as("the accepted ones, written accepted and marked")
                .extracting(
                        DurableState.OpenTask::taskId,
                        DurableState.OpenTask::accepted,
                        DurableState.OpenTask::possiblyDelivered)
                .containsExactlyInAnyOrder(
                        org.assertj.core.groups.Tuple.tuple(1L, true, true),
                        org.assertj.core.groups.Tuple.tuple(2L, true, true));
        assertThat(l.possiblyDelivered()).containsExactlyInAnyOrder(1L, 2L);
        assertThat(l.handedOut(List.of(1L, 2L)))
                .as("a redelivery writes nothing again")
                .isEmpty();
    }
}
