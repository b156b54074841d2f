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
    void aTrainerRanksRecordBehavesAsAPlainSetOfItsIdsAndStaysCompact() {
        // Rank 2 of 3 takes ids 2, 5, 8, …: its mark moves over them as if they were consecutive.
        Random random = new Random(20261206);
        TakenIds ids = new TakenIds(new RankShare(2, 3));
        Set<Long> plain = new HashSet<>();
        List<Long> window = new java.util.ArrayList<>();
        long next = 2;
        int most = 0;
        for (int step = 0; step < 100_000; step++) {
            while (window.size() < 64) {
                window.add(next);
                next += 3;
            }
            // Mostly the next of the rank's groups to end (out of order within the window); now
            // and then an old id comes back (a late duplicate), is forgotten (and taken again
            // later), or is looked up.
            long old = 2 + 3L * random.nextInt((int) Math.max(1, (next - 2) / 3));
            int op = random.nextInt(100);
            if (op < 90) {
                long id = window.remove(random.nextInt(window.size()));
                assertThat(ids.add(id)).as("add %d at step %d", id, step).isEqualTo(plain.add(id));
            } else if (op < 95) {
                assertThat(ids.add(old)).as("add %d at step %d", old, step).isEqualTo(plain.add(old));
            } else if (op < 96) {
                boolean forgotten = plain.remove(old);
                assertThat(ids.remove(old))
                        .as("remove %d at step %d", old, step)
                        .isEqualTo(forgotten);
                if (forgotten) {
                    window.add(old); // its outcome is taken again later
                }
            } else {
                assertThat(ids.contains(old)).as("contains %d", old).isEqualTo(plain.contains(old));
            }
            most = Math.max(most, ids.held());
        }
        for (long id = 0; id < next + 10; id++) {
            assertThat(ids.contains(id)).as("contains %d at the end", id).isEqualTo(plain.contains(id));
        }
        assertThat(most).as("ids held at most, of %d taken", plain.size()).isLessThan(5_000);

        ids.takenBelow(next + 4); // the rank's ids below it: up to next + 3
        assertThat(ids.contains(next + 3)).isTrue();
        assertThat(ids.contains(next + 6)).isFalse();
        assertThat(ids.mark()).isEqualTo(next + 6);
        assertThat(ids.held()).isZero();
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
