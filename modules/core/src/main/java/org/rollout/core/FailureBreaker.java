package org.rollout.core;

import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Says when a run cannot make progress: the share of failed groups among the last {@code window}
 * groups that ended reached {@code threshold}. A reward function that always raises, or a workflow
 * bug that fails every group, otherwise runs forever with no step done.
 *
 * <pre>
 *   engine status (cumulative counts) ──observe──► window of the last N ended groups ──► Trip?
 *       accepted, rejected by reason                 failed | not failed
 * </pre>
 *
 * <p><b>What counts as failed.</b> The reasons in {@link #FAILURES}: the workflow or its reward
 * threw ({@code failed}), broke the workflow contract ({@code contract}), an accept filter threw
 * ({@code accept_error}), or the group ran out of time ({@code timeout}). A group that the
 * workflow or a filter rejected on purpose ({@code returned_none}, {@code rejected}) is not a
 * failure: a strict filter may reject every group early in training, and the run still learns.
 * Nor are groups dropped as {@code stale} or {@code cancelled}.
 *
 * <p><b>Order.</b> The counts come as totals read now and then, so the order of the groups that
 * ended between two reads is unknown; they enter the window failures first. With the default
 * threshold of 1.0 (every group of the window failed) the order does not matter. A total that goes
 * down was restarted by a fail-over, and counts from zero.
 *
 * <p><b>Threading.</b> Not thread-safe: one poller owns it.
 */
public final class FailureBreaker {

    /** The rejection reasons that count as failures. */
    public static final Set<String> FAILURES = Set.of("failed", "contract", "accept_error", "timeout");

    /** Why the run was stopped. */
    public record Trip(int window, int failed, String commonestReason, long commonestCount, double threshold) {
        /** {@code "200 of the last 200 groups failed (failed: 200)"}. */
        public String describe() {
            return failed + " of the last " + window + " groups failed (" + commonestReason + ": " + commonestCount
                    + (commonestCount < failed ? ", and others" : "") + ")";
        }
    }

    private final int window;
    private final double threshold;
    /** The last {@code window} ended groups: the failure reason, or "" for one that did not fail. */
    private final ArrayDeque<String> recent = new ArrayDeque<>();

    private int failedInWindow;
    private long lastAccepted;
    private final Map<String, Long> lastRejected = new LinkedHashMap<>();
    private Trip trip;

    /**
     * @param window how many of the most recent ended groups are judged, at least 1
     * @param threshold the failed share that stops the run, in (0, 1]
     * @throws IllegalArgumentException naming the value out of range
     */
    public FailureBreaker(int window, double threshold) {
        if (window < 1) {
            throw new IllegalArgumentException("failure breaker window must be at least 1, got " + window);
        }
        if (!(threshold > 0 && threshold <= 1)) {
            throw new IllegalArgumentException("failure breaker threshold must be in (0, 1], got " + threshold);
        }
        this.window = window;
        this.threshold = threshold;
    }

    /**
     * Takes the engine's totals since start: training groups {@code accepted} and rejected per
     * reason. Returns the trip once the window is full and its failed share reached the threshold
     * (and every later call returns it again).
     */
    public Optional<Trip> observe(long accepted, Map<String, Long> rejectedByReason) {
        if (trip != null) {
            return Optional.of(trip);
        }
        rejectedByReason.forEach((reason, total) -> {
            long added = added(lastRejected.getOrDefault(reason, 0L), total);
            lastRejected.put(reason, total);
            for (long i = 0; i < Math.min(added, window); i++) {
                push(FAILURES.contains(reason) ? reason : null);
            }
        });
        long newlyAccepted = added(lastAccepted, accepted);
        lastAccepted = accepted;
        for (long i = 0; i < Math.min(newlyAccepted, window); i++) {
            push(null);
        }
        if (recent.size() == window && failedInWindow >= Math.ceil(threshold * window - 1e-9)) {
            Map<String, Long> byReason = new LinkedHashMap<>();
            recent.forEach(r -> {
                if (!r.isEmpty()) {
                    byReason.merge(r, 1L, Long::sum);
                }
            });
            Map.Entry<String, Long> commonest = byReason.entrySet().stream()
                    .max(Map.Entry.comparingByValue())
                    .orElseThrow();
            trip = new Trip(window, failedInWindow, commonest.getKey(), commonest.getValue(), threshold);
        }
        return Optional.ofNullable(trip);
    }

    /**
     * Groups added to a total since it was {@code before}. A total below {@code before} counts from
     * zero again: the collector or coordinator that keeps it was replaced (a fail-over).
     */
    private static long added(long before, long now) {
        return now >= before ? now - before : now;
    }

    /** The trip, once there was one. */
    public Optional<Trip> trip() {
        return Optional.ofNullable(trip);
    }

    private void push(String failure) {
        recent.addLast(failure == null ? "" : failure);
        if (!recent.peekLast().isEmpty()) {
            failedInWindow++;
        }
        if (recent.size() > window) {
            if (!recent.pollFirst().isEmpty()) {
                failedInWindow--;
            }
        }
    }
}
