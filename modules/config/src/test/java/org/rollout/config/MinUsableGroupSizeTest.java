package org.rollout.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.rollout.api.InvalidConfigException;

class MinUsableGroupSizeTest {

    @ParameterizedTest(name = "explicit={0}, n_samples={1}, group statistics={2} -> {3}")
    @CsvSource(
            nullValues = "null",
            value = {
                // derived: group statistics need two observations, a singleton target is complete
                "null, 8, true, 2",
                "null, 2, true, 2",
                "null, 1, true, 1",
                // derived: batch-relative PPO and REINFORCE keep singletons
                "null, 8, false, 1",
                "null, 1, false, 1",
                // explicit wins
                "1, 8, false, 1",
                "5, 8, false, 5",
                "8, 8, true, 8",
                "3, 8, true, 3",
                // explicit 1 with group statistics is allowed for a singleton target group
                "1, 1, true, 1",
            })
    void resolvesTheMinimumAsTheDerivationTableSays(
            Integer explicit, int nSamples, boolean groupStatistics, int expected) {
        assertThat(MinUsableGroupSize.resolve(explicit, nSamples, groupStatistics))
                .isEqualTo(expected);
    }

    @Test
    void rejectsAnExplicitValueBelowOne() {
        assertThatThrownBy(() -> MinUsableGroupSize.resolve(0, 4, false))
                .isInstanceOfSatisfying(
                        InvalidConfigException.class, e -> assertThat(e.key()).isEqualTo("min_usable_group_size"))
                .hasMessage("invalid value for 'min_usable_group_size': 0 (allowed: an integer >= 1)");
    }

    @Test
    void rejectsAnExplicitValueAboveNSamples() {
        assertThatThrownBy(() -> MinUsableGroupSize.resolve(5, 4, false))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'min_usable_group_size': 5 (allowed: an integer <= n_samples (4),"
                        + " the group size)");
    }

    @Test
    void rejectsAnExplicitOneUnderGroupStatisticsBecauseALoneSurvivorHasNoPeers() {
        assertThatThrownBy(() -> MinUsableGroupSize.resolve(1, 4, true))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'min_usable_group_size': 1 (allowed: an integer >= 2, because"
                        + " min_usable_group_size must be at least 2 while group statistics are in use (group-level"
                        + " actor.reward_norm or actor.adv_norm, or gconfig.reward_normalization): a lone survivor"
                        + " has no peers)");
    }

    @Test
    void rejectsNSamplesBelowOne() {
        assertThatThrownBy(() -> MinUsableGroupSize.resolve(null, 0, false))
                .isInstanceOfSatisfying(
                        InvalidConfigException.class, e -> assertThat(e.key()).isEqualTo("n_samples"))
                .hasMessage("invalid value for 'n_samples': 0 (allowed: an integer >= 1)");
    }

    @Test
    void errorsCanBePlacedUnderTheirConfigSection() {
        assertThatThrownBy(() -> {
                    try {
                        MinUsableGroupSize.resolve(0, 4, false);
                    } catch (InvalidConfigException e) {
                        throw e.under("actor");
                    }
                })
                .hasMessageStartingWith("invalid value for 'actor.min_usable_group_size': 0");
    }

    @Test
    void evaluationRequiresFullGroups() {
        assertThat(MinUsableGroupSize.forEval(2)).isEqualTo(2);
        assertThat(MinUsableGroupSize.forEval(1)).isEqualTo(1);
        assertThatThrownBy(() -> MinUsableGroupSize.forEval(0))
                .hasMessage("invalid value for 'n_samples': 0 (allowed: an integer >= 1)");
    }

    @Test
    void validatesGroupSizeAtLeastOne() {
        assertThatThrownBy(() -> MinUsableGroupSize.validateGroupSizes(0, 1))
                .isInstanceOfSatisfying(
                        InvalidConfigException.class, e -> assertThat(e.key()).isEqualTo("group_size"))
                .hasMessage("invalid value for 'group_size': 0 (allowed: an integer >= 1)");
    }

    @Test
    void validatesTheMinimumBetweenOneAndTheGroupSize() {
        assertThatThrownBy(() -> MinUsableGroupSize.validateGroupSizes(4, 5))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'min_usable_group_size': 5 (allowed: an integer between 1 and"
                        + " group_size (4))");
        assertThatThrownBy(() -> MinUsableGroupSize.validateGroupSizes(4, 0))
                .hasMessage("invalid value for 'min_usable_group_size': 0 (allowed: an integer between 1 and"
                        + " group_size (4))");
        MinUsableGroupSize.validateGroupSizes(4, 4);
        MinUsableGroupSize.validateGroupSizes(1, 1);
    }
}
