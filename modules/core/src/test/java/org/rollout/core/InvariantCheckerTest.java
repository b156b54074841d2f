package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.api.BoolTensor;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;

class InvariantCheckerTest {

    /** One row: two prompt tokens, then generated tokens with the given versions. */
    private static TrainingGroup group(long task, int dispatch, int completion, int... versions) {
        int l = 2 + versions.length;
        int[] ids = new int[l];
        int[] mask = new int[l];
        float[] lp = new float[l];
        int[] ver = new int[l];
        ver[0] = -1;
        ver[1] = -1;
        for (int i = 0; i < versions.length; i++) {
            mask[2 + i] = 1;
            lp[2 + i] = -0.5f;
            ver[2 + i] = versions[i];
        }
        TensorDict rows = TensorDict.builder()
                .put(TensorDict.INPUT_IDS, Int32Tensor.of(ids, 1, l))
                .put(TensorDict.ATTENTION_MASK, BoolTensor.filled(true, 1, l))
                .put(TensorDict.LOSS_MASK, Int32Tensor.of(mask, 1, l))
                .put(TensorDict.LOGPROBS, Float32Tensor.of(lp, 1, l))
                .put(TensorDict.VERSIONS, Int32Tensor.of(ver, 1, l))
                .put(TensorDict.REWARDS, Float32Tensor.vector(1f))
                .build();
        int head = versions.length == 0 ? dispatch : versions[0];
        int tail = versions.length == 0 ? dispatch : versions[versions.length - 1];
        return new TrainingGroup(task, 0, rows, new int[] {0}, new int[] {1}, dispatch, head, tail, completion);
    }

    @Test
    void aBatchOfWellFormedGroupsHasNoViolation() {
        InvariantChecker c = new InvariantChecker(1, true);
        c.onVersion(0);
        c.onBatch(new TrainingBatch(0, List.of(group(1, 0, 1, 0, 0, 1), group(2, 0, 0, 0)), 0));
        c.onVersion(1);
        c.accountFor(List.of(1L, 2L, 3L), Map.of(3L, "returned_none"));
        assertThat(c.violations()).isEmpty();
        assertThat(c.tasksDelivered()).isEqualTo(2);
        assertThat(c.rowsChecked()).isEqualTo(2);
        assertThat(c.checks()).containsKeys("task_once", "row_versions", "staleness_bound", "task_accounted");
    }

    @Test
    void aTaskInTwoBatchesIsADuplicate() {
        InvariantChecker c = new InvariantChecker(5, true);
        c.onBatch(new TrainingBatch(0, List.of(group(1, 0, 0, 0)), 0));
        c.onBatch(new TrainingBatch(1, List.of(group(1, 0, 0, 0)), 0));
        assertThat(c.violations()).containsExactly("task 1 delivered twice: in batch 0 and batch 1");
    }

    @Test
    void aRedeliveryMustCarryTheSameTasks() {
        InvariantChecker c = new InvariantChecker(5, true);
        c.onBatch(new TrainingBatch(0, List.of(group(1, 0, 0, 0)), 0));
        c.onBatch(new TrainingBatch(0, List.of(group(1, 0, 0, 0)), 0));
        assertThat(c.violations()).isEmpty();
        c.onBatch(new TrainingBatch(0, List.of(group(2, 0, 0, 0)), 0));
        assertThat(c.violations()).containsExactly("batch 0 delivered again with other tasks: [1] then [2]");
    }

    @Test
    void versionsThatDecreaseOrLeaveTheDispatchCompletionRangeAreFlagged() {
        InvariantChecker c = new InvariantChecker(5, true);
        c.onBatch(new TrainingBatch(0, List.of(group(1, 0, 2, 2, 1)), 0));
        c.onBatch(new TrainingBatch(1, List.of(group(2, 1, 2, 0, 1)), 0));
        assertThat(c.violations())
                .anySatisfy(v -> assertThat(v).isEqualTo("task 1 row 0 position 3: version decreased from 2 to 1"))
                .anySatisfy(v -> assertThat(v)
                        .contains("task 2 row 0 position 2: version 0 outside dispatch..completion [1, 2]"));
    }

    @Test
    void aGroupHandedOutMoreThanEtaVersionsAfterDispatchBreaksTheStalenessBound() {
        InvariantChecker c = new InvariantChecker(1, true);
        c.onBatch(new TrainingBatch(0, List.of(group(1, 0, 0, 0)), 2));
        assertThat(c.violations())
                .containsExactly(
                        "task 1 dispatched at version 0 was handed out at version 2, more than max_head_offpolicyness=1 behind");
    }

    @Test
    void underTheAdmissionPolicyTheHandOutBoundIsNotChecked() {
        InvariantChecker c = new InvariantChecker(1, false);
        c.onBatch(new TrainingBatch(0, List.of(group(1, 0, 0, 0)), 2));
        assertThat(c.violations()).isEmpty();
    }

    @Test
    void aBudgetObservationAboveTheFormulaOrAboveCIsFlagged() {
        InvariantChecker c = new InvariantChecker(1, false);
        c.onBudget(0, 2, 2, 4, 2);
        assertThat(c.violations()).isEmpty();
        c.onBudget(0, 3, 2, 4, 2);
        c.onBudget(3, 0, 5, 4, 2);
        assertThat(c.violations())
                .containsExactly(
                        "accepted 3 + running 2 exceeds (eta + v + 1) * B = 4 at version 0",
                        "running 5 exceeds max_concurrent_rollouts=4");
    }

    @Test
    void aVersionGoingBackwardsIsFlagged() {
        InvariantChecker c = new InvariantChecker(1, true);
        c.onVersion(3);
        c.onVersion(2);
        assertThat(c.violations()).containsExactly("weight version went backwards: 3 then 2");
    }

    @Test
    void everyAdmittedTaskMustEndExactlyOnceWithAReason() {
        InvariantChecker c = new InvariantChecker(1, true);
        c.onBatch(new TrainingBatch(0, List.of(group(1, 0, 0, 0)), 0));
        c.accountFor(List.of(1L, 2L, 3L), Map.of(1L, "stale", 3L, ""));
        assertThat(c.violations())
                .containsExactlyInAnyOrder(
                        "task 1 was both delivered (batch 0) and rejected (stale)",
                        "task 2 was admitted but neither delivered nor rejected",
                        "task 3 was rejected without a reason");
    }

    @Test
    void shapesThatDifferMeanATokenWithoutItsLogprobOrVersion() {
        TrainingGroup g = group(1, 0, 0, 0);
        TensorDict broken = g.rows().with(TensorDict.LOGPROBS, Float32Tensor.of(new float[2], 1, 2));
        InvariantChecker c = new InvariantChecker(1, true);
        c.onBatch(new TrainingBatch(
                0, List.of(new TrainingGroup(1, 0, broken, new int[] {0}, new int[] {1}, 0, 0, 0, 0)), 0));
        assertThat(c.violations()).containsExactly("task 1: shapes differ: input_ids int32[1, 3] vs float32[1, 2]");
    }
}
