package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.rollout.api.BoolTensor;
import org.rollout.api.EpisodeResult;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Interaction;
import org.rollout.api.TensorDict;
import org.rollout.api.WorkflowContractException;

class TrajectoryFormatCheckerTest {

    private static TensorDict row(int b, int l) {
        return TensorDict.builder()
                .put("input_ids", Int32Tensor.filled(1, b, l))
                .put("attention_mask", BoolTensor.filled(true, b, l))
                .put("loss_mask", Int32Tensor.filled(1, b, l))
                .put("rewards", Float32Tensor.filled(0f, b))
                .build();
    }

    private static EpisodeResult.Trajectory traj(TensorDict d) {
        return EpisodeResult.trajectory(d);
    }

    @Test
    void rejectedResultsAreFine() {
        assertThat(new TrajectoryFormatChecker().check(1, 0, EpisodeResult.rejected("returned_none")))
                .isEmpty();
    }

    @Test
    void nonEmptyInteractionsAreFineAndTeachNoKeys() {
        Map<String, Interaction> byId = new LinkedHashMap<>();
        byId.put("c1", Interaction.builder("c1").reward(1.0).build());
        TrajectoryFormatChecker checker = new TrajectoryFormatChecker();
        assertThat(checker.check(1, 0, EpisodeResult.interactions(byId))).isEmpty();
        assertThat(checker.expectedKeys()).isEmpty();
    }

    @Test
    void emptyInteractionsAreAnErrorNamingTaskAndSlot() {
        assertThatThrownBy(() -> new TrajectoryFormatChecker().check(4, 2, EpisodeResult.interactions(Map.of())))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("task 4 slot 2: an interaction result must hold at least one interaction, got none");
    }

    @Test
    void aTrajectoryWithNoKeysIsAnError() {
        assertThatThrownBy(() -> new TrajectoryFormatChecker().check(4, 1, traj(TensorDict.empty())))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("task 4 slot 1: trajectory has no keys; it needs at least 'input_ids', 'attention_mask'");
    }

    @Test
    void aTrajectoryWithoutAttentionMaskIsAnErrorNamingTheKey() {
        TensorDict d = row(1, 3).without("attention_mask");
        assertThatThrownBy(() -> new TrajectoryFormatChecker().check(4, 0, traj(d)))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("task 4 slot 0: trajectory is missing required key(s) 'attention_mask' (keys: [input_ids,"
                        + " loss_mask, rewards])");
    }

    @Test
    void aTrajectoryWithoutBothRequiredKeysNamesBoth() {
        TensorDict d =
                TensorDict.builder().put("rewards", Float32Tensor.vector(1f)).build();
        assertThatThrownBy(() -> new TrajectoryFormatChecker().check(4, 0, traj(d)))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("task 4 slot 0: trajectory is missing required key(s) 'input_ids', 'attention_mask' (keys:"
                        + " [rewards])");
    }

    @Test
    void inputIdsMustBeTwoDimensional() {
        TensorDict d = row(1, 3).with("input_ids", Int32Tensor.vector(1, 2, 3));
        assertThatThrownBy(() -> new TrajectoryFormatChecker().check(9, 3, traj(d)))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("task 9 slot 3: tensor 'input_ids' must be 2-D [batch_size, max_seqlen], got 1-D int32[3]");
    }

    @Test
    void aWellFormedTrajectoryHasNoWarnings() {
        assertThat(new TrajectoryFormatChecker().check(1, 0, traj(row(2, 5)))).isEmpty();
    }

    @Test
    void aTensorWithAnotherBatchSizeIsOnlyAWarning() {
        TensorDict d = row(1, 3).with("rewards", Float32Tensor.vector(1f, 2f));
        assertThat(new TrajectoryFormatChecker().check(5, 1, traj(d)))
                .containsExactly("task 5 slot 1: dim 0 of tensor 'rewards' is 2, not the batch size of input_ids (1)");
    }

    @Test
    void aTensorWithAnotherSeqlenIsOnlyAWarning() {
        TensorDict d = row(1, 3).with("loss_mask", Int32Tensor.filled(1, 1, 4));
        assertThat(new TrajectoryFormatChecker().check(5, 1, traj(d)))
                .containsExactly(
                        "task 5 slot 1: dim 1 of tensor 'loss_mask' is 4, not the max seqlen of input_ids (3)");
    }

    @Test
    void scalarTensorsAreNotWarnedAbout() {
        TensorDict d = row(1, 3).with("rollout_reward", Float32Tensor.scalar(1f));
        assertThat(new TrajectoryFormatChecker().check(5, 1, traj(d))).isEmpty();
    }

    @Test
    void theFirstTensorResultSetsTheExpectedKeys() {
        TrajectoryFormatChecker checker = new TrajectoryFormatChecker();
        checker.check(1, 0, traj(row(1, 3)));
        assertThat(checker.expectedKeys()).contains(row(1, 3).keys());
    }

    @Test
    void aLaterResultMissingAnExpectedKeyIsAnErrorNamingIt() {
        TrajectoryFormatChecker checker = new TrajectoryFormatChecker();
        checker.check(1, 0, traj(row(1, 3)));
        TensorDict d = row(1, 3).without("loss_mask");
        assertThatThrownBy(() -> checker.check(2, 5, traj(d)))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("task 2 slot 5: trajectory is missing key(s) 'loss_mask' that the first checked trajectory"
                        + " had (expected: [input_ids, attention_mask, loss_mask, rewards], got: [input_ids,"
                        + " attention_mask, rewards])");
    }

    @Test
    void aLaterResultWithExtraKeysIsFine() {
        TrajectoryFormatChecker checker = new TrajectoryFormatChecker();
        checker.check(1, 0, traj(row(1, 3)));
        TensorDict d = row(1, 3).with("versions", Int32Tensor.filled(-1, 1, 3));
        assertThat(checker.check(2, 0, traj(d))).isEmpty();
        assertThat(checker.expectedKeys()).contains(row(1, 3).keys());
    }

    @Test
    void aFailingResultDoesNotTeachItsKeys() {
        TrajectoryFormatChecker checker = new TrajectoryFormatChecker();
        TensorDict bad = row(1, 3).with("input_ids", Int32Tensor.vector(1, 2, 3));
        assertThatThrownBy(() -> checker.check(1, 0, traj(bad))).isInstanceOf(WorkflowContractException.class);
        assertThat(checker.expectedKeys()).isEmpty();
    }

    @Test
    void concurrentFirstResultsLearnExactlyOneKeySetAndCheckTheOthersAgainstIt() throws Exception {
        // Half the results carry 'versions', half do not. Whichever wins the race sets the keys; if the
        // winner had 'versions', every result without it must fail, and no result may escape the check.
        for (int round = 0; round < 20; round++) {
            TrajectoryFormatChecker checker = new TrajectoryFormatChecker();
            TensorDict plain = row(1, 3);
            TensorDict withVersions = plain.with("versions", Int32Tensor.filled(-1, 1, 3));
            int threads = 8;
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                CountDownLatch start = new CountDownLatch(1);
                List<Future<Boolean>> passed = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    TensorDict d = t % 2 == 0 ? plain : withVersions;
                    int slot = t;
                    passed.add(pool.submit(() -> {
                        start.await(10, TimeUnit.SECONDS);
                        try {
                            checker.check(1, slot, traj(d));
                            return true;
                        } catch (WorkflowContractException e) {
                            return false;
                        }
                    }));
                }
                start.countDown();
                int ok = 0;
                for (Future<Boolean> f : passed) {
                    ok += f.get(30, TimeUnit.SECONDS) ? 1 : 0;
                }
                boolean learnedVersions = checker.expectedKeys().orElseThrow().contains("versions");
                assertThat(ok).isEqualTo(learnedVersions ? threads / 2 : threads);
            } finally {
                pool.shutdownNow();
            }
        }
    }
}
