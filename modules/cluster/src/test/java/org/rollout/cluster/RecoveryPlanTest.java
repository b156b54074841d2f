package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** What a successor does with each task of the ledger, given what the surviving runners hold. */
class RecoveryPlanTest {

    private static DurableState.OpenTask task(long id, boolean accepted) {
        return task(id, accepted, false);
    }

    /** @param handedOut a batch carried it (the ledger's possibly-delivered mark) */
    private static DurableState.OpenTask task(long id, boolean accepted, boolean handedOut) {
        return new DurableState.OpenTask(id, 0, false, id, 3, accepted, handedOut);
    }

    private static DurableState.Ledger ledger(long acceptedSoFar, DurableState.OpenTask... open) {
        Map<Long, DurableState.OpenTask> m = new LinkedHashMap<>();
        for (DurableState.OpenTask t : open) {
            m.put(t.taskId(), t);
        }
        return new DurableState.Ledger(new DurableState.Cursor(100, 100, acceptedSoFar, 2), m);
    }

    private static GroupRunner.Held running(long id, int attempt) {
        return new GroupRunner.Held(id, attempt, false, false);
    }

    private static GroupRunner.Held finished(long id, boolean accepted) {
        return new GroupRunner.Held(id, 0, true, accepted);
    }

    /** What happens to one task, per what the ledger says and what runner "r" holds. */
    enum Fate {
        ACCEPTED_RESENT,
        KEPT_RUNNING,
        OPEN_RESENT,
        RUN_AGAIN
    }

    static Stream<Arguments> oneTask() {
        return Stream.of(
                // ledger accepted?, handed out?, held by r, fate, possibly delivered, budget accepted (of 10), running
                Arguments.of(true, true, finished(7, true), Fate.ACCEPTED_RESENT, true, 10L, 0L),
                Arguments.of(true, false, finished(7, true), Fate.ACCEPTED_RESENT, false, 10L, 0L),
                Arguments.of(true, true, null, Fate.RUN_AGAIN, true, 9L, 1L),
                Arguments.of(true, false, null, Fate.RUN_AGAIN, false, 9L, 1L),
                Arguments.of(false, false, running(7, 1), Fate.KEPT_RUNNING, false, 10L, 1L),
                Arguments.of(false, false, finished(7, false), Fate.OPEN_RESENT, false, 10L, 1L),
                Arguments.of(false, false, finished(7, true), Fate.OPEN_RESENT, false, 10L, 1L),
                Arguments.of(false, false, null, Fate.RUN_AGAIN, false, 10L, 1L));
    }

    @ParameterizedTest(name = "accepted={0}, handed out={1}, held={2} -> {3}")
    @MethodSource("oneTask")
    void shouldDecideEachTaskFromTheLedgerAndTheHoldings(
            boolean accepted,
            boolean handedOut,
            GroupRunner.Held held,
            Fate fate,
            boolean possiblyDelivered,
            long budgetAccepted,
            long budgetRunning) {
        Map<String, List<GroupRunner.Held>> holdings =
                held == null ? Map.of("r", List.of()) : Map.of("r", List.of(held));
        RecoveryPlan<String> plan = RecoveryPlan.of(ledger(10, task(7, accepted, handedOut)), holdings, t -> true);

        assertThat(plan.accepted).isEqualTo(budgetAccepted);
        assertThat(plan.running).isEqualTo(budgetRunning);
        assertThat(plan.forget).isEmpty();
        assertThat(plan.cancel).isEmpty();
        switch (fate) {
            case ACCEPTED_RESENT -> {
                assertThat(plan.acceptedUnacked).singleElement().satisfies(a -> {
                    assertThat(a.runner()).isEqualTo("r");
                    assertThat(a.task().possiblyDelivered()).isEqualTo(possiblyDelivered);
                });
                assertThat(plan.open).isEmpty();
                assertThat(plan.resend).containsExactly(Map.entry("r", List.of(7L)));
            }
            case KEPT_RUNNING -> {
                assertThat(plan.open).singleElement().satisfies(o -> {
                    assertThat(o.runner()).isEqualTo("r");
                    assertThat(o.attempt())
                            .as("the attempt that runs, not the one written")
                            .isEqualTo(1);
                });
                assertThat(plan.resend).isEmpty();
            }
            case OPEN_RESENT -> {
                assertThat(plan.open)
                        .singleElement()
                        .satisfies(o -> assertThat(o.runner()).isEqualTo("r"));
                assertThat(plan.resend).containsExactly(Map.entry("r", List.of(7L)));
            }
            case RUN_AGAIN -> {
                assertThat(plan.open).singleElement().satisfies(o -> {
                    assertThat(o.again()).isTrue();
                    assertThat(o.possiblyDelivered()).isEqualTo(possiblyDelivered);
                });
                assertThat(plan.resend).isEmpty();
                assertThat(plan.again()).isEqualTo(1);
            }
        }
        if (fate != Fate.ACCEPTED_RESENT) {
            assertThat(plan.open.getFirst().possiblyDelivered()).isEqualTo(possiblyDelivered);
        }
    }

    @Test
    void shouldForgetHeldOutcomesAndCancelGroupsThatTheLedgerNoLongerHas() {
        RecoveryPlan<String> plan = RecoveryPlan.of(
                ledger(0, task(1, false)),
                Map.of("r", List.of(finished(5, true), running(6, 2), running(1, 0))),
                t -> true);
        assertThat(plan.forget).containsExactly(Map.entry("r", List.of(5L)));
        assertThat(plan.cancel).containsExactly(new RecoveryPlan.Stray<>("r", 6, 2));
        assertThat(plan.open)
                .singleElement()
                .satisfies(o -> assertThat(o.runner()).isEqualTo("r"));
    }

    @Test
    void shouldKeepTheMarkOfAPossiblyDeliveredTaskAcrossASecondTakeOver() {
        // Marked by the first successor and dispatched again (attempt 1, not accepted); that
        // successor's node is lost too, with the re-run.
        DurableState.OpenTask rerun = new DurableState.OpenTask(7, 1, false, 7, 3, false, true);
        RecoveryPlan<String> plan = RecoveryPlan.of(ledger(9, rerun), Map.of(), t -> true);
        assertThat(plan.open).singleElement().satisfies(o -> {
            assertThat(o.again()).isTrue();
            assertThat(o.possiblyDelivered()).isTrue();
            assertThat(o.attempt()).isEqualTo(1);
        });
        assertThat(plan.accepted).isEqualTo(9);
        assertThat(plan.running).isEqualTo(1);
    }

    @Test
    void shouldNeverMarkAnEvaluationTaskPossiblyDelivered() {
        DurableState.OpenTask eval = new DurableState.OpenTask(3, 0, true, 0, 4, false, false);
        DurableState.OpenTask eval2 = new DurableState.OpenTask(4, 0, true, 1, 4, false, false);
        RecoveryPlan<String> plan = RecoveryPlan.of(ledger(0, eval, eval2), Map.of(), t -> true);
        assertThat(plan.open).allSatisfy(o -> assertThat(o.possiblyDelivered()).isFalse());
        assertThat(plan.evalOpen).isEqualTo(2);
        assertThat(plan.running).isZero();
        assertThat(plan.evalPassVersion).isEqualTo(4);
    }

    @Test
    void shouldDropATaskWhoseItemCanNoLongerBeRead() {
        RecoveryPlan<String> plan =
                RecoveryPlan.of(ledger(4, task(1, true), task(2, false)), Map.of(), t -> t.taskId() != 1);
        assertThat(plan.unreadable).extracting(DurableState.OpenTask::taskId).containsExactly(1L);
        assertThat(plan.open).extracting(o -> o.task().taskId()).containsExactly(2L);
        assertThat(plan.lostAccepted).isZero();
        assertThat(plan.accepted).isEqualTo(4);
    }

    @Test
    void shouldRestoreTheBudgetOfTheWorkedExampleOfALateAcknowledgement() {
        // Version 1, 8 accepted, tasks 4-7 accepted and handed out; one runner holds task 4.
        RecoveryPlan<String> plan = RecoveryPlan.of(
                ledger(8, task(4, true, true), task(5, true, true), task(6, true, true), task(7, true, true)),
                Map.of("r", List.of(finished(4, true))),
                t -> true);
        assertThat(plan.accepted).isEqualTo(5);
        assertThat(plan.running).isEqualTo(3);
        assertThat(plan.lostAccepted).isEqualTo(3);
        assertThat(plan.resend).containsExactly(Map.entry("r", List.of(4L)));
        assertThat(plan.open)
                .extracting(o -> o.task().taskId(), RecoveryPlan.Open::possiblyDelivered)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(5L, true),
                        org.assertj.core.groups.Tuple.tuple(6L, true),
                        org.assertj.core.groups.Tuple.tuple(7L, true));
    }
}
