package org.rollout.api;

import java.util.List;
import java.util.Objects;

/**
 * What a trainer pulls: {@code consumer_batch_size} accepted groups, identified by {@code batchId}.
 *
 * <p>A batch stays with the engine until the trainer acknowledges its id; a batch that is not
 * acknowledged (the trainer crashed or disconnected) is delivered again, with the same id and the
 * same groups, so nothing is lost. A trainer should therefore treat a batch id it has already
 * trained on as a duplicate delivery and only acknowledge it again.
 *
 * <p>{@code versionAtHandout} is the weight version when the batch was handed out; a group's
 * staleness is {@code versionAtHandout - group.headVersion()}. Immutable.
 */
public record TrainingBatch(long batchId, List<TrainingGroup> groups, int versionAtHandout) {
    public TrainingBatch {
        Objects.requireNonNull(groups, "groups");
        groups = List.copyOf(groups);
    }

    /** The number of trajectory rows across all groups. */
    public int rowCount() {
        int n = 0;
        for (TrainingGroup g : groups) {
            n += g.rowCount();
        }
        return n;
    }

    /** The number of groups. */
    public int size() {
        return groups.size();
    }
}
