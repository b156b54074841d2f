package org.rollout.trainer;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalDouble;

/**
 * The statistics of one weight version and scope: one line of the engine's {@code stats.jsonl}
 * (docs/observability.md), what AReaL's trainer logs from {@code stats_tracker}.
 *
 * @param version the weight version: a training group's completion version, an evaluation pass's
 *     starting version
 * @param scope {@code rollout} (training) or {@code eval-rollout} (evaluation)
 * @param groups finished groups
 * @param accepted accepted groups
 * @param rejected rejected groups (including accepted ones discarded as too stale)
 * @param rejectedReasons rejected groups by reason (e.g. {@code returned_none}, {@code stale})
 * @param tokens generated tokens in accepted and rejected groups
 * @param scalars every other value, in the line's order: {@code staleness_mean} and {@code
 *     staleness_max} (when a group was accepted), the workflows' scalars such as {@code reward} as
 *     means, each with {@code <key>__count}, and the group metrics (semantics §5.9)
 */
public record VersionStats(
        int version,
        String scope,
        long groups,
        long accepted,
        long rejected,
        Map<String, Long> rejectedReasons,
        long tokens,
        Map<String, Double> scalars) {
    /** The training scope. */
    public static final String ROLLOUT = "rollout";
    /** The evaluation scope. */
    public static final String EVAL_ROLLOUT = "eval-rollout";

    public VersionStats {
        rejectedReasons = Map.copyOf(rejectedReasons);
        scalars = Collections.unmodifiableMap(new LinkedHashMap<>(scalars));
    }

    /** The scalar {@code key} (e.g. {@code reward}), or empty when the line has none. */
    public OptionalDouble scalar(String key) {
        Double v = scalars.get(key);
        return v == null ? OptionalDouble.empty() : OptionalDouble.of(v);
    }
}
