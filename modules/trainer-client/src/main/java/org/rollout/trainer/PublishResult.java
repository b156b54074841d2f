package org.rollout.trainer;

import java.time.Duration;
import java.util.Map;

/**
 * The outcome of a weight publish, the one report of it from the servers up: the engine's
 * publisher returns it, the weight version actor passes it on, {@link RolloutClient#publishWeights}
 * returns it and the gateway writes it as JSON. It holds the version, how long the servers took,
 * how many loaded the weights, and the servers that failed to (taken out of rotation until a later
 * update succeeds on them), each with its reason.
 *
 * @param version the version the weights were published as
 * @param updateTime wall time of the whole fan-out to the servers
 * @param serversUpdated servers that loaded the weights
 * @param serverFailures server address → reason, for the servers that did not
 */
public record PublishResult(int version, Duration updateTime, int serversUpdated, Map<String, String> serverFailures) {
    public PublishResult {
        serverFailures = Map.copyOf(serverFailures);
    }

    /** True when at least one server took the weights, or there are no servers at all. */
    public boolean applied() {
        return serversUpdated > 0 || serverFailures.isEmpty();
    }

    /** True when every server loaded the weights. */
    public boolean complete() {
        return serverFailures.isEmpty();
    }
}
