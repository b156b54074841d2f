package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.rollout.config.RolloutConfig;
import org.rollout.config.RolloutSettings;

/** The group options and staleness budget core builds from validated settings. */
class OptionsFromSettingsTest {

    private static RolloutSettings load(String... overrides) {
        return RolloutConfig.load(null, List.of(overrides));
    }

    @Test
    void trainGroupOptionsCarryTheGroupFlags() {
        RolloutSettings s = load(
                "gconfig.n_samples=4",
                "gconfig.drop_incomplete_group=true",
                "gconfig.reward_normalization=true",
                "gconfig.reward_normalization_use_std=false");
        assertThat(GroupOptions.training(s)).isEqualTo(new GroupOptions(4, 2, true, true, false));
    }

    @Test
    void evalGroupOptionsNeedFullGroupsAndNeverNormalise() {
        RolloutSettings s =
                load("gconfig.n_samples=4", "gconfig.reward_normalization=true", "eval_gconfig.n_samples=3");
        assertThat(GroupOptions.evaluation(s)).isEqualTo(new GroupOptions(3, 3, false, false, true));
    }

    @Test
    void stalenessBudgetHasTheConfiguredLimitsAndIsNewEachTime() {
        RolloutSettings s = load(
                "rollout.consumer_batch_size=4",
                "rollout.max_concurrent_rollouts=8",
                "rollout.max_head_offpolicyness=2");
        StalenessBudget b = StalenessBudget.of(s);
        assertThat(b.maxConcurrentRollouts()).isEqualTo(8);
        assertThat(b.consumerBatchSize()).isEqualTo(4);
        assertThat(b.maxHeadOffpolicyness()).isEqualTo(2);
        assertThat(b.capacity()).isEqualTo(8);
        b.onEnqueue();
        b.onAdmit();
        assertThat(StalenessBudget.of(s).running()).isZero();
    }
}
