package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.rollout.cluster.AdmissionPlanner.Admission;
import org.rollout.cluster.AdmissionPlanner.Dispatch;
import org.rollout.cluster.AdmissionPlanner.Halt;
import org.rollout.core.StalenessBudget;

/** Which tasks the coordinator dispatches where, and why admission stops: one rule per test. */
class AdmissionPlannerTest {

    private static final PromptSource ENDLESS = i -> Optional.of(Map.of("prompt", "p" + i));

    private final TaskLedger<String> tasks = new TaskLedger<>();
    private EvaluationSchedule eval = new EvaluationSchedule(List.of(), 0, 1);

    private AdmissionPlanner<String> planner(StalenessBudget budget, PromptSource source, int queueSize) {
        return new AdmissionPlanner<>(tasks, budget, eval, source, queueSize, 0, 0, () -> 0L);
    }

    private AdmissionPlanner<String> planner(StalenessBudget budget) {
        return planner(budget, ENDLESS, 1_000);
    }

    private static List<String> runners(Admission<String> a) {
        return a.dispatches().stream().map(d -> d.task().runner()).toList();
    }

    @ParameterizedTest(name = "η={0}, version {1}, B={2}: {3} groups")
    @CsvSource({"0, 0, 1, 1", "0, 0, 4, 4", "1, 0, 2, 4", "2, 3, 2, 12", "0, 5, 3, 18"})
    void trainingAdmissionStopsExactlyAtTheStalenessBound(int eta, int version, int batch, int expected) {
        tasks.join("a", "node-a", 1_000);
        StalenessBudget budget = new StalenessBudget(1_000, batch, eta);
        budget.onVersion(version);

        Admission<String> a = planner(budget).admit();

        assertThat(a.dispatches()).hasSize(expected); // (η + v + 1)·B
        assertThat(a.halt()).isEqualTo(Halt.BUDGET_EXHAUSTED);
        assertThat(a.dispatches())
                .allSatisfy(d -> assertThat(d.task().dispatchVersion()).isEqualTo(version));
    }

    @Test
    void aNewVersionAdmitsOneMoreBatch() {
        tasks.join("a", "node-a", 100);
        StalenessBudget budget = new StalenessBudget(100, 2, 1);
        AdmissionPlanner<String> planner = planner(budget);
        assertThat(planner.admit().dispatches()).hasSize(4);

        budget.onVersion(1);

        Admission<String> more = planner.admit();
        assertThat(more.dispatches()).hasSize(2);
        assertThat(more.dispatches())
                .allSatisfy(d -> assertThat(d.task().dispatchVersion()).isEqualTo(1));
    }

    @Test
    void eachGroupGoesToTheLeastLoadedRunnerAndTiesGoToTheOneGivenFewestGroups() {
        tasks.join("a", "node-a", 2);
        tasks.join("b", "node-b", 4);
        // b is given one group: both are idle again, but a was given fewer.
        tasks.dispatch(new TaskLedger.Task<>(99, 0, Map.of(), false, 99, "b", 0, 0L, false));
        tasks.finish(99);

        Admission<String> a = planner(new StalenessBudget(5, 100, 0)).admit();

        // a (0/2, 0 given) ties b (0/4, 1 given); then b (0/4) < a (1/2); b (1/4) < a (1/2);
        // a (1/2) ties b (2/4) and was given fewer; then b (2/4) < a (2/2).
        assertThat(runners(a)).containsExactly("a", "b", "b", "a", "b");
    }

    @Test
    void noTrainingGroupGoesToARunnerAtCapacity() {
        tasks.join("a", "node-a", 2);
        tasks.join("b", "node-b", 1);

        Admission<String> a = planner(new StalenessBudget(100, 100, 0)).admit();

        assertThat(runners(a)).containsExactlyInAnyOrder("a", "a", "b");
        assertThat(a.halt()).isEqualTo(Halt.NO_CAPACITY);
        assertThat(planner(new StalenessBudget(100, 100, 0)).admit().dispatches())
                .isEmpty();
    }

    @Test
    void evaluationGroupsMayGoOverCapacityAndTakeNoTrainingPlace() {
        tasks.join("a", "node-a", 1);
        eval = new EvaluationSchedule(List.of(Map.of("q", 0), Map.of("q", 1), Map.of("q", 2)), 0, 3);
        eval.start(0);

        Admission<String> a = planner(new StalenessBudget(100, 100, 0)).admit();

        assertThat(a.dispatches()).extracting(d -> d.task().isEval()).containsExactly(true, true, true, false);
        assertThat(a.dispatches()).extracting(d -> d.task().sourceIndex()).containsExactly(0L, 1L, 2L, 0L);
        assertThat(runners(a)).containsOnly("a");
        assertThat(a.halt()).isEqualTo(Halt.NO_CAPACITY);
    }

    @Test
    void evaluationGroupsStopAtTheirOwnConcurrencyLimit() {
        tasks.join("a", "node-a", 10);
        eval = new EvaluationSchedule(List.of(Map.of("q", 0), Map.of("q", 1), Map.of("q", 2)), 0, 2);
        eval.start(0);

        Admission<String> a = planner(new StalenessBudget(1, 100, 0)).admit();

        assertThat(a.dispatches()).extracting(d -> d.task().isEval()).containsExactly(true, true, false);
    }

    @Test
    void aLostRunnersTasksAreDispatchedAgainBeforeNewOnesWithTheNextAttempt() {
        tasks.join("a", "node-a", 1);
        StalenessBudget budget = new StalenessBudget(100, 100, 0);
        AdmissionPlanner<String> planner = planner(budget);
        Dispatch<String> first = planner.admit().dispatches().getFirst();
        tasks.join("b", "node-b", 2);
        tasks.leave("a");

        Admission<String> a = planner.admit();

        assertThat(a.dispatches().getFirst().again()).isTrue();
        assertThat(a.dispatches().getFirst().task())
                .satisfies(t -> assertThat(t.taskId()).isEqualTo(first.task().taskId()))
                .satisfies(t -> assertThat(t.attempt()).isEqualTo(1))
                .satisfies(t -> assertThat(t.runner()).isEqualTo("b"))
                .satisfies(t ->
                        assertThat(t.dispatchVersion()).isEqualTo(first.task().dispatchVersion()));
        assertThat(a.dispatches()).extracting(Dispatch::again).containsExactly(true, false);
        assertThat(planner.redispatched()).isEqualTo(1);
    }

    @Test
    void aPausedRunAdmitsNothingNewUntilEveryUpdateThatPausedItEnded() {
        tasks.join("a", "node-a", 10);
        AdmissionPlanner<String> planner = planner(new StalenessBudget(100, 100, 0));
        planner.pause(7);
        planner.pause(8);

        assertThat(planner.admit())
                .satisfies(a -> assertThat(a.dispatches()).isEmpty())
                .satisfies(a -> assertThat(a.halt()).isEqualTo(Halt.PAUSED));
        planner.resume(7);
        assertThat(planner.admit().dispatches()).isEmpty();
        planner.resume(8);
        assertThat(planner.admit().dispatches()).hasSize(10);
    }

    @Test
    void aPausedRunStillDispatchesALostRunnersTasksAgain() {
        tasks.join("a", "node-a", 1);
        AdmissionPlanner<String> planner = planner(new StalenessBudget(100, 100, 0));
        planner.admit();
        tasks.join("b", "node-b", 1);
        tasks.leave("a");
        planner.pause(1);

        Admission<String> a = planner.admit();

        assertThat(a.dispatches())
                .singleElement()
                .satisfies(d -> assertThat(d.again()).isTrue());
        assertThat(a.halt()).isEqualTo(Halt.PAUSED);
    }

    @Test
    void groupsRunningPlusGroupsBufferedStayBelowTheQueueSize() {
        tasks.join("a", "node-a", 100);
        AdmissionPlanner<String> planner = planner(new StalenessBudget(100, 100, 0), ENDLESS, 5);
        planner.buffered(3);

        Admission<String> a = planner.admit();

        assertThat(a.dispatches()).hasSize(2);
        assertThat(a.halt()).isEqualTo(Halt.QUEUE_FULL);
    }

    @Test
    void whenThePromptsRunOutAdmissionSaysSoOnceAndStops() {
        tasks.join("a", "node-a", 100);
        PromptSource three = i -> i < 3 ? Optional.of(Map.of("prompt", i)) : Optional.empty();
        AdmissionPlanner<String> planner = planner(new StalenessBudget(100, 100, 0), three, 100);

        Admission<String> first = planner.admit();
        Admission<String> second = planner.admit();

        assertThat(first.dispatches()).hasSize(3);
        assertThat(first.promptsRanOut()).isTrue();
        assertThat(second.dispatches()).isEmpty();
        assertThat(second.promptsRanOut()).isFalse();
        assertThat(second.halt()).isEqualTo(Halt.PROMPTS_EXHAUSTED);
        assertThat(planner.exhausted()).isTrue();
        assertThat(planner.trainTaken()).isEqualTo(3);
    }

    @Test
    void theCursorGoesOnFromWhereAPredecessorLeftOff() {
        tasks.join("a", "node-a", 100);
        eval = new EvaluationSchedule(List.of(Map.of("q", 0)), 0, 1);
        eval.start(0);
        AdmissionPlanner<String> planner =
                new AdmissionPlanner<>(tasks, new StalenessBudget(2, 100, 0), eval, ENDLESS, 100, 40, 17, () -> 0L);

        Admission<String> a = planner.admit();

        assertThat(a.dispatches()).extracting(d -> d.task().taskId()).containsExactly(40L, 41L, 42L);
        assertThat(a.dispatches()).extracting(d -> d.task().sourceIndex()).containsExactly(0L, 17L, 18L);
        assertThat(planner.nextTaskId()).isEqualTo(43);
        assertThat(planner.trainTaken()).isEqualTo(19);
        assertThat(tasks.inFlight()).isEqualTo(3);
    }

    @Test
    void withNoRunnerNothingIsAdmittedAndAnEvaluationItemWaits() {
        eval = new EvaluationSchedule(List.of(Map.of("q", 0)), 0, 1);
        eval.start(0);
        AdmissionPlanner<String> planner = planner(new StalenessBudget(100, 100, 0));

        assertThat(planner.admit())
                .satisfies(a -> assertThat(a.dispatches()).isEmpty())
                .satisfies(a -> assertThat(a.halt()).isEqualTo(Halt.NO_CAPACITY));
        tasks.join("a", "node-a", 1);
        assertThat(planner.admit().dispatches().getFirst().task().isEval()).isTrue();
    }
}
