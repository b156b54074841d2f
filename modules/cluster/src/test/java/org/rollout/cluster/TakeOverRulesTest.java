package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.cluster.CollectorIntakeTest.accepted;
import static org.rollout.cluster.CollectorIntakeTest.rejected;

import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.cluster.BatchBook.HandOut;
import org.rollout.cluster.BatchBook.MarkHandOut;
import org.rollout.cluster.BatchBook.Step;
import org.rollout.cluster.Collector.Accepted;
import org.rollout.cluster.Collector.Ack;
import org.rollout.cluster.Collector.GroupFinished;
import org.rollout.cluster.CollectorIntake.Decision;
import org.rollout.cluster.CollectorIntake.Verdict;
import org.rollout.cluster.TakeOverRules.AckDecision;
import org.rollout.cluster.TakeOverRules.Answered;
import org.rollout.cluster.TakeOverRules.Attached;
import org.rollout.cluster.TakeOverRules.Consumed;
import org.rollout.cluster.TakeOverRules.PredecessorsBatch;
import org.rollout.cluster.TakeOverRules.Waits;

/** The collector's take-over rules: a coordinator's attaching and a trainer's acknowledgement, one rule per test. */
class TakeOverRulesTest {
    private static final Duration ACK_TIMEOUT = Duration.ofSeconds(60);

    /** An intake, a book of batches of {@code batchSize} and the rules over them, as the collector holds them. */
    private record Parts(CollectorIntake intake, BatchBook<String> book, TakeOverRules<String> rules) {
        /** Decides {@code g} at {@code now}; a taken training group goes to the book, its acceptance written at once. */
        Decision offer(GroupFinished g, long now) {
            Decision d = intake.decide(g, now);
            if (d.buffered()) {
                book.accept(g.taskId(), group(g), now);
                book.acceptRecorded(g.taskId(), now);
            }
            return d;
        }

        /** {@code puller} pulls; returns the batch formed for it, its hand-out being written. */
        TrainingBatch pullMarked(String puller, long now) {
            List<Step<String>> steps = book.pull(puller, "", 0, now + 10 * ACK_TIMEOUT.toNanos(), now);
            return steps.stream()
                    .filter(s -> s instanceof MarkHandOut<String>)
                    .map(s -> ((MarkHandOut<String>) s).batch())
                    .findFirst()
                    .orElseThrow();
        }

        /** {@code puller} pulls and gets a batch: returns it, handed out. */
        TrainingBatch pullHandedOut(String puller, long now) {
            TrainingBatch b = pullMarked(puller, now);
            book.handOutRecorded(b.batchId(), now);
            return b;
        }
    }

    private static Parts parts(int batchSize, boolean awaitAttach) {
        CollectorIntake intake = new CollectorIntake(ACK_TIMEOUT, awaitAttach);
        BatchBook<String> book = new BatchBook<>(batchSize, ACK_TIMEOUT, Long.MAX_VALUE);
        return new Parts(intake, book, new TakeOverRules<>(intake, book));
    }

    private static TrainingGroup group(GroupFinished g) {
        return ((Accepted) g.outcome()).group();
    }

    private static Ack ack(long batchId, Long... taskIds) {
        return new Ack(batchId, List.of(taskIds), null);
    }

    @Test
    void anAcknowledgementBeforeACoordinatorAttachedWaitsAndIsReplayedInOrderAfterTheEarlyOutcomes() {
        Parts c = parts(1, true);
        Ack first = ack(7L << 32, 5L, 6L);
        Ack second = ack((7L << 32) + 1, 8L);
        GroupFinished early = accepted(5, 0);
        c.intake().decide(early, 0);

        assertThat(c.rules().acknowledge(first)).isEqualTo(new Waits());
        assertThat(c.rules().acknowledge(second)).isEqualTo(new Waits());
        assertThat(c.rules().acknowledge(ack(3)))
                .as("no task ids: nothing to retire")
                .isEqualTo(new Answered(false));

        Attached at = c.rules().attach(8, 10, List.of(5L, 6L, 8L), List.of(5L, 6L, 8L), 0);

        assertThat(at.first()).isTrue();
        assertThat(at.early()).containsExactly(early);
        assertThat(at.acks()).containsExactly(first, second);
        assertThat(c.intake().decide(early, 0).verdict()).isEqualTo(Verdict.HELD);
        AckDecision replayed = c.rules().acknowledge(first);
        assertThat(replayed).isInstanceOf(PredecessorsBatch.class);
        assertThat(((PredecessorsBatch) replayed).taskIds()).containsExactly(5L, 6L);
        assertThat(((PredecessorsBatch) replayed).superseded()).containsExactly(early);
        assertThat(c.rules().attach(9, 10, List.of(8L), List.of(8L), 0).acks())
                .as("replayed once")
                .isEmpty();
    }

    @Test
    void anAcknowledgementOfAPredecessorsBatchRetiresItsTasksDropsHeldOutcomesAndNamesTheBatchesHoldingThemAgain() {
        Parts c = parts(1, true);
        // Tasks 7-10 were in the predecessor's batch; 7 may be in a trainer's hands (held), 9 and
        // 10 were not marked, so they are taken: 9 handed out again, 10 buffered.
        c.rules().attach(1, 100, List.of(7L, 8L, 9L, 10L), List.of(7L), 0);
        GroupFinished seven = rejected(7, 1);
        assertThat(c.offer(seven, 0).verdict()).isEqualTo(Verdict.HELD);
        assertThat(c.offer(accepted(9, 1), 0).verdict()).isEqualTo(Verdict.TAKEN);
        TrainingBatch again = c.pullHandedOut("trainer", 0);
        assertThat(c.offer(accepted(10, 1), 0).verdict()).isEqualTo(Verdict.TAKEN);
        assertThat(c.book().backlog()).isEqualTo(1);

        AckDecision d = c.rules().acknowledge(ack(3, 7L, 8L, 9L, 10L));

        assertThat(d)
                .isEqualTo(new PredecessorsBatch(
                        List.of(7L, 8L, 9L, 10L), true, List.of(seven), List.of(again.batchId())));
        assertThat(c.book().backlog()).as("10 is not handed out twice").isZero();
        assertThat(c.intake().heldCount()).isZero();
        assertThat(c.offer(accepted(8, 1), 0).verdict()).as("delivered").isEqualTo(Verdict.DONE_BY_PREDECESSOR);
        assertThat(c.offer(accepted(7, 2), 0).verdict()).isEqualTo(Verdict.DONE_BY_PREDECESSOR);
    }

    @Test
    void anAcknowledgementOfAPredecessorsBatchWhoseTasksAreNotHereRetiresNothingHereButStillGoesToTheCoordinator() {
        Parts c = parts(1, true);
        c.rules().attach(1, 100, List.of(), List.of(), 0);
        assertThat(c.rules().acknowledge(ack(3, 150L)))
                .isEqualTo(new PredecessorsBatch(List.of(150L), false, List.of(), List.of()));
    }

    static Stream<Arguments> answers() {
        // collector, the batch acknowledged (its own or another), task ids named -> decision
        return Stream.of(
                Arguments.of("on its own", true, false, new Answered(true)),
                Arguments.of("on its own", false, false, new Answered(false)),
                Arguments.of("on its own", false, true, new Answered(false)),
                Arguments.of("attached", true, false, new Consumed(List.of(100L))),
                Arguments.of("attached", true, true, new Consumed(List.of(100L))),
                Arguments.of("attached", false, false, new Answered(false)),
                Arguments.of("awaiting attach", false, false, new Answered(false)),
                Arguments.of("awaiting attach", false, true, new Waits()));
    }

    @ParameterizedTest(name = "{0}, own batch {1}, task ids named {2}: {3}")
    @MethodSource("answers")
    void anAcknowledgementIsAnsweredConsumedOrKeptByWhatTheCollectorKnows(
            String collector, boolean ownBatch, boolean namesTasks, AckDecision decision) {
        Parts c = parts(1, collector.equals("awaiting attach"));
        long batchId = 12345;
        if (!collector.equals("awaiting attach")) {
            if (collector.equals("attached")) {
                c.rules().attach(0, 0, List.of(), List.of(), 0);
            }
            c.offer(accepted(100, 0), 0);
            TrainingBatch own = collector.equals("attached") ? c.pullHandedOut("trainer", 0) : handedOut(c);
            if (ownBatch) {
                batchId = own.batchId();
            }
        }
        Ack a = namesTasks ? ack(batchId, 100L) : ack(batchId);
        assertThat(c.rules().acknowledge(a)).isEqualTo(decision);
    }

    /** Without a ledger, a batch is handed out at once. */
    private static TrainingBatch handedOut(Parts c) {
        return ((HandOut<String>) c.book()
                        .pull("trainer", "", 0, ACK_TIMEOUT.toNanos(), 0)
                        .getLast())
                .batch();
    }

    @Test
    void anOwnBatchAcknowledgedTwiceIsConsumedOnceAndThenAnsweredUnknownWithoutTaskIds() {
        Parts c = parts(1, true);
        c.rules().attach(0, 0, List.of(), List.of(), 0);
        c.offer(accepted(100, 0), 0);
        TrainingBatch b = c.pullHandedOut("trainer", 0);
        assertThat(c.rules().acknowledge(ack(b.batchId()))).isEqualTo(new Consumed(List.of(100L)));
        assertThat(c.rules().acknowledge(ack(b.batchId()))).isEqualTo(new Answered(false));
        assertThat(c.book().unacknowledged()).isZero();
    }

    @Test
    void aReattachAnnouncesAgainWhatIsHeldHereRepeatsTheHeldOutcomesAndTheHandOutsBeingWritten() {
        Parts c = parts(1, true);
        Attached first = c.rules().attach(1, 100, List.of(7L), List.of(7L), 0);
        assertThat(first).isEqualTo(new Attached(true, List.of(), List.of(), List.of(), List.of(), List.of()));
        c.offer(accepted(7, 1), 0); // held
        GroupFinished marked = accepted(100, 0);
        c.offer(marked, 0);
        TrainingBatch beingWritten = c.pullMarked("trainer", 0);
        c.offer(rejected(101, 0), 0);

        Attached again = c.rules().attach(2, 110, List.of(7L, 100L, 101L), List.of(7L), 0);

        assertThat(again.first()).isFalse();
        assertThat(again.announceAgain()).containsExactly(group(marked));
        assertThat(again.held()).containsExactly(7L);
        assertThat(again.marking()).containsExactly(beingWritten);
        assertThat(again.early()).isEmpty();
        assertThat(c.offer(rejected(101, 1), 0).verdict())
                .as("the rejection is forgotten, to be taken again")
                .isEqualTo(Verdict.TAKEN);
        assertThat(beingWritten.batchId() >>> 32)
                .as("batch ids keep the first incarnation's")
                .isEqualTo(1);
    }
}
