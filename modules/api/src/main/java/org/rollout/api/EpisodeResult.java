package org.rollout.api;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * What one {@link RolloutWorkflow#runEpisode} call produced: one logical rollout (semantics §3.1).
 *
 * <pre>
 *   Trajectory(TensorDict)            batch-first rows (semantics §3.2), usually one
 *   Interactions(id → Interaction)    agent completions keyed by completion id, insertion-ordered
 *   Rejected(reason)                  not usable for training (AReaL's None); the slot is unusable
 * </pre>
 *
 * <p>Inside a group a {@code Rejected} slot is never re-run and a usable result is never
 * duplicated (semantics §5.2). A workflow that throws is not rejected quietly: its group fails and its
 * siblings are cancelled.
 */
public sealed interface EpisodeResult {

    /** The number of trajectory rows this result contributes (0 when rejected). */
    int rows();

    static Trajectory trajectory(TensorDict data) {
        return new Trajectory(data);
    }

    static Interactions interactions(Map<String, Interaction> byId) {
        return new Interactions(byId);
    }

    static Rejected rejected(String reason) {
        return new Rejected(reason);
    }

    /** Tensor rows (semantics §3.2); an empty dict is a contract error when the group is merged. */
    record Trajectory(TensorDict data) implements EpisodeResult {
        public Trajectory {
            Objects.requireNonNull(data, "trajectory data");
        }

        @Override
        public int rows() {
            return data.batchSize();
        }
    }

    /**
     * Interactions keyed by completion id, in insertion order. The map is copied; keys must match
     * each interaction's {@link Interaction#id()}.
     */
    record Interactions(Map<String, Interaction> byId) implements EpisodeResult {
        public Interactions {
            Objects.requireNonNull(byId, "interactions");
            LinkedHashMap<String, Interaction> copy = new LinkedHashMap<>();
            byId.forEach((k, v) -> {
                Objects.requireNonNull(v, () -> "interaction '" + k + "'");
                if (!v.id().equals(k)) {
                    throw new IllegalArgumentException(
                            "interaction keyed '" + k + "' has id '" + v.id() + "'; keys must be completion ids");
                }
                copy.put(k, v);
            });
            byId = Collections.unmodifiableMap(copy);
        }

        @Override
        public int rows() {
            return byId.size();
        }
    }

    /** Not usable for training; {@code reason} says why (e.g. {@code returned_none}, {@code low_reward}). */
    record Rejected(String reason) implements EpisodeResult {
        public Rejected {
            Objects.requireNonNull(reason, "reason");
        }

        @Override
        public int rows() {
            return 0;
        }
    }
}
