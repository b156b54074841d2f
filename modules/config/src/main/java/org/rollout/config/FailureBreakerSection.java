package org.rollout.config;

/**
 * The {@code rollout.failure_breaker} section: when the failed share of the last {@code window}
 * groups reaches {@code threshold}, the run cannot make progress: {@code rollout local} stops with
 * exit 3 and a {@code rollout node} stops admitting, each naming the cause. Checked at load; read
 * by {@link RolloutSettings#failureBreaker()}.
 */
final class FailureBreakerSection {
    private FailureBreakerSection() {}

    static final String WINDOW = "rollout.failure_breaker.window";
    static final String THRESHOLD = "rollout.failure_breaker.threshold";

    static void check(ConfigReader r) {
        r.integer(WINDOW, 0, Integer.MAX_VALUE, false, "an integer >= 1, or 0 for no breaker");
        Double threshold = r.number(THRESHOLD, "a share in (0, 1], e.g. 1.0 for every group of the window");
        if (threshold != null && !(threshold > 0 && threshold <= 1)) {
            r.error(THRESHOLD, threshold, "a share in (0, 1], e.g. 1.0 for every group of the window");
        }
    }
}
