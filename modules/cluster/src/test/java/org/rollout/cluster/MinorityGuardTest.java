package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Set;
import org.apache.pekko.actor.Address;
import org.junit.jupiter.api.Test;

class MinorityGuardTest {
    private static Address node(int i) {
        return new Address("pekko", "rollout", "10.0.0." + i, 25520);
    }

    @Test
    void fewerMembersHereThanLostIsTheMinority() {
        // Cut off alone after downing the other two (the split brain this guard exists for).
        assertThat(MinorityGuard.isMinority(Set.of(node(1)), Set.of(node(2), node(3))))
                .isTrue();
        // The two that downed it.
        assertThat(MinorityGuard.isMinority(Set.of(node(2), node(3)), Set.of(node(1))))
                .isFalse();
        // A crashed node of five, then another: still the majority.
        assertThat(MinorityGuard.isMinority(Set.of(node(1), node(2), node(3)), Set.of(node(4), node(5))))
                .isFalse();
        assertThat(MinorityGuard.isMinority(Set.of(node(1), node(2)), Set.of(node(3), node(4), node(5))))
                .isTrue();
    }

    @Test
    void onATieTheSideWithTheLowestAddressStaysAsKeepMajorityDecides() {
        assertThat(MinorityGuard.isMinority(Set.of(node(1)), Set.of(node(2)))).isFalse();
        assertThat(MinorityGuard.isMinority(Set.of(node(2)), Set.of(node(1)))).isTrue();
        assertThat(MinorityGuard.isMinority(Set.of(node(1), node(4)), Set.of(node(2), node(3))))
                .isFalse();
        assertThat(MinorityGuard.isMinority(Set.of(node(2), node(3)), Set.of(node(1), node(4))))
                .isTrue();
    }

    @Test
    void nothingLostIsNeverTheMinority() {
        assertThat(MinorityGuard.isMinority(Set.of(node(1)), Set.of())).isFalse();
    }
}
