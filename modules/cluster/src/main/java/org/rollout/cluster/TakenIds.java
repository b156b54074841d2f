package org.rollout.cluster;

import java.util.Collection;
import java.util.HashSet;
import java.util.Set;

/**
 * The task ids a collector has taken an outcome of, kept compact: task ids are handed out in
 * order and nearly every one is taken in the end, so the set is a mark below which every id is
 * taken, the ids taken above it, and the few below it that were forgotten again. It holds about as
 * many ids as there are tasks between the oldest one not yet taken and the newest taken, instead of
 * every id of the run (at 3,125 groups/s, ~11 million ids and ~0.6 GB an hour as a plain set).
 *
 * <p>As a set of ids it behaves exactly as a {@link HashSet} would, except after {@link
 * #takenBelow}, which declares a range taken at once.
 */
final class TakenIds {
    /** Every index below it is taken, except those in {@link #forgotten}. */
    private long below;

    private final Set<Long> above = new HashSet<>();
    private final Set<Long> forgotten = new HashSet<>();
    /** The ids this collector takes are {@code offset + k·step}; kept by their index {@code k}. */
    private final long step;

    private final long offset;
    /** Ids not of that form, kept one by one (none is expected: a task goes to its rank's collector). */
    private final Set<Long> foreign = new HashSet<>();

    /** For a collector that takes every task id. */
    TakenIds() {
        this(RankShare.ALONE);
    }

    /** For trainer rank {@code share}'s collector, which takes the rank's ids only. */
    TakenIds(RankShare share) {
        this.step = share.ranks();
        this.offset = share.rank();
    }

    boolean contains(long id) {
        if (!owned(id)) {
            return foreign.contains(id);
        }
        long k = index(id);
        return k < below ? !forgotten.contains(k) : above.contains(k);
    }

    /** Takes {@code id}; false when it was taken already. */
    boolean add(long id) {
        if (!owned(id)) {
            return foreign.add(id);
        }
        long k = index(id);
        if (k < below) {
            return forgotten.remove(k);
        }
        if (!above.add(k)) {
            return false;
        }
        while (above.remove(below)) {
            below++;
        }
        return true;
    }

    void addAll(Collection<Long> ids) {
        ids.forEach(this::add);
    }

    /** Forgets {@code id}, so that its outcome is taken again; false when it was not taken. */
    boolean remove(long id) {
        if (!owned(id)) {
            return foreign.remove(id);
        }
        long k = index(id);
        return k < below ? forgotten.add(k) : above.remove(k);
    }

    /** Every id below {@code mark} counts as taken from now on (a successor's tasks start there). */
    void takenBelow(long mark) {
        long k = -Math.floorDiv(offset - mark, step); // the first index whose id is at or above mark
        foreign.removeIf(id -> id < mark);
        if (k <= below) {
            return;
        }
        above.removeIf(i -> i < k);
        below = k;
        while (above.remove(below)) {
            below++;
        }
    }

    /** Ids held one by one: taken above the mark, and forgotten below it. */
    int held() {
        return above.size() + forgotten.size() + foreign.size();
    }

    /** Every id below it is taken (unless forgotten). */
    long mark() {
        return offset + below * step;
    }

    private boolean owned(long id) {
        return id >= offset && (id - offset) % step == 0;
    }

    private long index(long id) {
        return (id - offset) / step;
    }
}
