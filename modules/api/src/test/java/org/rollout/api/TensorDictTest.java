package org.rollout.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TensorDictTest {
    private static final Int32Tensor IDS = Int32Tensor.matrix(new int[] {1, 2, 3}, new int[] {4, 5, 0});
    private static final BoolTensor MASK =
            BoolTensor.matrix(new boolean[] {true, true, true}, new boolean[] {true, true, false});
    private static final Float32Tensor REWARDS = Float32Tensor.vector(1f, 0f);

    private static TensorDict rollout() {
        return TensorDict.builder()
                .put(TensorDict.INPUT_IDS, IDS)
                .put(TensorDict.ATTENTION_MASK, MASK)
                .put(TensorDict.REWARDS, REWARDS)
                .build();
    }

    @Test
    void typedGettersReturnTheirDtype() {
        TensorDict d = rollout().with("versions64", Int64Tensor.vector(1, 2)).with("scalar", Float32Tensor.scalar(1f));
        assertThat(d.int32(TensorDict.INPUT_IDS)).isSameAs(IDS);
        assertThat(d.bool(TensorDict.ATTENTION_MASK)).isSameAs(MASK);
        assertThat(d.float32(TensorDict.REWARDS)).isSameAs(REWARDS);
        assertThat(d.int64("versions64").get(1)).isEqualTo(2L);
        assertThat(d.tensor("scalar").rank()).isZero();
    }

    @Test
    void aTypedGetterOfTheWrongDtypeNamesKeyAndBothDtypes() {
        assertThatThrownBy(() -> rollout().float32(TensorDict.INPUT_IDS))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("tensor 'input_ids' has dtype int32, expected float32 (int32[2, 3])");
        assertThatThrownBy(() -> rollout().int64(TensorDict.ATTENTION_MASK))
                .hasMessage("tensor 'attention_mask' has dtype bool, expected int64 (bool[2, 3])");
    }

    @Test
    void aMissingKeyNamesItAndTheKeysPresent() {
        assertThatThrownBy(() -> rollout().int32(TensorDict.LOSS_MASK))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("missing tensor key 'loss_mask' (keys: [input_ids, attention_mask, rewards])");
        assertThat(rollout().get(TensorDict.LOSS_MASK)).isNull();
        assertThat(rollout().has(TensorDict.LOSS_MASK)).isFalse();
        assertThat(rollout().has(TensorDict.REWARDS)).isTrue();
    }

    @Test
    void batchSizeIsTheAttentionMasksRowsFirst() {
        TensorDict d = TensorDict.builder()
                .put(TensorDict.REWARDS, Float32Tensor.vector(1f, 2f, 3f))
                .put(TensorDict.ATTENTION_MASK, MASK)
                .build();
        assertThat(d.batchSize()).isEqualTo(2);
    }

    @Test
    void batchSizeFallsBackToTheFirstTensorOfRankOneOrMore() {
        TensorDict d = TensorDict.builder()
                .put(TensorDict.ROLLOUT_REWARD, Float32Tensor.scalar(1f))
                .put(TensorDict.REWARDS, Float32Tensor.vector(1f, 2f, 3f))
                .put(TensorDict.INPUT_IDS, IDS)
                .build();
        assertThat(d.batchSize()).isEqualTo(3);
    }

    @Test
    void batchSizeIsZeroWithoutTensorsOfRankOneOrMore() {
        assertThat(TensorDict.empty().batchSize()).isZero();
        assertThat(TensorDict.of(Map.of(TensorDict.ROLLOUT_REWARD, Float32Tensor.scalar(1f)))
                        .batchSize())
                .isZero();
        TensorDict scalarMask = TensorDict.builder()
                .put(TensorDict.ATTENTION_MASK, BoolTensor.scalar(true))
                .put(TensorDict.REWARDS, REWARDS)
                .build();
        assertThat(scalarMask.batchSize()).isEqualTo(2);
    }

    @Test
    void keysKeepInsertionOrder() {
        Map<String, Tensor> entries = new LinkedHashMap<>();
        entries.put("z", REWARDS);
        entries.put("a", IDS);
        entries.put("m", MASK);
        assertThat(TensorDict.of(entries).keys()).containsExactly("z", "a", "m");
        assertThat(TensorDict.of(entries).asMap().keySet()).containsExactly("z", "a", "m");
    }

    @Test
    void withReplacesInPlaceOrAppendsAndLeavesTheOriginal() {
        TensorDict d = rollout();
        TensorDict replaced = d.with(TensorDict.INPUT_IDS, IDS.reshape(3, 2));
        assertThat(replaced.keys()).containsExactly("input_ids", "attention_mask", "rewards");
        assertThat(replaced.tensor(TensorDict.INPUT_IDS).shape()).containsExactly(3, 2);
        assertThat(d.tensor(TensorDict.INPUT_IDS).shape()).containsExactly(2, 3);
        assertThat(d.with("extra", REWARDS).keys()).containsExactly("input_ids", "attention_mask", "rewards", "extra");
        assertThat(d.size()).isEqualTo(3);
    }

    @Test
    void withoutRemovesAKeyOrReturnsTheSameDict() {
        TensorDict d = rollout();
        assertThat(d.without(TensorDict.ATTENTION_MASK).keys()).containsExactly("input_ids", "rewards");
        assertThat(d.without("absent")).isSameAs(d);
        assertThat(TensorDict.of(Map.of("a", REWARDS)).without("a")).isSameAs(TensorDict.empty());
    }

    @Test
    void theMapViewIsUnmodifiable() {
        assertThatThrownBy(() -> rollout().asMap().put("x", REWARDS)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> rollout().keys().remove("rewards")).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void builderBuildsOnceAndRejectsNulls() {
        TensorDict.Builder b = TensorDict.builder().put("a", REWARDS);
        assertThat(b.build().keys()).containsExactly("a");
        assertThatThrownBy(b::build)
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("this builder has already built its dict");
        assertThatThrownBy(() -> b.put("b", REWARDS)).hasMessage("this builder has already built its dict");
        assertThatThrownBy(() -> TensorDict.builder().put("a", null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("tensor for key 'a'");
        assertThatThrownBy(() -> TensorDict.builder().put(null, REWARDS)).hasMessage("tensor key");
    }

    @Test
    void toBuilderStartsFromTheEntriesWithoutChangingTheOriginal() {
        TensorDict d = rollout();
        TensorDict changed =
                d.toBuilder().remove(TensorDict.INPUT_IDS).put("x", REWARDS).build();
        assertThat(changed.keys()).containsExactly("attention_mask", "rewards", "x");
        assertThat(d.keys()).containsExactly("input_ids", "attention_mask", "rewards");
    }

    @Test
    void equalityComparesEntriesAcrossViews() {
        TensorDict a = TensorDict.of(Map.of("ids", IDS.row(1)));
        TensorDict b = TensorDict.of(Map.of("ids", Int32Tensor.vector(4, 5, 0)));
        assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
        assertThat(a).isNotEqualTo(TensorDict.of(Map.of("ids", Int32Tensor.vector(4, 5, 1))));
    }

    @Test
    void forEachVisitsInOrder() {
        StringBuilder seen = new StringBuilder();
        rollout().forEach((k, v) -> seen.append(k).append(' '));
        assertThat(seen).hasToString("input_ids attention_mask rewards ");
        assertThat(TensorDict.empty().isEmpty()).isTrue();
    }

    @Test
    void toStringListsKeysWithDtypeAndShapeOnly() {
        assertThat(rollout())
                .hasToString("TensorDict{input_ids=int32[2, 3], attention_mask=bool[2, 3], rewards=float32[2]}");
        assertThat(TensorDict.empty()).hasToString("TensorDict{}");
    }

    @Test
    void wellKnownKeysAreAReaLsNames() {
        assertThat(List.of(
                        TensorDict.INPUT_IDS,
                        TensorDict.ATTENTION_MASK,
                        TensorDict.LOSS_MASK,
                        TensorDict.LOGPROBS,
                        TensorDict.VERSIONS,
                        TensorDict.REWARDS,
                        TensorDict.TURN_IDS,
                        TensorDict.ORIGINAL_REWARDS,
                        TensorDict.IS_TRUNCATED,
                        TensorDict.ROLLOUT_REWARD))
                .containsExactly(
                        "input_ids",
                        "attention_mask",
                        "loss_mask",
                        "logprobs",
                        "versions",
                        "rewards",
                        "turn_ids",
                        "original_rewards",
                        "is_truncated",
                        "rollout_reward");
    }
}
