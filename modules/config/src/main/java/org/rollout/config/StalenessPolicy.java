package org.rollout.config;

import org.rollout.api.InvalidConfigException;

/**
 * What happens to a group in flight when the weight version moves on (config key
 * {@code rollout.staleness_policy}).
 */
public enum StalenessPolicy {
    /**
     * AReaL's behaviour (the default): staleness is bounded at admission (semantics §6.8); groups in flight
     * continue across updates as partial rollouts, their tokens labelled with the versions that
     * generated them.
     */
    ADMISSION("admission"),
    /**
     * prime-rl's behaviour: a group whose dispatch version falls more than η =
     * {@code max_head_offpolicyness} behind the current version is cancelled (its generations
     * aborted) and rejected as {@code stale}.
     */
    CANCEL("cancel");

    private final String configName;

    StalenessPolicy(String configName) {
        this.configName = configName;
    }

    public String configName() {
        return configName;
    }

    /** The policy named {@code value}; anything else names the key and the allowed values. */
    public static StalenessPolicy parse(String value) {
        for (StalenessPolicy p : values()) {
            if (p.configName.equals(value)) {
                return p;
            }
        }
        throw new InvalidConfigException("rollout.staleness_policy", value, "\"admission\" or \"cancel\"");
    }
}
