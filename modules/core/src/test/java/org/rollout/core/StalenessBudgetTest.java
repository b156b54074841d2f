package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.rollout.api.InvalidConfigException;
import org.rollout.testing.Gen;
import org.rollout.testing.Property;

class StalenessBudgetTest {

    /** C = 8, Bc = 4, η = 2: staleness limit at v = 0 is (2 + 0 + 1)·4 = 12. */
    private static StalenessBudget budget() {
        return new StalenessBudget(8, 4, 2);
    }

    private static void enqueueAndAdmit(StalenessBudget b, int n) {
        for (int k = 0; k < n; k++) {
            b.onEnqueue();
            b.onAdmit();
        }
    }

    // ---- transitions ----

    @Test
    void enqueueIncrementsEnqueuedOnly() {
        StalenessBudget b = budget();
        b.onEnqueue();
        assertThat(b.snapshot())
                .extracting("enqueued", "running", "accepted", "rejected")
                .containsExactly(1L, 0L, 0L, 0L);
    }

    @Test
    void admitMovesOneFromEnqueuedToRunning() {
        StalenessBudget b = budget();
        b.onEnqueue();
        b.onEnqueue();
        b.onAdmit();
        assertThat(b.snapshot())
                .extracting("enqueued", "running", "accepted", "rejected")
                .containsExactly(1L, 1L, 0L, 0L);
    }

    @Test
    void acceptMovesOneFromRunningToAccepted() {
        StalenessBudget b = budget();
        enqueueAndAdmit(b, 2);
        b.onAccept();
        assertThat(b.snapshot())
                .extracting("enqueued", "running", "accepted", "rejected")
                .containsExactly(0L, 1L, 1L, 0L);
    }

    @Test
    void rejectMovesOneFromRunningToRejected() {
        StalenessBudget b = budget();
        enqueueAndAdmit(b, 2);
        b.onReject();
        assertThat(b.snapshot())
                .extracting("enqueued", "running", "accepted", "rejected")
                .containsExactly(0L, 1L, 0L, 1L);
    }

    @Test
    void aHeldTaskLeavesTheConcurrencyCapButKeepsItsPlaceInTheStalenessBound() {
        // C = 2, Bc = 4, η = 0: the staleness limit at v = 0 is 4.
        StalenessBudget b = new StalenessBudget(2, 4, 0);
        enqueueAndAdmit(b, 2);
        assertThat(b.capacity()).as("C − running").isZero();
        b.onHold();
        b.onHold();
        assertThat(b.snapshot())
                .extracting("running", "held", "accepted", "capacity")
                .containsExactly(0L, 2L, 0L, 2L);
        enqueueAndAdmit(b, 2);
        assertThat(b.capacity()).as("4 − (running + held)").isZero();
        b.onHeldAccept();
        b.onHeldReject();
        assertThat(b.snapshot())
                .extracting("running", "held", "accepted", "rejected", "capacity")
                .containsExactly(2L, 0L, 1L, 1L, 0L);
    }

    @Test
    void heldTasksCountAsRunningAgainWhenTheCollectorThatHeldThemIsLost() {
        StalenessBudget b = budget();
        enqueueAndAdmit(b, 3);
        b.onHold();
        b.onHold();
        b.releaseHeld();
        assertThat(b.snapshot()).extracting("running", "held").containsExactly(3L, 0L);
    }

    @Test
    void holdingWithNothingRunningOrAcceptingWithNothingHeldNamesCounterAndTransition() {
        StalenessBudget b = budget();
        assertThatThrownBy(b::onHold).hasMessageContaining("running").hasMessageContaining("hold");
        assertThatThrownBy(b::onHeldAccept).hasMessageContaining("held").hasMessageContaining("held accept");
        assertThatThrownBy(b::onHeldReject).hasMessageContaining("held").hasMessageContaining("held reject");
    }

    @Test
    void dequeueWithoutAdmitWithdrawsAnEnqueuedTask() {
        StalenessBudget b = budget();
        b.onEnqueue();
        b.onDequeueWithoutAdmit();
        assertThat(b.snapshot())
                .extracting("enqueued", "running", "accepted", "rejected")
                .containsExactly(0L, 0L, 0L, 0L);
    }

    @Test
    void admitWithNothingEnqueuedNamesCounterAndTransition() {
        StalenessBudget b = budget();
        assertThatThrownBy(b::onAdmit)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("enqueued would become negative on admit")
                .hasMessageContaining("enqueued=0");
    }

    @Test
    void dequeueWithNothingEnqueuedNamesCounterAndTransition() {
        assertThatThrownBy(budget()::onDequeueWithoutAdmit)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("enqueued would become negative on dequeue without admit");
    }

    @Test
    void acceptWithNothingRunningNamesCounterAndTransition() {
        StalenessBudget b = budget();
        b.onEnqueue();
        assertThatThrownBy(b::onAccept)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("running would become negative on accept")
                .hasMessageContaining("running=0");
        assertThat(b.enqueued()).isEqualTo(1);
        assertThat(b.accepted()).isZero();
    }

    @Test
    void rejectWithNothingRunningNamesCounterAndTransition() {
        assertThatThrownBy(budget()::onReject)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("running would become negative on reject");
    }

    // ---- the formula ----

    @Test
    void freshBudgetCapacityIsTheConcurrencyCapWhenThatIsSmaller() {
        // min(8 − 0, (2 + 0 + 1)·4 − 0) = min(8, 12) = 8
        assertThat(budget().capacity()).isEqualTo(8);
    }

    @Test
    void capacityIsTheStalenessLimitWhenThatIsSmaller() {
        // C = 100, Bc = 4, η = 1, v = 0: min(100, 8) = 8
        assertThat(new StalenessBudget(100, 4, 1).capacity()).isEqualTo(8);
    }

    @Test
    void capacityAtHandComputedPoints() {
        StalenessBudget b = new StalenessBudget(10, 3, 1);
        // v=0: min(10 − 0, (1+0+1)·3 − 0) = 6
        assertThat(b.capacity()).isEqualTo(6);
        enqueueAndAdmit(b, 4);
        // running=4: min(6, 6 − 4) = 2
        assertThat(b.capacity()).isEqualTo(2);
        b.onAccept();
        b.onAccept();
        // running=2, accepted=2: min(8, 6 − 4) = 2
        assertThat(b.capacity()).isEqualTo(2);
        b.onVersion(3);
        // v=3: min(8, (1+3+1)·3 − 4) = min(8, 11) = 8
        assertThat(b.capacity()).isEqualTo(8);
    }

    @Test
    void capacityMayBeNegative() {
        StalenessBudget b = new StalenessBudget(2, 1, 0);
        enqueueAndAdmit(b, 2);
        b.onAccept();
        b.onAccept();
        b.onEnqueue();
        b.onAdmit(); // onAdmit does not check capacity; the caller does
        // min(2 − 1, (0+0+1)·1 − 3) = −2
        assertThat(b.capacity()).isEqualTo(-2);
        assertThat(b.canAdmit()).isFalse();
    }

    @Test
    void capacityAfterEachTransition() {
        StalenessBudget b = new StalenessBudget(8, 4, 2); // limit 12 at v=0
        b.onEnqueue();
        assertThat(b.capacity()).as("enqueued tasks do not count").isEqualTo(8);
        b.onAdmit();
        assertThat(b.capacity()).as("running counts against both caps").isEqualTo(7);
        b.onAccept();
        assertThat(b.capacity()).as("accepted counts against staleness only").isEqualTo(8);
        b.onEnqueue();
        b.onAdmit();
        b.onReject();
        assertThat(b.capacity()).as("rejected counts against nothing").isEqualTo(8);
        b.onEnqueue();
        b.onDequeueWithoutAdmit();
        assertThat(b.capacity()).isEqualTo(8);
    }

    @Test
    void rejectionsFreeStalenessBudget() {
        StalenessBudget b = new StalenessBudget(100, 2, 0); // limit 2 at v=0
        enqueueAndAdmit(b, 2);
        assertThat(b.capacity()).isZero();
        b.onReject();
        assertThat(b.capacity()).isEqualTo(1);
        b.onReject();
        assertThat(b.capacity()).isEqualTo(2);
    }

    @Test
    void acceptedIsNeverDecrementedSoTheBudgetStaysUsedUntilTheVersionMoves() {
        StalenessBudget b = new StalenessBudget(100, 2, 0);
        enqueueAndAdmit(b, 2);
        b.onAccept();
        b.onAccept();
        // a trainer consumes the batch: nothing in the budget changes
        assertThat(b.accepted()).isEqualTo(2);
        assertThat(b.capacity()).isZero();
        b.onVersion(1);
        assertThat(b.accepted()).isEqualTo(2);
        assertThat(b.capacity()).isEqualTo(2);
    }

    @Test
    void theBudgetGrowsByConsumerBatchSizePerVersion() {
        StalenessBudget b = new StalenessBudget(1_000, 4, 1);
        long previous = b.capacity();
        for (int v = 1; v <= 5; v++) {
            b.onVersion(v);
            assertThat(b.capacity() - previous).as("version %d", v).isEqualTo(4);
            previous = b.capacity();
        }
    }

    @Test
    void pendingLimitIsEtaPlusOneTimesBatch() {
        assertThat(new StalenessBudget(8, 4, 2).pendingLimit()).isEqualTo(12);
        assertThat(new StalenessBudget(8, 4, 0).pendingLimit()).isEqualTo(4);
    }

    @Test
    void canAdmitIsCapacityAboveZero() {
        StalenessBudget b = new StalenessBudget(1, 1, 0);
        assertThat(b.canAdmit()).isTrue();
        enqueueAndAdmit(b, 1);
        assertThat(b.canAdmit()).isFalse();
    }

    @Test
    void tryAdmitAdmitsOnlyWithCapacity() {
        StalenessBudget b = new StalenessBudget(1, 1, 0);
        b.onEnqueue();
        b.onEnqueue();
        assertThat(b.tryAdmit()).isTrue();
        assertThat(b.tryAdmit()).isFalse();
        assertThat(b.snapshot()).extracting("enqueued", "running").containsExactly(1L, 1L);
    }

    @Test
    void concurrentTryAdmitNeverExceedsTheConcurrencyCap() throws Exception {
        StalenessBudget b = new StalenessBudget(5, 1_000, 0);
        for (int k = 0; k < 200; k++) {
            b.onEnqueue();
        }
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<Integer>> admitted = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                admitted.add(pool.submit(() -> {
                    start.await(10, TimeUnit.SECONDS);
                    int n = 0;
                    for (int k = 0; k < 25; k++) {
                        n += b.tryAdmit() ? 1 : 0;
                    }
                    return n;
                }));
            }
            start.countDown();
            int total = 0;
            for (Future<Integer> f : admitted) {
                total += f.get(30, TimeUnit.SECONDS);
            }
            assertThat(total).isEqualTo(5);
            assertThat(b.running()).isEqualTo(5);
        } finally {
            pool.shutdownNow();
        }
    }

    // ---- version ----

    @Test
    void versionGoingBackwardsNamesBothVersions() {
        StalenessBudget b = budget();
        b.onVersion(5);
        assertThatThrownBy(() -> b.onVersion(4))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("must not go backwards on onVersion")
                .hasMessageContaining("current version 5")
                .hasMessageContaining("new version 4");
        assertThat(b.version()).isEqualTo(5);
    }

    @Test
    void sameVersionAgainIsANoOp() {
        StalenessBudget b = budget();
        b.onVersion(3);
        b.onVersion(3);
        assertThat(b.version()).isEqualTo(3);
    }

    @Test
    void recoveryBelowTheCurrentVersionNamesBothVersions() {
        StalenessBudget b = budget();
        b.onVersion(7);
        assertThatThrownBy(() -> b.onVersionRecovered(2))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("onVersionRecovered")
                .hasMessageContaining("current version 7")
                .hasMessageContaining("new version 2");
    }

    @Test
    void withoutRecoveryCapacityBalloonsAfterACheckpointRestart() {
        // AReaL #1388: a restarted process starts with accepted = 0 but the trainer is at V.
        long eta = 2;
        int bc = 4;
        int v = 50;
        StalenessBudget b = new StalenessBudget(1_000_000, bc, eta);
        b.onVersion(v);
        assertThat(b.capacity()).isEqualTo((eta + v + 1) * bc); // 212 groups, far beyond (η+1)·Bc
    }

    @Test
    void recoveryRestoresTheBoundToEtaPlusOneBatchesMinusRunning() {
        long eta = 2;
        int bc = 4;
        int v = 50;
        StalenessBudget b = new StalenessBudget(1_000_000, bc, eta);
        enqueueAndAdmit(b, 3);
        b.onVersionRecovered(v);
        assertThat(b.accepted()).isEqualTo((long) v * bc);
        assertThat(b.version()).isEqualTo(v);
        assertThat(b.capacity()).isEqualTo((eta + 1) * bc - 3);
        assertThat(b.running()).isEqualTo(3);
    }

    // ---- overflow ----

    @Test
    void evalEtaDoesNotOverflow() {
        StalenessBudget b = new StalenessBudget(64, Integer.MAX_VALUE, StalenessBudget.EVAL_MAX_HEAD_OFFPOLICYNESS);
        b.onVersion(Integer.MAX_VALUE);
        // (1e12 + 2^31) · (2^31 − 1) ≈ 2.1e21 > Long.MAX_VALUE: saturates, concurrency binds
        assertThat(b.capacity()).isEqualTo(64);
        assertThat(b.pendingLimit()).isEqualTo(Long.MAX_VALUE);
        assertThat(b.canAdmit()).isTrue();
    }

    @Test
    void maximalEtaSaturatesInsteadOfWrapping() {
        StalenessBudget b = new StalenessBudget(1, 1, Long.MAX_VALUE);
        b.onVersion(Integer.MAX_VALUE);
        assertThat(b.pendingLimit()).isEqualTo(Long.MAX_VALUE);
        assertThat(b.capacity()).isEqualTo(1);
    }

    @Test
    void evalBudgetWithTypicalValuesIsBoundedByConcurrencyOnly() {
        StalenessBudget b = new StalenessBudget(16, 32, StalenessBudget.EVAL_MAX_HEAD_OFFPOLICYNESS);
        enqueueAndAdmit(b, 10);
        assertThat(b.capacity()).isEqualTo(6);
    }

    /** Concurrency {@code c}, batch size {@code bc}, offpolicyness {@code eta}, version {@code v}, counts. */
    private record BudgetState(int c, int bc, long eta, int v, int admitted, int accepted) {}

    @Test
    void capacityNeverExceedsEitherCap() {
        Gen<BudgetState> states = random -> new BudgetState(
                Gen.ints(1, 1_000).generate(random),
                Gen.ints(1, 1_000).generate(random),
                Gen.longs(0, 1_000_000_000_000L).generate(random),
                Gen.ints(0, 100_000).generate(random),
                Gen.ints(0, 50).generate(random),
                Gen.ints(0, 50).generate(random));
        Property.forAll(
                "capacityNeverExceedsEitherCap",
                1_000,
                states,
                state -> capacityIsTheSmallerCap(
                        state.c(), state.bc(), state.eta(), state.v(), state.admitted(), state.accepted()));
    }

    private static void capacityIsTheSmallerCap(int c, int bc, long eta, int v, int admitted, int accepted) {
        StalenessBudget b = new StalenessBudget(c, bc, eta);
        b.onVersion(v);
        enqueueAndAdmit(b, admitted + accepted);
        for (int k = 0; k < accepted; k++) {
            b.onAccept();
        }
        long expected = Math.min(
                (long) c - admitted, (eta + v + 1) * bc - ((long) accepted + admitted)); // no overflow in range
        assertThat(b.capacity()).isEqualTo(expected);
    }

    // ---- local values ----

    @Test
    void localDividesByDataParallelSize() {
        StalenessBudget b = StalenessBudget.local(64, 32, 2, 4);
        assertThat(b.maxConcurrentRollouts()).isEqualTo(16);
        assertThat(b.consumerBatchSize()).isEqualTo(8);
        assertThat(b.maxHeadOffpolicyness()).isEqualTo(2);
    }

    @Test
    void localFallsBackToConsumerBatchSizeForConcurrency() {
        StalenessBudget b = StalenessBudget.local(null, 32, 0, 4);
        assertThat(b.maxConcurrentRollouts()).isEqualTo(8);
        assertThat(b.consumerBatchSize()).isEqualTo(8);
    }

    @Test
    void localValuesAreAtLeastOne() {
        StalenessBudget b = StalenessBudget.local(3, 2, 1, 8);
        assertThat(b.maxConcurrentRollouts()).isEqualTo(1);
        assertThat(b.consumerBatchSize()).isEqualTo(1);
    }

    @Test
    void localRoundsDown() {
        StalenessBudget b = StalenessBudget.local(10, 7, 1, 3);
        assertThat(b.maxConcurrentRollouts()).isEqualTo(3);
        assertThat(b.consumerBatchSize()).isEqualTo(2);
    }

    // ---- configuration errors ----

    @Test
    void rejectsNonPositiveMaxConcurrentRollouts() {
        assertThatThrownBy(() -> new StalenessBudget(0, 4, 2))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'max_concurrent_rollouts': 0 (allowed: an integer >= 1)");
    }

    @Test
    void rejectsNonPositiveConsumerBatchSize() {
        assertThatThrownBy(() -> new StalenessBudget(4, -1, 2))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'consumer_batch_size': -1 (allowed: an integer >= 1)");
    }

    @Test
    void rejectsNegativeMaxHeadOffpolicyness() {
        assertThatThrownBy(() -> new StalenessBudget(4, 4, -1))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'max_head_offpolicyness': -1 (allowed: an integer >= 0)");
    }

    @Test
    void localRejectsNonPositiveDataParallelSize() {
        assertThatThrownBy(() -> StalenessBudget.local(4, 4, 0, 0))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'train_data_parallel_size': 0 (allowed: an integer >= 1)");
    }

    @Test
    void localRejectsNonPositiveMaxConcurrentRolloutsBeforeDividing() {
        assertThatThrownBy(() -> StalenessBudget.local(0, 4, 0, 1))
                .isInstanceOf(InvalidConfigException.class)
                .extracting(e -> ((InvalidConfigException) e).key())
                .isEqualTo("max_concurrent_rollouts");
    }

    @Test
    void localRejectsNonPositiveConsumerBatchSize() {
        assertThatThrownBy(() -> StalenessBudget.local(null, 0, 0, 1))
                .isInstanceOf(InvalidConfigException.class)
                .extracting(e -> ((InvalidConfigException) e).key())
                .isEqualTo("consumer_batch_size");
    }

    // ---- snapshot ----

    @Test
    void snapshotCarriesEveryCounterAndTheConfiguration() {
        StalenessBudget b = new StalenessBudget(8, 4, 2);
        b.onVersion(1);
        b.onEnqueue();
        enqueueAndAdmit(b, 3);
        b.onAccept();
        b.onReject();
        StalenessBudget.Snapshot s = b.snapshot();
        assertThat(s)
                .isEqualTo(
                        new StalenessBudget.Snapshot(1, 1, 1, 1, 1, 8, 4, 2, Math.min(8 - 1, (2 + 1 + 1) * 4 - 2), 0));
        assertThat(s.statusLine())
                .isEqualTo("v=1 enqueued=1 running=1/8 accepted=1 rejected=1 capacity=7 (eta=2, bc=4)");
    }

    @Test
    void discardingAnAcceptedGroupFreesItsPositionAndCountsItRejected() {
        StalenessBudget b = new StalenessBudget(4, 2, 0);
        b.onEnqueue();
        b.onAdmit();
        b.onAccept();
        b.onEnqueue();
        b.onAdmit();
        b.onAccept();
        assertThat(b.capacity()).isZero();
        b.onAcceptedDiscarded();
        assertThat(b.accepted()).isEqualTo(1);
        assertThat(b.rejected()).isEqualTo(1);
        assertThat(b.capacity()).isEqualTo(1);
    }

    @Test
    void discardingWithNothingAcceptedIsAnErrorNamingTheCounter() {
        StalenessBudget b = new StalenessBudget(4, 2, 0);
        org.assertj.core.api.Assertions.assertThatThrownBy(b::onAcceptedDiscarded)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("accepted would become negative on discard");
    }
}
