package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.cluster.TestRollout.await;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.rollout.api.EpisodeResult;
import org.rollout.api.Float32Tensor;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.core.InvariantChecker;
import org.rollout.core.TrajectoryRows;
import org.rollout.trainer.RolloutStatus;

/**
 * A trainer with several data-parallel ranks, each pulling its own batches from its own
 * coordinator and collector ({@link LocalRollout#start(LocalRollout.Spec, com.typesafe.config.Config,
 * Supervision.Wrapper, int)}): each rank gets {@code consumer_batch_size / ranks} groups a batch of
 * its own tasks, its staleness budget is AReaL's with that batch, and every task reaches exactly one
 * rank exactly once, also when one rank's collector or coordinator fails.
 */
class TrainerRanksTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);

    @Test
    void eachRankPullsBatchesOfItsShareMadeOfItsOwnTasksAndEveryTaskArrivesOnce() throws Exception {
        TestRollout t = new TestRollout();
        t.consumerBatchSize = 4;
        t.maxConcurrent = 8;
        try (LocalRollout rollout = LocalRollout.start(t.spec(), t.pekko, Supervision.Wrapper.IDENTITY, 2)) {
            assertThat(rollout.ranks()).isEqualTo(2);
            InvariantChecker checker = new InvariantChecker(t.eta, false);
            Set<Long> batchIds = new HashSet<>();
            for (int step = 0; step < 3; step++) {
                for (int rank = 0; rank < 2; rank++) {
                    LocalRolloutClient client = rollout.client(rank);
                    TrainingBatch batch = client.nextBatch(DEADLINE).orElseThrow();
                    checker.onBatch(batch);
                    assertThat(batchIds.add(batch.batchId())).isTrue();
                    assertThat((batch.batchId() >>> 24) & 0xff)
                            .as("batch %d names its rank", batch.batchId())
                            .isEqualTo(rank);
                    assertThat(batch.groups()).hasSize(2);
                    for (TrainingGroup g : batch.groups()) {
                        assertThat(Math.floorMod(g.taskId(), 2L))
                                .as("task %d of rank %d's batch", g.taskId(), rank)
                                .isEqualTo((long) rank);
                        assertThat(g.headVersion()).isEqualTo(step);
                    }
                    client.acknowledge(batch);
                }
                rollout.client().publishWeights(step + 1, Path.of("w" + (step + 1)));
                checker.onVersion(step + 1);
            }
            assertThat(checker.violations()).isEmpty();
            assertThat(checker.tasksDelivered()).isEqualTo(12);
            assertThat(rollout.client(1).status().version()).isEqualTo(3);
        }
    }

    @Test
    void eachRankKeepsTheStalenessBoundOfItsOwnBatchAsAReaLsRanksDo() throws Exception {
        TestRollout t = new TestRollout();
        t.consumerBatchSize = 4;
        t.maxConcurrent = 16;
        t.eta = 0;
        try (LocalRollout rollout = LocalRollout.start(t.spec(), t.pekko, Supervision.Wrapper.IDENTITY, 2)) {
            LocalRolloutClient rank0 = rollout.client(0);
            LocalRolloutClient rank1 = rollout.client(1);
            for (LocalRolloutClient c : List.of(rank0, rank1)) {
                await(
                        "a rank's two accepted groups",
                        DEADLINE,
                        () -> status(c).accepted() == 2 && status(c).running() == 0);
            }
            // (η + v + 1) · B / ranks = 2 a rank, on every observation: 4 for the run, as with one rank.
            for (int i = 0; i < 20; i++) {
                for (LocalRolloutClient c : List.of(rank0, rank1)) {
                    RolloutStatus s = status(c);
                    assertThat(s.accepted() + s.running()).isLessThanOrEqualTo(2);
                    assertThat(s.capacity()).isLessThanOrEqualTo(0);
                }
            }
            rank0.acknowledge(rank0.nextBatch(DEADLINE).orElseThrow());
            rank1.acknowledge(rank1.nextBatch(DEADLINE).orElseThrow());
            rank0.publishWeights(1, Path.of("w1"));
            for (LocalRolloutClient c : List.of(rank0, rank1)) {
                await(
                        "four accepted groups in each rank after the publish",
                        DEADLINE,
                        () -> status(c).accepted() == 4);
                assertThat(status(c).accepted() + status(c).running()).isLessThanOrEqualTo(4);
            }
        }
    }

    /**
     * One budget for the whole run could stall here: with η = 0 and task 1 rejected, the four
     * places of version 0 would hold three of rank 0's groups and one of rank 1's, and rank 1 could
     * never fill its batch. With a budget per rank, rank 1 admits another task in its place.
     */
    @Test
    void aRejectionInOneRankIsReplacedInThatRankAndNeitherRankStalls() throws Exception {
        TestRollout t = new TestRollout();
        t.consumerBatchSize = 4;
        t.maxConcurrent = 16;
        t.eta = 0;
        t.workflow = (engine, data) -> {
            ModelResponse r = engine.generate(
                    ModelRequest.of(new int[] {1, 2}, t.gconfig().withNSamples(1)));
            TensorDict row = TrajectoryRows.singleTurn(r, 1.0);
            if (data.get("prompt").equals("p1")) {
                row = row.with(TensorDict.REWARDS, Float32Tensor.vector(Float.NaN));
            }
            return EpisodeResult.trajectory(row);
        };
        try (LocalRollout rollout = LocalRollout.start(t.spec(), t.pekko, Supervision.Wrapper.IDENTITY, 2)) {
            TrainingBatch b1 = rollout.client(1).nextBatch(DEADLINE).orElseThrow();
            TrainingBatch b0 = rollout.client(0).nextBatch(DEADLINE).orElseThrow();
            assertThat(b0.groups()).extracting(TrainingGroup::taskId).containsExactlyInAnyOrder(0L, 2L);
            assertThat(b1.groups()).extracting(TrainingGroup::taskId).containsExactlyInAnyOrder(3L, 5L);
            assertThat(status(rollout.client(1)).rejectedByReason()).containsEntry("contract", 1L);
        }
    }

    @Test
    void whenOneRanksCollectorFailsTheRunnerRefillsItAndEveryTaskStillArrivesOnce() throws Exception {
        exactlyOnceAcrossRanksDespite(new SupervisionTest.ThrowOnce("collector-1", Collector.GroupFinished.class, 3));
    }

    @Test
    void whenOneRanksCoordinatorFailsItRecoversFromItsOwnLedgerAndEveryTaskStillArrivesOnce() throws Exception {
        exactlyOnceAcrossRanksDespite(
                new SupervisionTest.ThrowOnce("coordinator-1", RolloutCoordinator.TaskFinished.class, 3));
    }

    @Test
    void ranksThatDoNotDivideTheBatchAreRefusedNamingTheSetting() {
        TestRollout t = new TestRollout();
        t.consumerBatchSize = 6;
        assertThatThrownBy(() -> LocalRollout.start(t.spec(), t.pekko, Supervision.Wrapper.IDENTITY, 4))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("consumer_batch_size 6")
                .hasMessageContaining("4 trainer ranks");
        assertThatThrownBy(() -> LocalRollout.start(t.spec(), t.pekko, Supervision.Wrapper.IDENTITY, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("trainer ranks: 0");
    }

    /** Runs four steps of two ranks with {@code fault}; every task arrives once, in its rank. */
    private static void exactlyOnceAcrossRanksDespite(SupervisionTest.ThrowOnce fault) throws Exception {
        TestRollout t = new TestRollout();
        t.consumerBatchSize = 4;
        t.maxConcurrent = 8;
        t.eta = 1;
        try (LocalRollout rollout = LocalRollout.start(t.spec(), t.pekko, fault, 2)) {
            InvariantChecker checker = new InvariantChecker(t.eta, false);
            Set<Long> tasks = new HashSet<>();
            List<Long> perRank = new ArrayList<>(List.of(0L, 0L));
            for (int step = 0; step < 4; step++) {
                for (int rank = 0; rank < 2; rank++) {
                    LocalRolloutClient client = rollout.client(rank);
                    // A pull waiting in a collector that restarts is answered empty: a trainer pulls again.
                    TrainingBatch batch = pull(client).or(() -> pull(client)).orElseThrow();
                    checker.onBatch(batch);
                    for (TrainingGroup g : batch.groups()) {
                        assertThat(tasks.add(g.taskId()))
                                .as("task %d delivered once", g.taskId())
                                .isTrue();
                        assertThat(Math.floorMod(g.taskId(), 2L)).isEqualTo((long) rank);
                    }
                    perRank.set(rank, perRank.get(rank) + batch.groups().size());
                    client.acknowledge(batch);
                }
                rollout.client().publishWeights(step + 1, Path.of("w" + (step + 1)));
                checker.onVersion(step + 1);
            }
            assertThat(fault.fired()).as("the fault was injected").isTrue();
            assertThat(checker.violations()).isEmpty();
            assertThat(perRank).containsExactly(8L, 8L);
        }
    }

    private static Optional<TrainingBatch> pull(LocalRolloutClient client) {
        try {
            return client.nextBatch(DEADLINE);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    private static RolloutStatus status(LocalRolloutClient c) {
        try {
            return c.status();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }
}
