package org.rollout.config;

import org.rollout.api.InvalidConfigException;

/**
 * What {@code RemoteInferenceEngine.generate} does when a server interrupts a segment with
 * {@code abort} (a weight update, a pause, abort-all) before the budget is spent (config key
 * {@code interrupt_mode}).
 *
 * <ul>
 *   <li>{@link #RESUME} (the default, AReaL's behaviour, semantics §2.2): keep the tokens generated so far and
 *       send prompt + those tokens with the remaining budget; the tokens keep the versions they were
 *       generated under.
 *   <li>{@link #DISCARD}: drop the tokens generated so far and generate again from the original
 *       prompt with the full budget, as systems without interruptible generation do (miles
 *       #2372/#2296 measured ~1.1M tokens thrown away per step). Every token of the result then
 *       carries the version of the last segment. Kept for comparison (the benchmark "interruptible
 *       vs discard"), not as a recommendation: it wastes the work the update interrupted.
 * </ul>
 *
 * <p>Either way, a failed server is still left for another one with the tokens kept (failover is
 * not an interruption).
 */
public enum InterruptMode {
    RESUME("resume"),
    DISCARD("discard");

    private final String configName;

    InterruptMode(String configName) {
        this.configName = configName;
    }

    /** The spelling in configuration: {@code resume} or {@code discard}. */
    public String configName() {
        return configName;
    }

    /**
     * The mode spelt {@code name}.
     *
     * @throws InvalidConfigException (key {@code interrupt_mode}) for any other name
     */
    public static InterruptMode fromConfig(String name) {
        for (InterruptMode m : values()) {
            if (m.configName.equals(name)) {
                return m;
            }
        }
        throw new InvalidConfigException("interrupt_mode", name, "resume or discard");
    }

    @Override
    public String toString() {
        return configName;
    }
}
