package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
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

    @Test
    void aMemberDownedWhileThisNodeStillReachedItCountsOnThisSideInEitherOrder() {
        // A one-way cut into node-1 of three, seen from node-3: the resolver downs node-2 (reachable
        // from node-3, but node-1 said it could not hear it) and node-1 (unreachable). node-3 is the
        // majority side, with node-2, and must not down itself, although node-1 has the lowest
        // address and would win a tie of one against one.
        MinorityGuard.Tally tally = new MinorityGuard.Tally(Duration.ofMinutes(1));
        tally.downed(node(2), true, 0);
        assertThat(tally.isMinority(Set.of(node(3), node(1)), 1)).isFalse();
        tally.downed(node(1), false, 2);
        assertThat(tally.isMinority(Set.of(node(3)), 3)).isFalse();
        assertThat(tally.thisSide(Set.of(node(3)))).containsExactlyInAnyOrder(node(3), node(2));
        // What the guard decided before it counted node-2 on this side.
        assertThat(MinorityGuard.isMinority(Set.of(node(3)), Set.of(node(1)))).isTrue();

        MinorityGuard.Tally reversed = new MinorityGuard.Tally(Duration.ofMinutes(1));
        reversed.downed(node(1), false, 0);
        assertThat(reversed.isMinority(Set.of(node(3), node(2)), 1)).isFalse();
        reversed.downed(node(2), true, 2);
        assertThat(reversed.isMinority(Set.of(node(3)), 3)).isFalse();
    }

    @Test
    void cutOffAloneAfterDowningTheOthersIsStillTheMinority() {
        MinorityGuard.Tally tally = new MinorityGuard.Tally(Duration.ofMinutes(1));
        tally.downed(node(2), false, 0);
        assertThat(tally.isMinority(Set.of(node(1), node(3)), 1)).isFalse();
        tally.downed(node(3), false, 2);
        assertThat(tally.isMinority(Set.of(node(1)), 3)).isTrue();
    }

    @Test
    void downedMembersAreForgottenAfterTheWindowOrWhenANodeJoinsOnTheirAddress() {
        MinorityGuard.Tally tally = new MinorityGuard.Tally(Duration.ofNanos(100));
        tally.downed(node(2), false, 0);
        tally.downed(node(3), false, 0);
        assertThat(tally.isMinority(Set.of(node(1)), 200)).isFalse();
        assertThat(tally.lost()).isEmpty();

        tally.downed(node(2), false, 300);
        tally.downed(node(3), false, 300);
        tally.joined(node(3));
        assertThat(tally.lost()).containsExactly(node(2));
        assertThat(tally.isMinority(Set.of(node(1), node(3)), 310)).isFalse();
    }
}
