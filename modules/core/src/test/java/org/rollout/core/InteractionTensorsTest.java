package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.core.TrajectoryFixtures.interaction;
import static org.rollout.core.TrajectoryFixtures.response;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.api.BoolTensor;
import org.rollout.api.DType;
import org.rollout.api.EpisodeResult;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Int64Tensor;
import org.rollout.api.Interaction;
import org.rollout.api.TensorDict;
import org.rollout.api.WorkflowContractException;

class InteractionTensorsTest {

    private static Interaction concatChild(String id, Interaction parent, int[] input, int[] output, int version) {
        return Interaction.builder(id)
                .modelResponse(response(input, output, version))
                .parent(parent)
                .chatTemplateType(Interaction.ChatTemplateType.CONCAT)
                .reward(1.0)
                .build();
    }

    private static EpisodeResult.Interactions result(Interaction... its) {
        Map<String, Interaction> m = new LinkedHashMap<>();
        for (Interaction it : its) {
            m.put(it.id(), it);
        }
        return EpisodeResult.interactions(m);
    }

    @Test
    void convertsAPlainInteractionToOneRowWithThePromptMaskedOut() {
        Interaction it = Interaction.builder("c1")
                .modelResponse(response(new int[] {5, 6, 7}, new int[] {8, 9}, 4))
                .reward(0.75)
                .build();

        TensorDict row = InteractionTensors.toTensorDict(it);

        assertThat(row.keys())
                .containsExactly(
                        "input_ids",
                        "loss_mask",
                        "logprobs",
                        "versions",
                        "turn_ids",
                        "attention_mask",
                        "rewards",
                        "original_rewards");
        assertThat(row.int32("input_ids")).isEqualTo(Int32Tensor.matrix(new int[] {5, 6, 7, 8, 9}));
        assertThat(row.int32("loss_mask")).isEqualTo(Int32Tensor.matrix(new int[] {0, 0, 0, 1, 1}));
        assertThat(row.float32("logprobs")).isEqualTo(Float32Tensor.matrix(new float[] {0, 0, 0, -0.25f, -0.25f}));
        assertThat(row.int32("versions")).isEqualTo(Int32Tensor.matrix(new int[] {-1, -1, -1, 4, 4}));
        assertThat(row.int32("turn_ids")).isEqualTo(Int32Tensor.matrix(new int[] {-1, -1, -1, 0, 0}));
        assertThat(row.bool("attention_mask")).isEqualTo(BoolTensor.filled(true, 1, 5));
        assertThat(row.float32("rewards")).isEqualTo(Float32Tensor.vector(0.75f));
        assertThat(row.float32("original_rewards")).isEqualTo(Float32Tensor.vector(0.75f));
    }

    @Test
    void usesTheTensorWorkflowsDtypesNotAReaLsInt64() {
        TensorDict row = InteractionTensors.toTensorDict(interaction("c1", 1.0));

        assertThat(row.tensor("input_ids").dtype()).isEqualTo(DType.INT32);
        assertThat(row.tensor("loss_mask").dtype()).isEqualTo(DType.INT32);
        assertThat(row.tensor("versions").dtype()).isEqualTo(DType.INT32);
        assertThat(row.tensor("turn_ids").dtype()).isEqualTo(DType.INT32);
        assertThat(row.tensor("attention_mask").dtype()).isEqualTo(DType.BOOL);
        assertThat(row.tensor("logprobs").dtype()).isEqualTo(DType.FLOAT32);
        assertThat(row.tensor("rewards").dtype()).isEqualTo(DType.FLOAT32);
        assertThat(row.tensor("original_rewards").dtype()).isEqualTo(DType.FLOAT32);
    }

    @Test
    void aMissingRewardIsZeroAndOriginalRewardFallsBackToTheReward() {
        TensorDict unrewarded = InteractionTensors.toTensorDict(interaction("a", null));
        TensorDict rewarded = InteractionTensors.toTensorDict(interaction("b", 0.5));
        TensorDict normalised =
                InteractionTensors.toTensorDict(interaction("c", 0.5).withRewards(-1.0, 0.5));

        assertThat(unrewarded.float32("rewards")).isEqualTo(Float32Tensor.vector(0f));
        assertThat(unrewarded.float32("original_rewards")).isEqualTo(Float32Tensor.vector(0f));
        assertThat(rewarded.float32("original_rewards")).isEqualTo(Float32Tensor.vector(0.5f));
        assertThat(normalised.float32("rewards")).isEqualTo(Float32Tensor.vector(-1f));
        assertThat(normalised.float32("original_rewards")).isEqualTo(Float32Tensor.vector(0.5f));
    }

    @Test
    void concatChildPrefixesTheParentRowMarksTheGapAsContextAndTakesTheNextTurnId() {
        Interaction parent = interaction("p", new int[] {1, 2}, new int[] {3, 4}, 0.0);
        // The child's prompt is the parent's sequence, a tool result [5, 6], then it generates [7, 8].
        Interaction child = concatChild("c", parent, new int[] {1, 2, 3, 4, 5, 6}, new int[] {7, 8}, 9);

        TensorDict row = InteractionTensors.toTensorDict(child);

        assertThat(row.int32("input_ids")).isEqualTo(Int32Tensor.matrix(new int[] {1, 2, 3, 4, 5, 6, 7, 8}));
        assertThat(row.int32("loss_mask")).isEqualTo(Int32Tensor.matrix(new int[] {0, 0, 1, 1, 0, 0, 1, 1}));
        assertThat(row.int32("versions")).isEqualTo(Int32Tensor.matrix(new int[] {-1, -1, 3, 3, -1, -1, 9, 9}));
        assertThat(row.int32("turn_ids")).isEqualTo(Int32Tensor.matrix(new int[] {-1, -1, 0, 0, -1, -1, 1, 1}));
        assertThat(row.float32("logprobs"))
                .isEqualTo(Float32Tensor.matrix(new float[] {0, 0, -0.25f, -0.25f, 0, 0, -0.25f, -0.25f}));
        assertThat(row.float32("rewards")).isEqualTo(Float32Tensor.vector(1f));
    }

    @Test
    void aConcatChainNumbersItsTurnsInOrder() {
        Interaction t0 = interaction("t0", new int[] {1}, new int[] {2}, null);
        Interaction t1 = concatChild("t1", t0, new int[] {1, 2, 3}, new int[] {4}, 5);
        Interaction t2 = concatChild("t2", t1, new int[] {1, 2, 3, 4, 5}, new int[] {6, 7}, 6);

        TensorDict row = InteractionTensors.toTensorDict(t2);

        assertThat(row.int32("input_ids")).isEqualTo(Int32Tensor.matrix(new int[] {1, 2, 3, 4, 5, 6, 7}));
        assertThat(row.int32("turn_ids")).isEqualTo(Int32Tensor.matrix(new int[] {-1, 0, -1, 1, -1, 2, 2}));
        assertThat(row.int32("versions")).isEqualTo(Int32Tensor.matrix(new int[] {-1, 3, -1, 5, -1, 6, 6}));
    }

    @Test
    void aChildThatDoesNotExtendItsParentIsAContractErrorNamingBothIdsAndThePosition() {
        Interaction parent = interaction("p", new int[] {1, 2}, new int[] {3, 4}, 0.0);
        Interaction child = concatChild("c", parent, new int[] {1, 2, 9, 4, 5}, new int[] {7}, 9);

        assertThatThrownBy(() -> InteractionTensors.toTensorDict(child))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("interaction 'c' (CONCAT) does not extend its parent 'p': first difference at position 2"
                        + " (parent token 3, child token 9; parent sequence has 4 tokens, child input 5)");
    }

    @Test
    void aChildNotLongerThanItsParentIgnoresTheParentWithAWarningNamingBoth() {
        Interaction parent = interaction("p", new int[] {1, 2}, new int[] {3, 4}, 0.0);
        Interaction child = concatChild("c", parent, new int[] {1, 2, 3, 4}, new int[] {7}, 9);

        TensorDict row;
        try (CapturedLogs logs = CapturedLogs.of(InteractionTensors.class)) {
            row = InteractionTensors.toTensorDict(child);
            assertThat(logs.warnings())
                    .singleElement()
                    .asString()
                    .contains("interaction 'c'", "parent 'p'", "input of 4 tokens", "the 4 tokens");
        }

        assertThat(row.int32("loss_mask")).isEqualTo(Int32Tensor.matrix(new int[] {0, 0, 0, 0, 1}));
        assertThat(row.int32("versions")).isEqualTo(Int32Tensor.matrix(new int[] {-1, -1, -1, -1, 9}));
        assertThat(row.int32("turn_ids")).isEqualTo(Int32Tensor.matrix(new int[] {-1, -1, -1, -1, 0}));
    }

    @Test
    void hfModeIgnoresTheParent() {
        Interaction parent = interaction("p", new int[] {1, 2}, new int[] {3, 4}, 0.0);
        Interaction child = Interaction.builder("c")
                .modelResponse(response(new int[] {1, 2, 3, 4, 5}, new int[] {6}, 2))
                .parent(parent)
                .build();

        TensorDict row = InteractionTensors.toTensorDict(child);

        assertThat(row.int32("loss_mask")).isEqualTo(Int32Tensor.matrix(new int[] {0, 0, 0, 0, 0, 1}));
        assertThat(row.int32("turn_ids")).isEqualTo(Int32Tensor.matrix(new int[] {-1, -1, -1, -1, -1, 0}));
    }

    @Test
    void returnsPrecomputedTensorDataAsIs() {
        TensorDict cached = TrajectoryFixtures.row(new int[] {1, 2, 3}, 1, 0, 0.5f);
        Interaction it = Interaction.builder("c1")
                .modelResponse(response(new int[] {9}, new int[] {9}, 9))
                .tensorData(cached)
                .reward(0.5)
                .build();

        assertThat(InteractionTensors.toTensorDict(it)).isSameAs(cached);
    }

    @Test
    void aConcatChildOfAPrecomputedInt64ParentReadsItsRow() {
        TensorDict parentRow = TensorDict.builder()
                .put("input_ids", Int64Tensor.matrix(new long[] {1, 2, 3}))
                .put("loss_mask", Int64Tensor.matrix(new long[] {0, 1, 1}))
                .put("logprobs", Float32Tensor.matrix(new float[] {0, -1f, -2f}))
                .put("versions", Int64Tensor.matrix(new long[] {-1, 7, 7}))
                .put("turn_ids", Int32Tensor.matrix(new int[] {-1, 0, 0}))
                .build();
        Interaction parent = Interaction.builder("p").tensorData(parentRow).build();
        Interaction child = concatChild("c", parent, new int[] {1, 2, 3, 4}, new int[] {5}, 8);

        TensorDict row = InteractionTensors.toTensorDict(child);

        assertThat(row.int32("loss_mask")).isEqualTo(Int32Tensor.matrix(new int[] {0, 1, 1, 0, 1}));
        assertThat(row.int32("versions")).isEqualTo(Int32Tensor.matrix(new int[] {-1, 7, 7, -1, 8}));
        assertThat(row.float32("logprobs")).isEqualTo(Float32Tensor.matrix(new float[] {0, -1f, -2f, 0, -0.25f}));
        assertThat(row.int32("turn_ids")).isEqualTo(Int32Tensor.matrix(new int[] {-1, 0, 0, -1, 1}));
    }

    @Test
    void aPrecomputedParentWithoutTurnIdsIsAContractErrorNamingTheKey() {
        TensorDict parentRow = TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(new int[] {1, 2}))
                .put("loss_mask", Int32Tensor.matrix(new int[] {0, 1}))
                .put("logprobs", Float32Tensor.matrix(new float[] {0, -1f}))
                .put("versions", Int32Tensor.matrix(new int[] {-1, 7}))
                .build();
        Interaction parent = Interaction.builder("p").tensorData(parentRow).build();
        Interaction child = concatChild("c", parent, new int[] {1, 2, 3}, new int[] {5}, 8);

        assertThatThrownBy(() -> InteractionTensors.toTensorDict(child))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("interaction 'c' concatenates parent 'p', whose row needs 'turn_ids' of shape [1, L],"
                        + " got no such key");
    }

    @Test
    void anInteractionWithoutTensorDataIsAContractError() {
        Interaction textOnly = Interaction.builder("c1").reward(1.0).build();

        assertThatThrownBy(() -> InteractionTensors.toTensorDict(textOnly))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("interaction 'c1' has no tensor data (external-API mode); text-only interactions cannot"
                        + " be trained on");
    }

    @Test
    void aConcatAncestorWithoutTensorDataIsAContractErrorNamingBoth() {
        Interaction parent = Interaction.builder("p").reward(1.0).build();
        Interaction child = concatChild("c", parent, new int[] {1, 2, 3}, new int[] {5}, 8);

        assertThatThrownBy(() -> InteractionTensors.toTensorDict(child))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessageStartingWith("interaction 'p' (CONCAT ancestor of interaction 'c') has no tensor data");
    }

    @Test
    void aResultBecomesItsInteractionsRowsPaddedInInsertionOrder() {
        Interaction b = interaction("b", new int[] {1, 2, 3}, new int[] {4, 5}, 1.0);
        Interaction a = interaction("a", new int[] {1}, new int[] {2}, 0.0);

        TensorDict rows = InteractionTensors.toTensorDict(result(b, a), 7, 1);

        assertThat(rows.int32("input_ids"))
                .isEqualTo(Int32Tensor.matrix(new int[] {1, 2, 3, 4, 5}, new int[] {1, 2, 0, 0, 0}));
        assertThat(rows.int32("versions"))
                .isEqualTo(Int32Tensor.matrix(new int[] {-1, -1, -1, 3, 3}, new int[] {-1, 3, -1, -1, -1}));
        assertThat(rows.float32("rewards")).isEqualTo(Float32Tensor.vector(1f, 0f));
    }

    @Test
    void aResultWithAnInteractionWithoutTensorDataIsAContractErrorNamingTaskSlotAndId() {
        Interaction ok = interaction("a", 1.0);
        Interaction textOnly = Interaction.builder("b").reward(1.0).build();

        assertThatThrownBy(() -> InteractionTensors.toTensorDict(result(ok, textOnly), 7, 2))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("task 7 slot 2: interaction 'b' has no tensor data (external-API mode); text-only"
                        + " interactions cannot be trained on");
    }

    @Test
    void aNonFiniteRewardIsAContractErrorNamingTaskSlotAndId() {
        assertThatThrownBy(() -> InteractionTensors.toTensorDict(result(interaction("a", Double.NaN)), 7, 0))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("task 7 slot 0: interaction 'a' has a non-finite reward: NaN");
        assertThatThrownBy(() -> InteractionTensors.toTensorDict(
                        result(interaction("a", 1.0).withRewards(1.0, Double.POSITIVE_INFINITY)), 7, 0))
                .hasMessage("task 7 slot 0: interaction 'a' has a non-finite original_reward: Infinity");
        assertThatThrownBy(() -> InteractionTensors.toTensorDict(
                        result(interaction("a", 1.0).withRolloutReward(Double.NEGATIVE_INFINITY)), 7, 0))
                .hasMessage("task 7 slot 0: interaction 'a' has a non-finite rollout_reward: -Infinity");
    }

    @Test
    void aNonFiniteRewardInPrecomputedTensorDataIsAContractError() {
        TensorDict cached = TrajectoryFixtures.row(new int[] {1, 2}, 1, 0, Float.NaN);
        Interaction it = Interaction.builder("a").tensorData(cached).reward(1.0).build();

        assertThatThrownBy(() -> InteractionTensors.toTensorDict(result(it), 7, 3))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("task 7 slot 3: interaction 'a' has a non-finite value in tensor 'rewards': NaN");
    }

    @Test
    void aParentMismatchInsideAResultNamesTheTaskAndSlotToo() {
        Interaction parent = interaction("p", new int[] {1, 2}, new int[] {3, 4}, 0.0);
        Interaction child = concatChild("c", parent, new int[] {1, 2, 9, 4, 5}, new int[] {7}, 9);

        assertThatThrownBy(() -> InteractionTensors.toTensorDict(result(parent, child), 7, 1))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessageStartingWith("task 7 slot 1: interaction 'c' (CONCAT) does not extend its parent 'p'");
    }

    @Test
    void interactionsSharingAParentEachGetThePrefix() {
        Interaction parent = interaction("p", new int[] {1}, new int[] {2}, 0.0);
        Interaction left = concatChild("l", parent, new int[] {1, 2, 3}, new int[] {4}, 5);
        Interaction right = concatChild("r", parent, new int[] {1, 2, 8}, new int[] {9, 9}, 6);

        TensorDict rows = InteractionTensors.toTensorDict(result(parent, left, right), 7, 0);

        assertThat(rows.int32("loss_mask"))
                .isEqualTo(Int32Tensor.matrix(
                        new int[] {0, 1, 0, 0, 0}, new int[] {0, 1, 0, 1, 0}, new int[] {0, 1, 0, 1, 1}));
        assertThat(rows.int32("turn_ids"))
                .isEqualTo(Int32Tensor.matrix(
                        new int[] {-1, 0, 0, 0, 0}, new int[] {-1, 0, -1, 1, 0}, new int[] {-1, 0, -1, 1, 1}));
    }

    @Test
    void anEmptyResultIsAnEmptyDict() {
        assertThat(InteractionTensors.toTensorDict(result(), 7, 0)).isSameAs(TensorDict.empty());
    }
}
