package org.rollout.config;

import org.rollout.api.InvalidConfigException;

/**
 * How the inference module's {@code ServerPool} chooses a server for a segment that has no usable sticky server
 * (config key {@code routing_strategy}).
 *
 * <ul>
 *   <li>{@link #LEAST_REQUESTS}: the eligible server with the fewest outstanding
 *       requests from this engine; ties are broken round-robin, so equally loaded servers take
 *       turns.
 *   <li>{@link #ROUND_ROBIN}: AReaL's only strategy (semantics §2.4): the next eligible server after the
 *       last one chosen, starting from a random index.
 *   <li>{@link #GROUP_AFFINITY} (the default): a trajectory's follow-up requests go to the server of its last one,
 *       and a group's samples to the servers that already serve the group, while that server's load is
 *       within the bound ({@code affinity_slack}, {@code affinity_load_factor}); else least requests.
 *   <li>{@link #PREFIX_AWARE}: as group affinity, and among the servers within the load bound the
 *       one that the engine's view of each server's prefix cache says holds the longest prefix of the
 *       request.
 * </ul>
 */
public enum RoutingStrategy {
    LEAST_REQUESTS("least_requests"),
    ROUND_ROBIN("round_robin"),
    GROUP_AFFINITY("group_affinity"),
    PREFIX_AWARE("prefix_aware");

    /** The allowed spellings, as error messages name them. */
    public static final String ALLOWED = "least_requests, round_robin, group_affinity or prefix_aware";

    private final String configName;

    RoutingStrategy(String configName) {
        this.configName = configName;
    }

    /** The spelling in configuration, for example {@code least_requests}. */
    public String configName() {
        return configName;
    }

    /**
     * The strategy spelt {@code name}.
     *
     * @throws InvalidConfigException (key {@code routing_strategy}) for any other name
     */
    public static RoutingStrategy fromConfig(String name) {
        for (RoutingStrategy s : values()) {
            if (s.configName.equals(name)) {
                return s;
            }
        }
        throw new InvalidConfigException("routing_strategy", name, ALLOWED);
    }

    /** True for the strategies that place a request by its group, trajectory or prefix. */
    public boolean isAffine() {
        return this == GROUP_AFFINITY || this == PREFIX_AWARE;
    }

    @Override
    public String toString() {
        return configName;
    }
}
