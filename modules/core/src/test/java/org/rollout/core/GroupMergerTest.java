package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.rollout.core.TrajectoryFixtures.interaction;
import static org.rollout.core.TrajectoryFixtures.trajectory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.rollout.api.BoolTensor;
import org.rollout.api.EpisodeResult;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Interaction;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.WorkflowContractException;

class GroupMergerTest {
    private static final long TASK = 42;
    private static final Offset<Float> CLOSE = within(1e-6f);

    private static GroupOptions plain(int g, int m) {
        return new GroupOptions(g, m, false, false, true);
    }

    private static GroupOptions dropIncomplete(int g, int m) {
        return new GroupOptions(g, m, true, false, true);
    }

    private static GroupOptions normalising(int g, int m) {
        return new GroupOptions(g, m, false, true, true);
    }

    private static List<EpisodeResult> slots(EpisodeResult... results) {
        return new ArrayList<>(Arrays.asList(results));
    }

    private static EpisodeResult.Interactions interactions(Interaction... its) {
        Map<String, Interaction> m = new LinkedHashMap<>();
        for (Interaction it : its) {
            m.put(it.id(), it);
        }
        return EpisodeResult.interactions(m);
    }

    private static EpisodeResult.Trajectory withTensor(EpisodeResult.Trajectory t, String key, Tensor tensor) {
        return EpisodeResult.trajectory(t.data().with(key, tensor));
    }

    /** A trajectory with two rows of different lengths and rewards. */
    private static EpisodeResult.Trajectory twoRows(float first, float second) {
        TensorDict a = TrajectoryFixtures.row(new int[] {1, 2, 3}, 1, 1, first);
        TensorDict b = TrajectoryFixtures.row(new int[] {1, 2, 3, 4}, 1, 1, second);
        return EpisodeResult.trajectory(TensorDicts.concatPadded(List.of(a, b)));
    }

    private static GroupOutcome.Merged merged(GroupOutcome o) {
        assertThat(o).isInstanceOf(GroupOutcome.Merged.class);
        return (GroupOutcome.Merged) o;
    }

    private static GroupOutcome.Dropped dropped(GroupOutcome o) {
        assertThat(o).isInstanceOf(GroupOutcome.Dropped.class);
        return (GroupOutcome.Dropped) o;
    }

    private static float[] rewards(GroupOutcome.Merged m) {
        return m.rows().float32("rewards").toArray();
    }

    @Nested
    class Merging {
        @Test
        void mergesAFullTensorGroupInSlotOrder() {
            GroupOutcome.Merged m = merged(GroupMerger.merge(
                    TASK, slots(trajectory(3, 0.1f), trajectory(5, 0.2f), trajectory(4, 0.3f)), plain(3, 1)));

            assertThat(m.rows().tensor("input_ids").shape()).containsExactly(3, 5);
            assertThat(m.rows().int32("input_ids").row(0).toArray()).containsExactly(100, 101, 102, 0, 0);
            assertThat(m.rows().int32("versions").row(0).toArray()).containsExactly(-1, -1, 1, -1, -1);
            assertThat(rewards(m)).containsExactly(0.1f, 0.2f, 0.3f);
            assertThat(m.slotIndices()).containsExactly(0, 1, 2);
            assertThat(m.slotRowCounts()).containsExactly(1, 1, 1);
            assertThat(m.slotReferences()).containsExactly(Double.NaN, Double.NaN, Double.NaN);
            assertThat(m.metrics()).isEqualTo(new GroupMetrics(3, 3, 3));
        }

        @Test
        void keepsOnlyUsableSlotsOfAPartialGroupAtOrAboveTheMinimum() {
            GroupOutcome.Merged m = merged(GroupMerger.merge(
                    TASK,
                    slots(trajectory(3, 0.1f), EpisodeResult.rejected("low_reward"), trajectory(4, 0.3f)),
                    plain(3, 2)));

            assertThat(m.slotIndices()).containsExactly(0, 2);
            assertThat(m.slotRowCounts()).containsExactly(1, 1);
            assertThat(rewards(m)).containsExactly(0.1f, 0.3f);
            assertThat(m.metrics().asMap())
                    .containsEntry("usable_slot_count", 2.0)
                    .containsEntry("trainable_slot_count", 2.0)
                    .containsEntry("pre_filter_usable_slot_yield", 2.0 / 3)
                    .containsEntry("pre_filter_trainable_slot_yield", 2.0 / 3);
        }

        @Test
        void warnsThatAPartialGroupUsesTheRemainingResults() {
            try (CapturedLogs logs = CapturedLogs.of(GroupMerger.class)) {
                GroupMerger.merge(TASK, slots(trajectory(3, 0.1f), null), plain(2, 1));

                assertThat(logs.warnings()).containsExactly("task 42: 1/2 slots usable; using remaining results");
            }
        }

        @Test
        void aSlotWithTwoRowsIsLegalAndItsRowCountTravelsWithTheRows() {
            GroupOutcome.Merged m =
                    merged(GroupMerger.merge(TASK, slots(twoRows(0.5f, 1.0f), trajectory(3, 3.0f)), plain(2, 2)));

            assertThat(m.slotRowCounts()).containsExactly(2, 1);
            assertThat(m.rows().batchSize()).isEqualTo(3);
            assertThat(rewards(m)).containsExactly(0.5f, 1.0f, 3.0f);
            assertThat(m.metrics()).isEqualTo(new GroupMetrics(2, 2, 2));
        }

        @Test
        void mergesInteractionSlotsInSlotThenInsertionOrder() {
            EpisodeResult.Interactions s0 = interactions(
                    interaction("s0-b", new int[] {1, 2}, new int[] {3}, 0.5),
                    interaction("s0-a", new int[] {1}, new int[] {2, 3, 4}, 1.0));
            EpisodeResult.Interactions s2 = interactions(interaction("s2-a", new int[] {9}, new int[] {8}, 0.0));

            GroupOutcome.Merged m = merged(GroupMerger.merge(TASK, slots(s0, null, s2), plain(3, 2)));

            assertThat(m.rows().int32("input_ids"))
                    .isEqualTo(
                            Int32Tensor.matrix(new int[] {1, 2, 3, 0}, new int[] {1, 2, 3, 4}, new int[] {9, 8, 0, 0}));
            assertThat(m.rows().int32("versions"))
                    .isEqualTo(Int32Tensor.matrix(
                            new int[] {-1, -1, 3, -1}, new int[] {-1, 3, 3, 3}, new int[] {-1, 3, -1, -1}));
            assertThat(rewards(m)).containsExactly(0.5f, 1.0f, 0.0f);
            assertThat(m.slotIndices()).containsExactly(0, 2);
            assertThat(m.slotRowCounts()).containsExactly(2, 1);
            assertThat(m.metrics()).isEqualTo(new GroupMetrics(3, 2, 2));
        }

        @Test
        void removesRolloutRewardFromTheRowsAndReportsItAsTheSlotReference() {
            EpisodeResult.Trajectory withRef =
                    withTensor(twoRows(0.5f, 1.0f), TensorDict.ROLLOUT_REWARD, Float32Tensor.scalar(1.0f));

            GroupOutcome.Merged m = merged(GroupMerger.merge(TASK, slots(withRef, trajectory(3, 3f)), plain(2, 1)));

            assertThat(m.rows().has(TensorDict.ROLLOUT_REWARD)).isFalse();
            assertThat(m.slotReferences()).containsExactly(1.0, Double.NaN);
            assertThat(rewards(m)).containsExactly(0.5f, 1.0f, 3.0f);
            assertThat(m.rows().has(TensorDict.ORIGINAL_REWARDS)).isFalse();
        }

        @Test
        void reportsAnInteractionsExplicitRolloutRewardAsItsReference() {
            EpisodeResult.Interactions s0 = interactions(
                    interaction("a", 0.5).withRolloutReward(1.0),
                    interaction("b", 1.0).withRolloutReward(1.0));
            EpisodeResult.Interactions s1 = interactions(interaction("c", 0.0));

            GroupOutcome.Merged m = merged(GroupMerger.merge(TASK, slots(s0, s1), plain(2, 1)));

            assertThat(m.slotReferences()).containsExactly(1.0, Double.NaN);
        }

        @Test
        void aSingletonGroupMergesItsOnlySlot() {
            GroupOutcome.Merged m = merged(GroupMerger.merge(TASK, slots(trajectory(3, 1f)), plain(1, 1)));

            assertThat(m.slotIndices()).containsExactly(0);
            assertThat(m.metrics().asMap()).containsEntry("singleton_slot_group", 1.0);
        }

        @Test
        void rejectsAListWhoseSizeIsNotTheGroupSize() {
            assertThatThrownBy(() -> GroupMerger.merge(TASK, slots(trajectory(3, 1f)), plain(2, 1)))
                    .isExactlyInstanceOf(IllegalArgumentException.class)
                    .hasMessage("task 42: got 1 slot results for group_size 2");
        }

        @Test
        void neverMutatesItsInputs() {
            EpisodeResult.Trajectory t = twoRows(1f, 1f);
            TensorDict before = t.data();

            GroupMerger.merge(TASK, slots(t, trajectory(3, 0f)), normalising(2, 2));

            assertThat(t.data()).isSameAs(before);
            assertThat(before.float32("rewards").toArray()).containsExactly(1f, 1f);
        }
    }

    @Nested
    class Dropping {
        @Test
        void dropsAGroupWithNoUsableSlotsCountingEachReason() {
            GroupOutcome.Dropped d = dropped(GroupMerger.merge(
                    TASK,
                    slots(null, EpisodeResult.rejected("low_reward"), null, EpisodeResult.rejected("timeout")),
                    plain(4, 1)));

            assertThat(d.reason())
                    .isEqualTo("no usable slots (all 4 rejected: returned_none x2, low_reward x1, timeout x1)");
            assertThat(d.metrics().asMap())
                    .containsEntry("usable_slot_count", 0.0)
                    .containsEntry("trainable_slot_count", 0.0)
                    .containsEntry("fully_masked_group", 1.0)
                    .containsEntry("pre_filter_usable_slot_yield", 0.0);
        }

        @Test
        void treatsANullSlotAsReturnedNone() {
            GroupOutcome.Dropped d = dropped(GroupMerger.merge(TASK, slots((EpisodeResult) null), plain(1, 1)));

            assertThat(d.reason()).isEqualTo("no usable slots (all 1 rejected: returned_none x1)");
        }

        @Test
        void dropIncompleteGroupDropsAnyPartialGroup() {
            GroupOutcome.Dropped d = dropped(
                    GroupMerger.merge(TASK, slots(trajectory(3, 1f), null, trajectory(3, 0f)), dropIncomplete(3, 1)));

            assertThat(d.reason()).isEqualTo("incomplete group: 2/3 slots usable and drop_incomplete_group is set");
            assertThat(d.metrics()).isEqualTo(new GroupMetrics(3, 2, 0));
        }

        @Test
        void dropIncompleteGroupTakesPrecedenceOverTheMinimum() {
            GroupOutcome.Dropped d =
                    dropped(GroupMerger.merge(TASK, slots(trajectory(3, 1f), null, null), dropIncomplete(3, 2)));

            assertThat(d.reason()).isEqualTo("incomplete group: 1/3 slots usable and drop_incomplete_group is set");
            assertThat(d.metrics()).isEqualTo(new GroupMetrics(3, 1, 0));
        }

        @Test
        void dropIncompleteGroupKeepsACompleteGroup() {
            GroupOutcome.Merged m =
                    merged(GroupMerger.merge(TASK, slots(trajectory(3, 1f), trajectory(3, 0f)), dropIncomplete(2, 1)));

            assertThat(m.slotIndices()).containsExactly(0, 1);
        }

        @Test
        void dropsAGroupBelowTheMinimumWithAWarning() {
            try (CapturedLogs logs = CapturedLogs.of(GroupMerger.class)) {
                GroupOutcome.Dropped d =
                        dropped(GroupMerger.merge(TASK, slots(null, trajectory(3, 1f), null), plain(3, 2)));

                assertThat(d.reason()).isEqualTo("1/3 usable slots is below min_usable_group_size=2");
                assertThat(d.metrics().asMap())
                        .containsEntry("usable_slot_count", 1.0)
                        .containsEntry("trainable_slot_count", 0.0)
                        .containsEntry("singleton_slot_group", 1.0)
                        .containsEntry("pre_filter_usable_slot_yield", 1.0 / 3)
                        .containsEntry("pre_filter_trainable_slot_yield", 0.0);
                assertThat(logs.warnings())
                        .containsExactly(
                                "task 42: dropping group below min_usable_group_size (1/3 slots usable, 2 required)");
            }
        }
    }

    @Nested
    class ContractErrors {
        private void assertContractError(List<EpisodeResult> slots, GroupOptions opts, String message) {
            assertThatThrownBy(() -> GroupMerger.merge(TASK, slots, opts))
                    .isInstanceOf(WorkflowContractException.class)
                    .hasMessage(message);
        }

        @Test
        void rejectsMixedResultKindsNamingTheSlotsOfEach() {
            assertContractError(
                    slots(trajectory(3, 1f), interactions(interaction("a", 1.0)), trajectory(3, 0f)),
                    plain(3, 1),
                    "task 42: mixed result kinds in one group: slots [0, 2] returned trajectories, slots [1]"
                            + " returned interactions");
        }

        @Test
        void rejectsDuplicateCompletionIdsNamingTheIdAndBothSlots() {
            assertContractError(
                    slots(
                            interactions(interaction("a", 1.0)),
                            interactions(interaction("b", 1.0)),
                            interactions(interaction("c", 0.0), interaction("a", 0.0))),
                    plain(3, 1),
                    "task 42: completion id 'a' appears in slots 0 and 2 (completion ids must be unique within a"
                            + " group)");
        }

        @Test
        void rejectsAnEmptyTrajectory() {
            assertContractError(
                    slots(trajectory(3, 1f), EpisodeResult.trajectory(TensorDict.empty())),
                    plain(2, 1),
                    "task 42 slot 1: the trajectory is empty (no tensors)");
        }

        @Test
        void rejectsATrajectoryWithoutRows() {
            TensorDict scalarsOnly = TensorDict.builder()
                    .put("rollout_reward", Float32Tensor.scalar(1f))
                    .build();

            assertContractError(
                    slots(EpisodeResult.trajectory(scalarsOnly)),
                    plain(1, 1),
                    "task 42 slot 0: the trajectory has no rows (TensorDict{rollout_reward=float32[]}); a usable"
                            + " result needs at least one");
        }

        @Test
        void rejectsATensorWhoseDimZeroIsNotTheRowCount() {
            assertContractError(
                    slots(withTensor(trajectory(3, 1f), "rewards", Float32Tensor.vector(1f, 2f))),
                    plain(1, 1),
                    "task 42 slot 0: tensor 'rewards' is float32[2] but the trajectory has 1 rows (dim 0 of every"
                            + " tensor must be the row count)");
        }

        @Test
        void rejectsRankTwoTensorsOfDifferentWidths() {
            assertContractError(
                    slots(trajectory(3, 1f), withTensor(trajectory(3, 1f), "logprobs", Float32Tensor.filled(0f, 1, 4))),
                    plain(2, 1),
                    "task 42 slot 1: tensor 'logprobs' is float32[1, 4] but 'input_ids' is int32[1, 3] (rank-2"
                            + " tensors must share dim 1)");
        }

        @Test
        void rejectsRewardsThatAreNotRankOne() {
            assertContractError(
                    slots(withTensor(trajectory(3, 1f), "rewards", Float32Tensor.filled(1f, 1, 3))),
                    plain(1, 1),
                    "task 42 slot 0: tensor 'rewards' must be rank 1 [1], got float32[1, 3]");
        }

        @Test
        void rejectsANonFiniteRowRewardNamingTheRow() {
            assertContractError(
                    slots(trajectory(3, 1f), twoRows(1f, Float.NaN)),
                    plain(2, 1),
                    "task 42 slot 1: tensor 'rewards' has a non-finite value NaN in row 1");
        }

        @Test
        void rejectsARolloutRewardThatIsNotAScalar() {
            assertContractError(
                    slots(withTensor(twoRows(1f, 1f), "rollout_reward", Float32Tensor.vector(1f, 1f))),
                    plain(1, 1),
                    "task 42 slot 0: tensor 'rollout_reward' must be a scalar (shape [] or [1]), got float32[2]");
        }

        @Test
        void rejectsANonFiniteRolloutReward() {
            assertContractError(
                    slots(withTensor(
                            trajectory(3, 1f), "rollout_reward", Float32Tensor.vector(Float.NEGATIVE_INFINITY))),
                    plain(1, 1),
                    "task 42 slot 0: tensor 'rollout_reward' is not finite: -Infinity");
        }

        @Test
        void rejectsAnEmptyInteractionResult() {
            assertContractError(
                    slots(interactions(interaction("a", 1.0)), interactions()),
                    plain(2, 1),
                    "task 42 slot 1: the interaction result is empty");
        }

        @Test
        void rejectsAnInteractionWithoutTensorData() {
            assertContractError(
                    slots(interactions(Interaction.builder("a").reward(1.0).build())),
                    plain(1, 1),
                    "task 42 slot 0: interaction 'a' has no tensor data (external-API mode); text-only interactions"
                            + " cannot be trained on");
        }

        @Test
        void rejectsANonFiniteInteractionReward() {
            assertContractError(
                    slots(interactions(interaction("a", 1.0)), interactions(interaction("b", Double.NaN))),
                    plain(2, 1),
                    "task 42 slot 1: interaction 'b' has a non-finite reward: NaN");
        }

        @Test
        void validatesEveryUsableSlotEvenWhenTheGroupWouldBeDropped() {
            assertContractError(
                    slots(EpisodeResult.trajectory(TensorDict.empty()), null),
                    dropIncomplete(2, 1),
                    "task 42 slot 0: the trajectory is empty (no tensors)");
        }

        @Test
        void rejectsSlotsWithDifferentKeySetsNamingTheSlots() {
            EpisodeResult.Trajectory extra = withTensor(trajectory(3, 1f), "is_truncated", BoolTensor.vector(false));

            assertContractError(
                    slots(trajectory(3, 1f), null, extra),
                    plain(3, 1),
                    "task 42 slot 2 has different tensor keys from task 42 slot 0: missing [], extra [is_truncated]"
                            + " (all dicts must have identical key sets)");
        }

        @Test
        void rejectsSlotsWhoseKeyDtypesDifferNamingTheSlots() {
            EpisodeResult.Trajectory int32Rewards = withTensor(trajectory(3, 1f), "rewards", Int32Tensor.vector(1));

            assertContractError(
                    slots(trajectory(3, 1f), int32Rewards),
                    plain(2, 1),
                    "tensor 'rewards': task 42 slot 1 has int32[1] but task 42 slot 0 has float32[1] (dtype and rank"
                            + " must agree to concatenate)");
        }

        @Test
        void rejectsAConcatChildThatDoesNotExtendItsParentNamingTaskSlotAndIds() {
            Interaction parent = interaction("p", new int[] {1, 2}, new int[] {3}, 0.0);
            Interaction child = Interaction.builder("c")
                    .modelResponse(TrajectoryFixtures.response(new int[] {1, 9, 3, 4}, new int[] {5}, 1))
                    .parent(parent)
                    .chatTemplateType(Interaction.ChatTemplateType.CONCAT)
                    .reward(1.0)
                    .build();

            assertThatThrownBy(() -> GroupMerger.merge(TASK, slots(interactions(parent, child)), plain(1, 1)))
                    .isInstanceOf(WorkflowContractException.class)
                    .hasMessageStartingWith(
                            "task 42 slot 0: interaction 'c' (CONCAT) does not extend its parent 'p': first difference"
                                    + " at position 1");
        }
    }

    @Nested
    class RewardNormalisation {
        @Test
        void normalisesInteractionRewardsOneAndZeroToAboutOneAndMinusOne() {
            GroupOutcome.Merged m = merged(GroupMerger.merge(
                    TASK,
                    slots(interactions(interaction("a", 1.0)), interactions(interaction("b", 0.0))),
                    normalising(2, 2)));

            assertThat(rewards(m)[0]).isCloseTo(1f, CLOSE);
            assertThat(rewards(m)[1]).isCloseTo(-1f, CLOSE);
            assertThat(m.rows().float32("original_rewards").toArray()).containsExactly(1f, 0f);
            assertThat(m.slotReferences()[0]).isCloseTo(1.0, within(1e-6));
            assertThat(m.slotReferences()[1]).isCloseTo(-1.0, within(1e-6));
        }

        @Test
        void normalisesTensorRewardsOneAndZeroToAboutOneAndMinusOne() {
            GroupOutcome.Merged m =
                    merged(GroupMerger.merge(TASK, slots(trajectory(3, 1f), trajectory(4, 0f)), normalising(2, 2)));

            assertThat(rewards(m)[0]).isCloseTo(1f, CLOSE);
            assertThat(rewards(m)[1]).isCloseTo(-1f, CLOSE);
            assertThat(m.rows().float32("original_rewards").toArray()).containsExactly(1f, 0f);
        }

        @Test
        void normalisesDiscountedRowsWithTheirExplicitReference() {
            // Rows [0.5, 1.0] with reference 1.0 and a peer with 3.0: center 2, divisor ~1 (semantics §5.6 [C]).
            EpisodeResult.Trajectory discounted =
                    withTensor(twoRows(0.5f, 1.0f), TensorDict.ROLLOUT_REWARD, Float32Tensor.scalar(1.0f));

            GroupOutcome.Merged m =
                    merged(GroupMerger.merge(TASK, slots(discounted, trajectory(3, 3f)), normalising(2, 2)));

            assertThat(rewards(m)[0]).isCloseTo(-1.5f, CLOSE);
            assertThat(rewards(m)[1]).isCloseTo(-1.0f, CLOSE);
            assertThat(rewards(m)[2]).isCloseTo(1.0f, CLOSE);
            assertThat(m.rows().float32("original_rewards").toArray()).containsExactly(0.5f, 1.0f, 3.0f);
            assertThat(m.slotReferences()[0]).isCloseTo(-1.0, within(1e-6));
            assertThat(m.slotReferences()[1]).isCloseTo(1.0, within(1e-6));
            assertThat(m.slotRowCounts()).containsExactly(2, 1);
            assertThat(m.rows().has(TensorDict.ROLLOUT_REWARD)).isFalse();
        }

        @Test
        void normalisesDiscountedInteractionsWithTheirExplicitReference() {
            EpisodeResult.Interactions discounted = interactions(
                    interaction("t0", 0.5).withRolloutReward(1.0),
                    interaction("t1", 1.0).withRolloutReward(1.0));
            EpisodeResult.Interactions peer = interactions(interaction("p", 3.0));

            GroupOutcome.Merged m = merged(GroupMerger.merge(TASK, slots(discounted, peer), normalising(2, 2)));

            assertThat(rewards(m)[0]).isCloseTo(-1.5f, CLOSE);
            assertThat(rewards(m)[1]).isCloseTo(-1.0f, CLOSE);
            assertThat(rewards(m)[2]).isCloseTo(1.0f, CLOSE);
            assertThat(m.rows().float32("original_rewards").toArray()).containsExactly(0.5f, 1.0f, 3.0f);
        }

        @Test
        void tiedRewardsNormaliseToZeroAndKeepTheirOriginals() {
            GroupOutcome.Merged m = merged(GroupMerger.merge(
                    TASK, slots(trajectory(3, 0.7f), trajectory(3, 0.7f), trajectory(3, 0.7f)), normalising(3, 2)));

            assertThat(rewards(m)).containsExactly(0f, 0f, 0f);
            assertThat(m.rows().float32("original_rewards").toArray()).containsExactly(0.7f, 0.7f, 0.7f);
            assertThat(m.slotReferences()).containsExactly(0.0, 0.0, 0.0);
        }

        @Test
        void aMultiRowSlotWithEqualRowsUsesTheCommonRewardAsReference() {
            GroupOutcome.Merged m =
                    merged(GroupMerger.merge(TASK, slots(twoRows(1f, 1f), trajectory(3, 0f)), normalising(2, 2)));

            assertThat(rewards(m)[0]).isCloseTo(1f, CLOSE);
            assertThat(rewards(m)[1]).isCloseTo(1f, CLOSE);
            assertThat(rewards(m)[2]).isCloseTo(-1f, CLOSE);
        }

        @Test
        void normalisesAPartialGroupOverItsUsableSlotsOnly() {
            GroupOutcome.Merged m = merged(GroupMerger.merge(
                    TASK,
                    slots(interactions(interaction("a", 1.0)), null, interactions(interaction("c", 0.0))),
                    normalising(3, 2)));

            assertThat(m.slotIndices()).containsExactly(0, 2);
            assertThat(rewards(m)[0]).isCloseTo(1f, CLOSE);
            assertThat(rewards(m)[1]).isCloseTo(-1f, CLOSE);
            assertThat(m.metrics()).isEqualTo(new GroupMetrics(3, 2, 2));
        }

        @Test
        void normalisesAPartialTensorGroupOverItsUsableSlotsOnly() {
            GroupOutcome.Merged m = merged(GroupMerger.merge(
                    TASK, slots(null, trajectory(3, 4f), trajectory(3, 2f), null), normalising(4, 2)));

            assertThat(m.slotIndices()).containsExactly(1, 2);
            assertThat(rewards(m)[0]).isCloseTo(1f, CLOSE);
            assertThat(rewards(m)[1]).isCloseTo(-1f, CLOSE);
            assertThat(m.rows().float32("original_rewards").toArray()).containsExactly(4f, 2f);
        }

        @Test
        void meanOnlyNormalisationDividesByOne() {
            GroupOutcome.Merged m = merged(GroupMerger.merge(
                    TASK, slots(trajectory(3, 1f), trajectory(3, 0f)), new GroupOptions(2, 2, false, true, false)));

            assertThat(rewards(m)).containsExactly(0.5f, -0.5f);
        }

        @Test
        void doesNotNormaliseAGroupOfOne() {
            GroupOutcome.Merged m = merged(GroupMerger.merge(TASK, slots(trajectory(3, 0.9f)), normalising(1, 1)));

            assertThat(rewards(m)).containsExactly(0.9f);
            assertThat(m.rows().has(TensorDict.ORIGINAL_REWARDS)).isFalse();
        }

        @Test
        void setsOriginalRewardsOnEveryTensorSlotSoKeySetsStayEqual() {
            EpisodeResult.Trajectory withOriginal =
                    withTensor(trajectory(3, 1f), TensorDict.ORIGINAL_REWARDS, Float32Tensor.vector(5f));

            GroupOutcome.Merged m =
                    merged(GroupMerger.merge(TASK, slots(withOriginal, trajectory(3, 0f)), normalising(2, 2)));

            assertThat(m.rows().float32("original_rewards").toArray()).containsExactly(1f, 0f);
        }

        @Test
        void patchesPrecomputedInteractionRowsToo() {
            TensorDict cached = TrajectoryFixtures.row(new int[] {1, 2, 3}, 1, 0, 1f)
                    .with(TensorDict.ORIGINAL_REWARDS, Float32Tensor.vector(1f));
            Interaction precomputed =
                    Interaction.builder("a").tensorData(cached).reward(1.0).build();

            GroupOutcome.Merged m = merged(GroupMerger.merge(
                    TASK,
                    slots(interactions(precomputed), interactions(interaction("b", new int[] {1}, new int[] {2}, 0.0))),
                    normalising(2, 2)));

            assertThat(rewards(m)[0]).isCloseTo(1f, CLOSE);
            assertThat(rewards(m)[1]).isCloseTo(-1f, CLOSE);
            assertThat(m.rows().float32("original_rewards").toArray()).containsExactly(1f, 0f);
        }

        @Test
        void dropsTheGroupWhenAUsableRolloutHasAMissingRowReward() {
            GroupOutcome.Dropped d = dropped(GroupMerger.merge(
                    TASK,
                    slots(
                            interactions(interaction("a", 1.0)),
                            interactions(interaction("b", 1.0), interaction("c", null))),
                    normalising(2, 2)));

            assertThat(d.reason())
                    .isEqualTo("slot 1 has a missing row reward (interaction 'c') and reward_normalization needs one"
                            + " for every usable rollout");
            assertThat(d.metrics()).isEqualTo(new GroupMetrics(2, 2, 0));
        }

        @Test
        void aContractErrorInAnotherSlotIsNotHiddenByAMissingRewardDrop() {
            assertThatThrownBy(() -> GroupMerger.merge(
                            TASK,
                            slots(
                                    interactions(interaction("a", null)),
                                    interactions(interaction("b", 0.5), interaction("c", 1.0))),
                            normalising(2, 2)))
                    .isInstanceOf(WorkflowContractException.class)
                    .hasMessageStartingWith("task 42 slot 1: rows have different rewards");
        }

        @Test
        void disagreeingExplicitReferencesInAMissingRewardSlotAreStillAContractError() {
            assertThatThrownBy(() -> GroupMerger.merge(
                            TASK,
                            slots(
                                    interactions(
                                            interaction("a", null).withRolloutReward(1.0),
                                            interaction("b", 1.0).withRolloutReward(2.0)),
                                    interactions(interaction("c", 0.0))),
                            normalising(2, 2)))
                    .isInstanceOf(WorkflowContractException.class)
                    .hasMessage("task 42 slot 0: interactions disagree on rollout_reward: 1.0 (interaction 'a') vs"
                            + " 2.0 (interaction 'b'); one logical rollout has one reference");
        }

        @Test
        void rowsWithDifferentRewardsAndNoReferenceAreAContractError() {
            assertThatThrownBy(() ->
                            GroupMerger.merge(TASK, slots(trajectory(3, 0f), twoRows(0.5f, 1.0f)), normalising(2, 2)))
                    .isInstanceOf(WorkflowContractException.class)
                    .hasMessage("task 42 slot 1: rows have different rewards [0.5, 1.0] and no explicit rollout_reward;"
                            + " set rollout_reward to the logical rollout's reference reward");
        }

        @Test
        void interactionsWithDifferentRewardsAndNoReferenceAreAContractError() {
            assertThatThrownBy(() -> GroupMerger.merge(
                            TASK,
                            slots(
                                    interactions(interaction("a", 0.25), interaction("b", 1.0)),
                                    interactions(interaction("c", 0.0))),
                            normalising(2, 2)))
                    .isInstanceOf(WorkflowContractException.class)
                    .hasMessage("task 42 slot 0: rows have different rewards [0.25, 1.0] and no explicit"
                            + " rollout_reward; set rollout_reward to the logical rollout's reference reward");
        }

        @Test
        void disagreeingReferencesAreAContractErrorEvenWithoutNormalisation() {
            assertThatThrownBy(() -> GroupMerger.merge(
                            TASK,
                            slots(interactions(
                                    interaction("a", 1.0).withRolloutReward(1.0),
                                    interaction("b", 1.0).withRolloutReward(0.0))),
                            plain(1, 1)))
                    .isInstanceOf(WorkflowContractException.class)
                    .hasMessageStartingWith("task 42 slot 0: interactions disagree on rollout_reward");
        }

        @Test
        void aTensorSlotWithoutRewardsIsAContractErrorUnderNormalisation() {
            EpisodeResult.Trajectory noRewards =
                    EpisodeResult.trajectory(trajectory(3, 1f).data().without("rewards"));

            assertThatThrownBy(() -> GroupMerger.merge(TASK, slots(noRewards, noRewards), normalising(2, 2)))
                    .isInstanceOf(WorkflowContractException.class)
                    .hasMessage("task 42 slot 0: reward_normalization needs a 'rewards' tensor, the trajectory has"
                            + " [input_ids, loss_mask, logprobs, versions, turn_ids, attention_mask]");
        }

        @Test
        void quotesAtMostEightRowRewards() {
            float[] values = new float[10];
            for (int i = 0; i < values.length; i++) {
                values[i] = i;
            }
            TensorDict manyRows = TensorDict.builder()
                    .put("rewards", Float32Tensor.vector(values))
                    .build();

            assertThatThrownBy(() ->
                            GroupMerger.merge(TASK, slots(EpisodeResult.trajectory(manyRows), null), normalising(2, 1)))
                    .hasMessageContaining("[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, ... (10 rows)]");
        }
    }
}
