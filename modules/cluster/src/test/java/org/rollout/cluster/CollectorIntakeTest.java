package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.rollout.api.TrainingGroup;
import org.rollout.cluster.Collector.GroupFinished;
import org.rollout.cluster.CollectorIntake.Decision;
import org.rollout.cluster.CollectorIntake.Verdict;

/** The collector's intake: which outcome of a task is its end, one rule per test. */
class CollectorIntakeTest {
    private static final long S = 1_000_000_000L;
    private static final Duration ACK_TIMEOUT = Duration.ofSeconds(60);

    static GroupFinished accepted(long taskId, int attempt) {
        return Payloads.oneRowAccepted(taskId, attempt, 0);
    }

    static GroupFinished rejected(long taskId, int attempt) {
        return new GroupFinished(
                taskId,
                attempt,
                false,
                0,
                0,
                new Collector.Rejected(RejectReason.REJECTED, "the filter said no"),
                Map.of(),
                ScalarStats.Totals.EMPTY,
                1);
    }

    static GroupFinished eval(long taskId, int attempt) {
        GroupFinished a = accepted(taskId, attempt);
        return new GroupFinished(taskId, attempt, true, 0, 0, a.outcome(), Map.of(), ScalarStats.Totals.EMPTY, 1);
    }

    /** An intake a coordinator attached to at time 0: new tasks from 100, {@code open} below. */
    private static CollectorIntake attached(List<Long> open, List<Long> possiblyDelivered) {
        CollectorIntake intake = new CollectorIntake(ACK_TIMEOUT, true);
        intake.attach(100, open, possiblyDelivered, true, 0);
        return intake;
    }

    static Stream<Arguments> firstAndLater() {
        return Stream.of(
                Arguments.of("accepted", accepted(100, 0), accepted(100, 1)),
                Arguments.of("accepted, then rejected", accepted(100, 0), rejected(100, 1)),
                Arguments.of("rejected, then accepted", rejected(100, 0), accepted(100, 1)),
                Arguments.of("the same attempt again", accepted(100, 0), accepted(100, 0)),
                Arguments.of("evaluation", eval(100, 0), eval(100, 1)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("firstAndLater")
    void theFirstOutcomeOfATaskWinsAndALaterOneIsADuplicate(String name, GroupFinished first, GroupFinished later) {
        CollectorIntake intake = attached(List.of(), List.of());
        assertThat(intake.decide(first, 0).verdict()).isEqualTo(Verdict.TAKEN);
        assertThat(intake.decide(later, 1).verdict()).isEqualTo(Verdict.DUPLICATE);
        assertThat(intake.decide(later, 2).verdict()).isEqualTo(Verdict.DUPLICATE);
        assertThat(intake.duplicates()).isEqualTo(2);
    }

    static Stream<Arguments> knowledge() {
        // task, at (s), open below 100, possibly delivered -> verdict
        return Stream.of(
                Arguments.of(accepted(100, 0), 0, List.of(), List.of(), Verdict.TAKEN),
                Arguments.of(accepted(5, 1), 0, List.of(), List.of(), Verdict.DONE_BY_PREDECESSOR),
                Arguments.of(rejected(5, 1), 0, List.of(7L), List.of(), Verdict.DONE_BY_PREDECESSOR),
                Arguments.of(accepted(7, 1), 0, List.of(7L), List.of(), Verdict.TAKEN),
                Arguments.of(accepted(7, 1), 59, List.of(7L), List.of(7L), Verdict.HELD),
                Arguments.of(rejected(7, 1), 59, List.of(7L), List.of(7L), Verdict.HELD),
                Arguments.of(accepted(7, 1), 60, List.of(7L), List.of(7L), Verdict.TAKEN),
                Arguments.of(eval(7, 1), 0, List.of(7L), List.of(7L), Verdict.TAKEN),
                Arguments.of(accepted(8, 1), 0, List.of(7L, 8L), List.of(7L), Verdict.TAKEN));
    }

    @ParameterizedTest(name = "{0} at {1} s, open {2}, possibly delivered {3}: {4}")
    @MethodSource("knowledge")
    void anOutcomeIsTakenDroppedOrHeldByWhatTheAttachedCoordinatorSaid(
            GroupFinished g, int atSeconds, List<Long> open, List<Long> possiblyDelivered, Verdict verdict) {
        CollectorIntake intake = attached(open, possiblyDelivered);
        assertThat(intake.decide(g, atSeconds * S).verdict()).isEqualTo(verdict);
    }

    @Test
    void outcomesBeforeACoordinatorAttachedWaitAndAreDecidedInArrivalOrderWhenOneDoes() {
        CollectorIntake intake = new CollectorIntake(ACK_TIMEOUT, true);
        assertThat(intake.attached()).isFalse();
        assertThat(intake.decide(accepted(3, 0), 0).verdict()).isEqualTo(Verdict.EARLY);
        assertThat(intake.decide(accepted(120, 0), 0).verdict()).isEqualTo(Verdict.EARLY);
        List<GroupFinished> early = intake.attach(100, List.of(), List.of(), true, 0);
        assertThat(early).extracting(GroupFinished::taskId).containsExactly(3L, 120L);
        assertThat(early.stream().map(g -> intake.decide(g, 0).verdict()))
                .containsExactly(Verdict.DONE_BY_PREDECESSOR, Verdict.TAKEN);
        assertThat(intake.attach(100, List.of(), List.of(), false, 0)).isEmpty();
    }

    @Test
    void aCollectorOnItsOwnTakesOutcomesAtOnce() {
        CollectorIntake intake = new CollectorIntake(ACK_TIMEOUT, false);
        assertThat(intake.decide(accepted(0, 0), 0).verdict()).isEqualTo(Verdict.TAKEN);
    }

    @Test
    void onlyATakenAcceptedTrainingGroupGoesToTheBuffer() {
        CollectorIntake intake = attached(List.of(7L), List.of(7L));
        assertThat(intake.decide(accepted(100, 0), 0).buffered()).isTrue();
        assertThat(intake.decide(rejected(101, 0), 0).buffered()).isFalse();
        assertThat(intake.decide(eval(102, 0), 0).buffered()).isFalse();
        assertThat(intake.decide(accepted(7, 1), 0).buffered()).isFalse(); // held
        assertThat(intake.decide(accepted(100, 1), 0).buffered()).isFalse(); // duplicate
        Decision r = intake.decide(rejected(103, 0), 0);
        assertThat(r.accepted()).isFalse();
        assertThat(r.rejectReason()).isEqualTo("rejected");
    }

    @Test
    void aHeldRejectionIsTakenOnceTheAckTimeoutHasPassedWithoutAnAcknowledgement() {
        CollectorIntake intake = attached(List.of(7L, 8L), List.of(7L, 8L));
        intake.decide(rejected(7, 1), 10 * S);
        intake.decide(accepted(8, 1), 20 * S);
        assertThat(intake.heldTasks()).containsExactly(7L, 8L);
        assertThat(intake.releaseDue(59 * S)).isEmpty();

        List<Decision> released = intake.releaseDue(60 * S);

        assertThat(released).extracting(Decision::verdict).containsOnly(Verdict.TAKEN);
        assertThat(released).extracting(d -> d.finished().taskId()).containsExactly(7L, 8L);
        assertThat(released.get(0).rejectReason()).isEqualTo("rejected");
        assertThat(released.get(1).buffered()).isTrue();
        assertThat(intake.heldCount()).isZero();
        assertThat(intake.releaseDue(120 * S)).isEmpty();
        assertThat(intake.decide(accepted(7, 2), 61 * S).verdict()).isEqualTo(Verdict.DUPLICATE);
    }

    @Test
    void aLateAcknowledgementOfAPredecessorsBatchDropsTheHeldOutcomeAndMakesLaterOnesDuplicates() {
        CollectorIntake intake = attached(List.of(7L, 8L), List.of(7L, 8L));
        intake.decide(rejected(7, 1), 0);

        List<GroupFinished> superseded = intake.deliveredByPredecessor(List.of(7L, 8L));

        assertThat(superseded).extracting(GroupFinished::taskId).containsExactly(7L);
        assertThat(intake.heldCount()).isZero();
        assertThat(intake.releaseDue(600 * S)).isEmpty();
        assertThat(intake.decide(accepted(8, 1), 1).verdict()).isEqualTo(Verdict.DONE_BY_PREDECESSOR);
        assertThat(intake.decide(accepted(7, 2), 1).verdict()).isEqualTo(Verdict.DONE_BY_PREDECESSOR);
    }

    @Test
    void anAcknowledgementOfAPredecessorsBatchWithNewTasksMakesTheirLaterOutcomesDuplicates() {
        CollectorIntake intake = attached(List.of(), List.of());
        assertThat(intake.deliveredByPredecessor(List.of(150L))).isEmpty();
        assertThat(intake.decide(accepted(150, 1), 0).verdict()).isEqualTo(Verdict.DUPLICATE);
    }

    @Test
    void aReattachAnnouncesAgainTheAcceptedGroupsStillHeldAndForgetsRecentRejections() {
        CollectorIntake intake = attached(List.of(), List.of());
        GroupFinished bufferedOne = accepted(100, 0);
        intake.decide(bufferedOne, 0);
        intake.decide(accepted(101, 0), 0); // handed out: not held here any more
        intake.decide(rejected(102, 0), 0);
        intake.decide(eval(103, 0), 0);
        intake.decide(rejected(104, 0), 0);
        TrainingGroup group = ((Collector.Accepted) bufferedOne.outcome()).group();

        List<TrainingGroup> again = intake.reannounce(List.of(100L, 101L, 102L, 103L, 105L), Map.of(100L, group));

        assertThat(again).containsExactly(group);
        assertThat(intake.decide(rejected(102, 1), 1).verdict()).isEqualTo(Verdict.TAKEN);
        assertThat(intake.decide(eval(103, 1), 1).verdict()).isEqualTo(Verdict.TAKEN);
        assertThat(intake.decide(accepted(101, 1), 1).verdict()).isEqualTo(Verdict.DUPLICATE);
        assertThat(intake.decide(accepted(100, 1), 1).verdict()).isEqualTo(Verdict.DUPLICATE);
        assertThat(intake.decide(accepted(104, 1), 1).verdict()).isEqualTo(Verdict.DUPLICATE); // not open
    }

    @Test
    void aRejectionTakenLongerAgoThanItIsKeptIsNotForgottenOnAReattach() {
        CollectorIntake intake = attached(List.of(), List.of());
        intake.decide(rejected(100, 0), 0);
        long later = CollectorIntake.UNBUFFERED_KEPT.toNanos() + S;
        intake.decide(rejected(101, 0), later); // the older one is no longer kept

        intake.reannounce(List.of(100L, 101L), Map.of());

        assertThat(intake.decide(rejected(100, 1), later).verdict()).isEqualTo(Verdict.DUPLICATE);
        assertThat(intake.decide(rejected(101, 1), later).verdict()).isEqualTo(Verdict.TAKEN);
    }

    @Test
    void theFirstAttachCountsEveryTaskBelowTheLowestOpenOneAsTakenAndAReattachKeepsWhatWasTaken() {
        CollectorIntake intake = new CollectorIntake(ACK_TIMEOUT, true);
        intake.attach(100, List.of(40L), List.of(), true, 0);
        assertThat(intake.decide(accepted(40, 1), 0).verdict()).isEqualTo(Verdict.TAKEN);
        assertThat(intake.decide(accepted(120, 0), 0).verdict()).isEqualTo(Verdict.TAKEN);

        intake.attach(130, List.of(40L, 120L, 125L), List.of(), false, 0);

        assertThat(intake.decide(accepted(120, 1), 0).verdict()).isEqualTo(Verdict.DUPLICATE);
        assertThat(intake.decide(accepted(125, 0), 0).verdict()).isEqualTo(Verdict.TAKEN);
        assertThat(intake.decide(accepted(126, 0), 0).verdict()).isEqualTo(Verdict.DONE_BY_PREDECESSOR);
    }
}
