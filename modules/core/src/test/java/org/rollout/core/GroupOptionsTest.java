package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;

class GroupOptionsTest {

    @Test
    void takesTheGroupSizeAndFlagsFromTheGenerationConfig() {
        GenerationConfig g = GenerationConfig.builder()
                .nSamples(8)
                .dropIncompleteGroup(true)
                .rewardNormalization(true)
                .rewardNormalizationUseStd(false)
                .build();

        assertThat(GroupOptions.from(g, 2)).isEqualTo(new GroupOptions(8, 2, true, true, false));
    }

    @Test
    void defaultsAreAGroupOfOneWithoutFlags() {
        assertThat(GroupOptions.from(GenerationConfig.defaults(), 1))
                .isEqualTo(new GroupOptions(1, 1, false, false, true));
    }

    @Test
    void rejectsAMinimumAboveTheGroupSize() {
        assertThatThrownBy(() -> new GroupOptions(4, 5, false, false, true))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'min_usable_group_size': 5");
    }

    @Test
    void rejectsAGroupSizeBelowOne() {
        assertThatThrownBy(() -> new GroupOptions(0, 1, false, false, true))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'group_size': 0");
    }
}
