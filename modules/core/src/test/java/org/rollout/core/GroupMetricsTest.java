package org.rollout.core;

import static java.util.Map.entry;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class GroupMetricsTest {

    @Test
    void exportsTheSevenKeysInOrderWithBooleansAsNumbers() {
        assertThat(GroupMetrics.merged(4, 3).asMap())
                .containsExactly(
                        entry("target_slot_count", 4.0),
                        entry("usable_slot_count", 3.0),
                        entry("trainable_slot_count", 3.0),
                        entry("fully_masked_group", 0.0),
                        entry("singleton_slot_group", 0.0),
                        entry("pre_filter_usable_slot_yield", 0.75),
                        entry("pre_filter_trainable_slot_yield", 0.75));
    }

    @Test
    void aFullyMaskedGroupHasNothingUsableOrTrainable() {
        assertThat(GroupMetrics.dropped(2, 0).asMap())
                .containsExactly(
                        entry("target_slot_count", 2.0),
                        entry("usable_slot_count", 0.0),
                        entry("trainable_slot_count", 0.0),
                        entry("fully_masked_group", 1.0),
                        entry("singleton_slot_group", 0.0),
                        entry("pre_filter_usable_slot_yield", 0.0),
                        entry("pre_filter_trainable_slot_yield", 0.0));
    }

    @Test
    void aDroppedSingletonIsUsableButNotTrainable() {
        GroupMetrics m = GroupMetrics.dropped(4, 1);

        assertThat(m.singletonSlotGroup()).isTrue();
        assertThat(m.preFilterUsableSlotYield()).isEqualTo(0.25);
        assertThat(m.preFilterTrainableSlotYield()).isEqualTo(0.0);
    }

    @Test
    void rejectsCountsOutOfRange() {
        assertThatThrownBy(() -> new GroupMetrics(2, 3, 0))
                .hasMessage("group metrics need 1 <= G and 0 <= U <= G, got G=2, U=3");
        assertThatThrownBy(() -> new GroupMetrics(4, 3, 2)).hasMessage("trainable_slot_count must be 0 or U=3, got 2");
    }
}
