package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.rollout.api.Float32Tensor;
import org.rollout.api.TensorDict;

class AcceptFiltersTest {
    private static TensorDict rewards(float... r) {
        return TensorDict.builder()
                .put(TensorDict.REWARDS, Float32Tensor.vector(r))
                .build();
    }

    @Test
    void dropEqualRewardsRejectsAGroupWithoutRewardSpread() throws Exception {
        assertThat(AcceptFilters.dropEqualRewards().accept(rewards(1f, 1f, 1f))).isFalse();
        assertThat(AcceptFilters.dropEqualRewards().accept(rewards(0f, 0f))).isFalse();
    }

    @Test
    void dropEqualRewardsAcceptsAGroupWithSpreadOrNothingToJudge() throws Exception {
        assertThat(AcceptFilters.dropEqualRewards().accept(rewards(1f, 0f, 1f))).isTrue();
        assertThat(AcceptFilters.dropEqualRewards().accept(rewards(0.5f))).isTrue();
        assertThat(AcceptFilters.dropEqualRewards().accept(TensorDict.empty())).isTrue();
    }

    @Test
    void allAcceptsEverything() throws Exception {
        assertThat(AcceptFilters.all().accept(rewards(1f, 1f))).isTrue();
    }
}
