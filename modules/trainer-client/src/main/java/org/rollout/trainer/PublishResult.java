package org.rollout.trainer;

import java.time.Duration;
import java.util.Map;

/**
 * The outcome of {@link RolloutClient#publishWeights}: the version now current, how long the
 * servers took, and the servers that failed to load the weights (taken out of rotation until a
 * later update succeeds on them), each with its reason.
 */
public record PublishResult(int version, Duration updateTime, int serversUpdated, Map<String, String> serverFailures) {
    public PublishResult {
        serverFailures = Map.copyOf(serverFailures);
    }

    /** True when every server loaded the weights. */
    public boolean complete() {
        return serverFailures.isEmpty();
    }
}
