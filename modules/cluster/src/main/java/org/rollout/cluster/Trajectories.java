package org.rollout.cluster;

import org.rollout.api.EpisodeResult;
import org.rollout.api.Interaction;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.core.GeneratedVersions;

/** Small read-only measurements of trajectory rows that the runtime reports. */
final class Trajectories {
    private Trajectories() {}

    /**
     * The smallest and largest version over generated positions of all rows, or
     * {@code [fallback, fallback]} when there is none; see {@link GeneratedVersions}.
     */
    static int[] generatedVersionRange(TensorDict rows, int fallback) {
        return GeneratedVersions.range(rows, fallback);
    }

    /** The number of generated tokens ({@code loss_mask == 1}) in {@code rows}. */
    static long generatedTokens(TensorDict rows) {
        Tensor mask = rows.get(TensorDict.LOSS_MASK);
        if (mask == null) {
            return 0;
        }
        long n = 0;
        for (int k = 0; k < mask.numel(); k++) {
            if (mask.getLong(k) == 1) {
                n++;
            }
        }
        return n;
    }

    /** The number of generated tokens in one slot's result (0 when rejected). */
    static long generatedTokens(EpisodeResult result) {
        return switch (result) {
            case EpisodeResult.Trajectory t -> generatedTokens(t.data());
            case EpisodeResult.Interactions i ->
                i.byId().values().stream()
                        .map(Interaction::modelResponse)
                        .filter(r -> r != null)
                        .mapToLong(r -> r.outputLength())
                        .sum();
            case EpisodeResult.Rejected r -> 0;
            case null -> 0;
        };
    }
}
