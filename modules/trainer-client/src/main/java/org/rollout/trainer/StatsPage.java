package org.rollout.trainer;

import java.util.List;

/**
 * An answer of {@link RolloutClient#stats}: the statistics lines of versions at or after the asked
 * version, and how far they are final.
 *
 * <p>A trainer that logs each line once asks again with {@code since_version = completeBelow} and
 * skips the (version, scope) pairs it has logged already: lines at or above {@code completeBelow}
 * may be answered again, and more may come for those versions (an evaluation pass's line is
 * written when the pass ends, which can be after later versions' training lines).
 *
 * @param lines in version order; the lines of one version in the order the engine wrote them
 * @param completeBelow every line of a version below it has been written: asking with {@code
 *     since_version = completeBelow} misses nothing
 */
public record StatsPage(List<VersionStats> lines, int completeBelow) {
    public StatsPage {
        lines = List.copyOf(lines);
    }
}
