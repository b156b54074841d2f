package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The collector's compact record of the task ids it took: a set, bounded by the ids in flight. */
class TakenIdsTest {

    @Test
    void behavesAsAPlainSetUnderRandomAddsRemovesAndLookups() {
        Random random = new Random(20261204);
        TakenIds ids = new TakenIds();
        Set<Long> plain = new HashSet<>();
        long next = 0;
        for (int step = 0; step < 200_000; step++) {
            int op = random.nextInt(10);
            // Mostly recent ids, as a collector sees them: groups end out of order around the
            // newest, now and then an old one comes back (a late duplicate, a forgotten outcome).
            long id = random.nextInt(20) == 0
                    ? (long) random.nextInt((int) Math.max(1, next))
                    : Math.max(0, next - random.nextInt(64));
            if (op < 6) {
                assertThat(ids.add(id)).as("add %d at step %d", id, step).isEqualTo(plain.add(id));
                next = Math.max(next, id + 1 + random.nextInt(2));
            } else if (op < 7) {
                assertThat(ids.remove(id)).as("remove %d at step %d", id, step).isEqualTo(plain.remove(id));
            } else {
                assertThat(ids.contains(id))
                        .as("contains %d at step %d", id, step)
                        .isEqualTo(plain.contains(id));
            }
        }
        for (long id = 0; id < next + 10; id++) {
            assertThat(ids.contains(id)).as("contains %d at the end", id).isEqualTo(plain.contains(id));
        }
    }

    @Test
    void holdsOnlyTheIdsBetweenTheOldestNotTakenAndTheNewestTaken() {
        TakenIds ids = new TakenIds();
        // A million tasks, taken out of order within a window of 256.
        Random random = new Random(7);
        List<Long> window = new java.util.ArrayList<>();
        long next = 0;
        int most = 0;
        while (next < 1_000_000 || !window.isEmpty()) {
            while (window.size() < 256 && next < 1_000_000) {
                window.add(next++);
            }
            long id = window.remove(random.nextInt(window.size()));
            assertThat(ids.add(id)).isTrue();
            most = Math.max(most, ids.held());
        }
        assertThat(ids.held()).isZero();
        assertThat(ids.mark()).isEqualTo(1_000_000);
        assertThat(most).as("ids held at most").isLessThan(10_000);
        assertThat(ids.add(123_456)).as("a late duplicate").isFalse();

        // Forgotten below the mark: taken again once, then a duplicate again.
        assertThat(ids.remove(42)).isTrue();
        assertThat(ids.contains(42)).isFalse();
        assertThat(ids.add(42)).isTrue();
        assertThat(ids.add(42)).isFalse();
    }

    @Test
    void aRangeDeclaredTakenCountsAsTakenAndTheMarkMovesOnOverIdsTakenAboveIt() {
        TakenIds ids = new TakenIds();
        ids.add(5);
        ids.add(12);
        ids.add(10);
        ids.takenBelow(10);
        assertThat(ids.contains(3)).isTrue();
        assertThat(ids.contains(5)).isTrue();
        assertThat(ids.contains(11)).isFalse();
        assertThat(ids.mark()).as("10 was taken, 11 was not").isEqualTo(11);
        assertThat(ids.held()).isEqualTo(1);
        ids.takenBelow(4);
        assertThat(ids.mark()).as("a lower mark changes nothing").isEqualTo(11);
    }
}
