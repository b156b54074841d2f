package org.rollout.api;

/**
 * Where a workflow records scalar statistics (AReaL's {@code stats_tracker}): each value is
 * appended under the episode's {@linkplain WorkflowContext#statScope() scope} and the current
 * weight version, and the exporter reports the mean and a {@code <key>__count}.
 *
 * <p>Thread-safe. Non-finite values are dropped with a warning rather than poisoning a mean.
 */
@FunctionalInterface
public interface StatsRecorder {

    /** Records {@code value} under {@code key} (e.g. {@code reward}, {@code num_turns}). */
    void scalar(String key, double value);

    /** Records nothing. The default outside the engine. */
    static StatsRecorder none() {
        return (key, value) -> {};
    }
}
