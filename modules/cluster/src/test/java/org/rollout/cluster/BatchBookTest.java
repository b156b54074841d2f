package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.cluster.BatchBook.DroppedStale;
import org.rollout.cluster.BatchBook.Formed;
import org.rollout.cluster.BatchBook.HandOut;
import org.rollout.cluster.BatchBook.MarkHandOut;
import org.rollout.cluster.BatchBook.Step;

/** The collector's book of accepted groups, from acceptance to acknowledgement, one rule per test. */
class BatchBookTest {
    private static final long S = 1_000_000_000L;
    private static final Duration ACK_TIMEOUT = Duration.ofSeconds(60);

    private static TrainingGroup group(long taskId, int dispatchVersion) {
        TrainingGroup g =
                ((Collector.Accepted) Payloads.oneRowAccepted(taskId, 0, 0).outcome()).group();
        return new TrainingGroup(taskId, 0, g.rows(), g.slotIndices(), g.slotRowCounts(), dispatchVersion, 0, 0, 0);
    }

    private static TrainingGroup group(long taskId) {
        return group(taskId, 0);
    }

    /** A book without a ledger (a collector on its own): groups are batched and handed out at once. */
    private static BatchBook<String> onItsOwn(int batchSize) {
        return new BatchBook<>(batchSize, ACK_TIMEOUT, Long.MAX_VALUE);
    }

    private static List<Long> taskIds(TrainingBatch b) {
        return b.groups().stream().map(TrainingGroup::taskId).toList();
    }

    @SuppressWarnings("unchecked")
    private static HandOut<String> onlyHandOut(List<Step<String>> steps) {
        List<Step<String>> handOuts =
                steps.stream().filter(s -> s instanceof HandOut).toList();
        assertThat(handOuts).hasSize(1);
        return (HandOut<String>) handOuts.get(0);
    }

    private static List<HandOut<String>> handOuts(List<Step<String>> steps) {
        return steps.stream()
                .filter(s -> s instanceof HandOut<String>)
                .map(s -> (HandOut<String>) s)
                .toList();
    }

    @ParameterizedTest(name = "batches of {0}, {1} groups accepted: {2} batch(es), {3} left")
    @CsvSource({"1, 3, 3, 0", "2, 3, 1, 1", "3, 3, 1, 0", "4, 3, 0, 3", "2, 7, 3, 1"})
    void batchesOfTheConsumerBatchSizeAreFormedInAcceptanceOrder(int size, int accepted, int batches, int left) {
        BatchBook<String> book = onItsOwn(size);
        for (int p = 0; p < 10; p++) {
            book.pull("trainer-" + p, "", 0, 100 * S, 0);
        }
        List<HandOut<String>> out = new ArrayList<>();
        for (long t = 0; t < accepted; t++) {
            out.addAll(handOuts(book.accept(t, group(t), 0)));
        }
        assertThat(out).hasSize(batches);
        for (int i = 0; i < out.size(); i++) {
            assertThat(out.get(i).puller()).isEqualTo("trainer-" + i);
            assertThat(out.get(i).batch().batchId()).isEqualTo(i);
            assertThat(taskIds(out.get(i).batch()))
                    .isEqualTo(LongStream.range((long) i * size, (long) (i + 1) * size)
                            .boxed()
                            .toList());
        }
        assertThat(book.backlog()).isEqualTo(left);
        assertThat(book.unacknowledged()).isEqualTo(batches);
    }

    @Test
    void withALedgerAGroupIsBatchedOnceItsAcceptanceIsWrittenAndABatchLeavesOnceItsHandOutIs() {
        BatchBook<String> book = onItsOwn(2);
        book.attach(3, true);
        assertThat(book.pull("t", "", 0, 100 * S, 0)).isEmpty();
        assertThat(book.accept(1, group(1), 0)).isEmpty();
        assertThat(book.accept(2, group(2), 0)).isEmpty();
        assertThat(book.backlog()).isEqualTo(2);
        assertThat(book.acceptRecorded(1, 0)).isEmpty();
        assertThat(book.acceptRecorded(1, 0)).isEmpty(); // said twice: nothing more

        List<Step<String>> steps = book.acceptRecorded(2, 0);

        long first = 3L << 32;
        assertThat(steps).hasSize(2);
        assertThat(steps.get(0)).isEqualTo(new Formed<String>(0));
        assertThat(steps.get(1)).isInstanceOf(MarkHandOut.class);
        TrainingBatch batch = ((MarkHandOut<String>) steps.get(1)).batch();
        assertThat(batch.batchId()).isEqualTo(first);
        assertThat(book.marking()).containsExactly(batch);
        assertThat(book.unacknowledged()).isEqualTo(1);
        assertThat(book.handOutRecorded(first + 1, 0)).isEmpty();
        assertThat(book.handOutRecorded(first, 0)).containsExactly(new HandOut<>(batch, "t"));
        assertThat(book.handOutRecorded(first, 0)).isEmpty();
        assertThat(book.marking()).isEmpty();
    }

    @Test
    void batchIdsStartAtTheFirstAttachedIncarnationAndAReattachKeepsCounting() {
        BatchBook<String> book = onItsOwn(1);
        book.attach(2, true);
        book.attach(5, false);
        book.accept(0, group(0), 0);
        book.acceptRecorded(0, 0);
        List<Step<String>> steps = book.pull("t", "", 0, S, 0);
        assertThat(((MarkHandOut<String>) steps.get(1)).batch().batchId()).isEqualTo(2L << 32);
    }

    @Test
    void aTrainerRanksCollectorCarriesItsRankInItsBatchIdsSoNoTwoRanksShareOne() {
        BatchBook<String> book = new BatchBook<>(1, ACK_TIMEOUT, Long.MAX_VALUE, 3);
        book.attach(2, true);
        book.accept(9, group(9), 0);
        book.acceptRecorded(9, 0);
        List<Step<String>> steps = book.pull("t", "", 0, S, 0);
        assertThat(((MarkHandOut<String>) steps.get(1)).batch().batchId()).isEqualTo((2L << 32) | (3L << 24));
        assertThatThrownBy(() -> new BatchBook<String>(1, ACK_TIMEOUT, Long.MAX_VALUE, 256))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("trainer rank 256");
    }

    @Test
    void anUnacknowledgedBatchComesAgainWithTheSameIdAndTasksAfterTheAckTimeoutAheadOfNewOnes() {
        BatchBook<String> book = onItsOwn(2);
        book.pull("a", "", 0, 100 * S, 0);
        book.accept(1, group(1), 0);
        TrainingBatch first = onlyHandOut(book.accept(2, group(2), 0)).batch();
        book.accept(3, group(3), 0);
        book.accept(4, group(4), 0);
        assertThat(book.returnDue(59 * S)).isEmpty();

        List<HandedOutBatches.Due> due = book.returnDue(60 * S);

        assertThat(due).extracting(HandedOutBatches.Due::batch).containsExactly(first);
        assertThat(book.unacknowledged()).isEqualTo(1);
        assertThat(book.heldBatches(60 * S))
                .singleElement()
                .satisfies(b -> assertThat(b.holder()).startsWith("nobody: waiting for the next pull"));
        TrainingBatch again =
                onlyHandOut(book.pull("b", "", 0, 200 * S, 61 * S)).batch();
        assertThat(again).isEqualTo(first);
        TrainingBatch next = onlyHandOut(book.pull("c", "", 0, 200 * S, 61 * S)).batch();
        assertThat(taskIds(next)).containsExactly(3L, 4L);
        assertThat(next.batchId()).isEqualTo(1);
    }

    @Test
    void anAcknowledgedBatchIsNeverHandedOutAgain() {
        BatchBook<String> book = onItsOwn(1);
        book.pull("a", "", 0, 100 * S, 0);
        TrainingBatch batch = onlyHandOut(book.accept(1, group(1), 0)).batch();

        assertThat(book.acknowledge(batch.batchId())).isEqualTo(batch);

        assertThat(book.acknowledge(batch.batchId())).isNull();
        assertThat(book.returnDue(600 * S)).isEmpty();
        assertThat(book.release(batch.batchId())).isFalse();
        assertThat(book.pull("b", "", 0, 700 * S, 600 * S)).isEmpty();
        assertThat(book.unacknowledged()).isZero();
        assertThat(book.groupsHeld()).isEmpty();
    }

    @Test
    void aBatchBackForDeliveryIsForgottenWhenItsLateAcknowledgementComes() {
        BatchBook<String> book = onItsOwn(1);
        book.pull("a", "", 0, 100 * S, 0);
        TrainingBatch batch = onlyHandOut(book.accept(1, group(1), 0)).batch();
        book.returnDue(60 * S);

        assertThat(book.acknowledge(batch.batchId())).isEqualTo(batch);

        assertThat(book.pull("b", "", 0, 200 * S, 61 * S)).isEmpty();
        assertThat(book.unacknowledged()).isZero();
    }

    @Test
    void aReleasedBatchGoesToTheNextPullAheadOfBatchesThatTimedOut() {
        BatchBook<String> book = onItsOwn(1);
        book.pull("a", "", 0, 100 * S, 0);
        TrainingBatch timedOut = onlyHandOut(book.accept(1, group(1), 0)).batch();
        book.pull("b", "", 0, 100 * S, 30 * S);
        TrainingBatch released = onlyHandOut(book.accept(2, group(2), 30 * S)).batch();
        book.returnDue(60 * S);

        assertThat(book.release(released.batchId())).isTrue();
        assertThat(book.release(released.batchId())).isFalse();

        assertThat(onlyHandOut(book.pull("c", "", 0, 200 * S, 61 * S)).batch()).isEqualTo(released);
        assertThat(onlyHandOut(book.pull("d", "", 0, 200 * S, 61 * S)).batch()).isEqualTo(timedOut);
    }

    @Test
    void aPullWaitingPastItsDeadlineIsTakenOutForAnEmptyReply() {
        BatchBook<String> book = onItsOwn(2);
        book.pull("early", "", 0, 5 * S, 0);
        book.pull("late", "", 0, 30 * S, 0);
        assertThat(book.expirePulls(5 * S - 1)).isEmpty();
        assertThat(book.expirePulls(5 * S)).containsExactly("early");
        assertThat(book.waitingPullers()).containsExactly("late");
        book.accept(1, group(1), 6 * S);
        assertThat(onlyHandOut(book.accept(2, group(2), 6 * S)).puller()).isEqualTo("late");
        assertThat(book.expirePulls(60 * S)).isEmpty();
    }

    @Test
    void aLeasedBatchGoesBackWhenItsLeaseLapsesUnrenewed() {
        BatchBook<String> book = onItsOwn(1);
        book.pull("a", "trainer-a", 10_000, 100 * S, 0);
        book.accept(1, group(1), 0);
        assertThat(book.renew("trainer-a", 0, 8 * S))
                .as("a renewal without a lease")
                .isEmpty();
        assertThat(book.renew("trainer-a", 10_000, 8 * S)).hasSize(1);
        assertThat(book.returnDue(17 * S)).isEmpty();
        assertThat(book.returnDue(18 * S)).hasSize(1);
        assertThat(book.renew("trainer-a", 10_000, 19 * S)).isEmpty();
    }

    @Test
    void aStaleBufferedGroupIsDroppedAtHandOutSayingTheBacklogLeft() {
        BatchBook<String> book = new BatchBook<>(2, ACK_TIMEOUT, 1);
        book.accept(1, group(1, 0), 0);
        book.accept(2, group(2, 2), 0);
        book.accept(3, group(3, 1), 0);
        book.accept(4, group(4, 2), 0);
        assertThat(book.advanceVersion(2)).isTrue();
        assertThat(book.advanceVersion(1)).isFalse();

        List<Step<String>> steps = book.pull("t", "", 0, S, 0);

        assertThat(steps).hasSize(3);
        DroppedStale<String> dropped = (DroppedStale<String>) steps.get(0);
        assertThat(dropped.group().taskId()).isEqualTo(1);
        assertThat(dropped.version()).isEqualTo(2);
        assertThat(dropped.backlog()).isEqualTo(3);
        assertThat(steps.get(1)).isEqualTo(new Formed<String>(1));
        TrainingBatch batch = ((HandOut<String>) steps.get(2)).batch();
        assertThat(taskIds(batch)).containsExactly(2L, 3L);
        assertThat(batch.versionAtHandout()).isEqualTo(2);
    }

    @Test
    void thePredecessorsAcknowledgedTasksAreRetiredFromTheBufferAndTheUnrecordedGroups() {
        BatchBook<String> book = onItsOwn(2);
        book.attach(1, true);
        book.accept(1, group(1), 0);
        book.accept(2, group(2), 0);
        book.accept(3, group(3), 0);
        book.acceptRecorded(1, 0);
        book.acceptRecorded(3, 0);

        assertThat(book.retire(Set.of(1L, 2L))).isTrue();
        assertThat(book.retire(Set.of(1L, 2L))).isFalse();

        assertThat(book.backlog()).isEqualTo(1);
        assertThat(book.groupsHeld()).containsOnlyKeys(3L);
    }

    @Test
    void everyGroupNotYetAcknowledgedIsHeldWhereverItIsAndTheBatchesHoldingATaskAreNamed() {
        BatchBook<String> book = onItsOwn(1);
        book.pull("a", "", 0, 100 * S, 0);
        TrainingBatch out = onlyHandOut(book.accept(1, group(1), 0)).batch();
        book.pull("b", "", 0, 100 * S, 0);
        onlyHandOut(book.accept(2, group(2), 0));
        book.returnDue(60 * S); // both go back
        onlyHandOut(book.pull("c", "", 0, 100 * S, 60 * S));
        book.attach(0, false);
        book.accept(3, group(3), 60 * S);
        book.accept(4, group(4), 60 * S);
        book.acceptRecorded(4, 60 * S);

        assertThat(book.groupsHeld()).containsOnlyKeys(1L, 2L, 3L, 4L);
        assertThat(book.handedOutWithAnyOf(Set.of(1L, 9L))).containsExactly(out.batchId());
        assertThat(book.handedOutWithAnyOf(Set.of(2L))).isEmpty();
        assertThat(book.heldBatches(60 * S)).hasSize(2);
    }
}
