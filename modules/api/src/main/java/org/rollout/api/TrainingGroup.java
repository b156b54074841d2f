package org.rollout.api;

import java.util.Arrays;
import java.util.Objects;

/**
 * One prompt's merged, accepted rows as a trainer receives them: the group's trajectory rows plus
 * the boundaries and versions a trainer needs to normalise within the group and to correct for
 * staleness.
 *
 * <ul>
 *   <li>{@code rows}: the merged {@link TensorDict}, batch-first, {@code rows.batchSize()} rows;
 *       every row belongs to this prompt, so group statistics never cross prompts (AReaL #1419).
 *   <li>{@code slotIndices}/{@code slotRowCounts}: which slots were usable and how many consecutive
 *       rows each contributed (a slot is one logical rollout; it may export several rows).
 *   <li>{@code dispatchVersion}: the weight version when the group was dispatched; {@code
 *       headVersion}/{@code tailVersion}: the smallest and largest version over generated tokens;
 *       {@code completionVersion}: the version when the group finished.
 *   <li>{@code attempt}: 0 unless the task was re-dispatched after a lost node.
 * </ul>
 *
 * <p>Immutable.
 */
public record TrainingGroup(
        long taskId,
        int attempt,
        TensorDict rows,
        int[] slotIndices,
        int[] slotRowCounts,
        int dispatchVersion,
        int headVersion,
        int tailVersion,
        int completionVersion) {

    public TrainingGroup {
        Objects.requireNonNull(rows, "rows");
        slotIndices = slotIndices.clone();
        slotRowCounts = slotRowCounts.clone();
        if (slotIndices.length != slotRowCounts.length) {
            throw new IllegalArgumentException("task " + taskId + ": " + slotIndices.length + " slot indices but "
                    + slotRowCounts.length + " slot row counts");
        }
        int sum = Arrays.stream(slotRowCounts).sum();
        if (sum != rows.batchSize()) {
            throw new IllegalArgumentException("task " + taskId + ": slot row counts sum to " + sum
                    + " but the group has " + rows.batchSize() + " rows");
        }
    }

    @Override
    public int[] slotIndices() {
        return slotIndices.clone();
    }

    @Override
    public int[] slotRowCounts() {
        return slotRowCounts.clone();
    }

    /** The number of trajectory rows. */
    public int rowCount() {
        return rows.batchSize();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TrainingGroup g
                && taskId == g.taskId
                && attempt == g.attempt
                && rows.equals(g.rows)
                && Arrays.equals(slotIndices, g.slotIndices)
                && Arrays.equals(slotRowCounts, g.slotRowCounts)
                && dispatchVersion == g.dispatchVersion
                && headVersion == g.headVersion
                && tailVersion == g.tailVersion
                && completionVersion == g.completionVersion;
    }

    @Override
    public int hashCode() {
        return Objects.hash(taskId, attempt, rows, dispatchVersion, headVersion, tailVersion, completionVersion);
    }

    @Override
    public String toString() {
        return "TrainingGroup{task=" + taskId + ", attempt=" + attempt + ", rows=" + rows.batchSize() + ", versions="
                + headVersion + ".." + tailVersion + ", dispatched@" + dispatchVersion + ", completed@"
                + completionVersion + "}";
    }
}
