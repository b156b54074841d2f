package org.rollout.config;

import org.rollout.api.InvalidConfigException;

/**
 * How the inference module's {@code ServerPool} chooses a server for a segment that has no usable sticky server
 * (config key {@code routing_strategy}).
 *
 * <ul>
 *   <li>{@link #LEAST_REQUESTS} (the default): the eligible server with the fewest outstanding
 *       requests from this engine; ties are broken round-robin, so equally loaded servers take
 *       turns.
 *   <li>{@link #ROUND_ROBIN}: AReaL's only strategy (semantics §2.4): the next eligible server after the
 *       last one chosen, starting from a random index.
 * </ul>
 */
public enum RoutingStrategy {
    LEAST_REQUESTS("least_requests"),
    ROUND_ROBIN("round_robin");

    private final String configName;

    RoutingStrategy(String configName) {
        this.configName = configName;
    }

    /** The spelling in configuration: {@code least_requests} or {@code round_robin}. */
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
        throw new InvalidConfigException("routing_strategy", name, "least_requests or round_robin");
    }

    @Override
    public String toString() {
        return configName;
    }
}
