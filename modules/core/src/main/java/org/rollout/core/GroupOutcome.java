package org.rollout.core;

import java.util.Arrays;
import java.util.Objects;
import org.rollout.api.TensorDict;

/**
 * What {@link GroupMerger#merge} decided for one prompt group: its rows with their slot
 * boundaries, or why it was dropped. Both carry the group's {@link GroupMetrics}.
 *
 * <pre>
 *   Merged   rows [R, L], and per usable slot in slot order: its index, its row count, its
 *            reference reward; the row counts sum to R, so boundaries travel with the data
 *   Dropped  reason (a sentence for logs and the rejection record)
 * </pre>
 *
 * <p>Group boundaries are explicit because recovering them from a fixed stride is what corrupted
 * GRPO normalisation after partial groups (AReaL #1419). Immutable: array components are copied
 * in and out.
 */
public sealed interface GroupOutcome {

    /** The group's statistics (semantics §5.9), to record under the task's stat scope. */
    GroupMetrics metrics();

    /**
     * A trainable group.
     *
     * @param rows every usable slot's rows, concatenated with padding in slot order, without
     *     {@code rollout_reward}
     * @param slotIndices the usable slots, ascending
     * @param slotRowCounts the rows each of those slots contributed, in the same order
     * @param slotReferences each slot's reference reward (normalised when normalisation ran), or
     *     NaN when it has none
     * @param metrics the group's statistics
     */
    record Merged(
            TensorDict rows, int[] slotIndices, int[] slotRowCounts, double[] slotReferences, GroupMetrics metrics)
            implements GroupOutcome {

        public Merged {
            Objects.requireNonNull(rows, "rows");
            Objects.requireNonNull(metrics, "metrics");
            slotIndices = slotIndices.clone();
            slotRowCounts = slotRowCounts.clone();
            slotReferences = slotReferences.clone();
            if (slotRowCounts.length != slotIndices.length || slotReferences.length != slotIndices.length) {
                throw new IllegalArgumentException("per-slot arrays differ in length: " + slotIndices.length
                        + " indices, " + slotRowCounts.length + " row counts, " + slotReferences.length
                        + " references");
            }
            long total = 0;
            for (int c : slotRowCounts) {
                total += c;
            }
            if (total != rows.batchSize()) {
                throw new IllegalArgumentException("slot row counts " + Arrays.toString(slotRowCounts) + " sum to "
                        + total + " but the merged rows have " + rows.batchSize());
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

        @Override
        public double[] slotReferences() {
            return slotReferences.clone();
        }

        /** The number of usable slots merged. */
        public int slotCount() {
            return slotIndices.length;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Merged m
                    && rows.equals(m.rows)
                    && Arrays.equals(slotIndices, m.slotIndices)
                    && Arrays.equals(slotRowCounts, m.slotRowCounts)
                    && Arrays.equals(slotReferences, m.slotReferences)
                    && metrics.equals(m.metrics);
        }

        @Override
        public int hashCode() {
            return Objects.hash(
                    rows,
                    Arrays.hashCode(slotIndices),
                    Arrays.hashCode(slotRowCounts),
                    Arrays.hashCode(slotReferences),
                    metrics);
        }

        @Override
        public String toString() {
            return "Merged{rows=" + rows + ", slots=" + Arrays.toString(slotIndices) + ", rowCounts="
                    + Arrays.toString(slotRowCounts) + ", references=" + Arrays.toString(slotReferences) + ", "
                    + metrics + "}";
        }
    }

    /**
     * A group that is not trained on; the task counts as rejected and a fresh prompt is admitted.
     *
     * @param reason why, in a sentence that names the counts or slot at fault
     * @param metrics the group's statistics ({@code trainable_slot_count} is 0)
     */
    record Dropped(String reason, GroupMetrics metrics) implements GroupOutcome {
        public Dropped {
            Objects.requireNonNull(reason, "reason");
            Objects.requireNonNull(metrics, "metrics");
        }
    }
}
