package org.rollout.agent;

import org.rollout.api.InvalidConfigException;

/**
 * How an agent episode's completions become training rows ({@code rollout.agent.export_style},
 * semantics §3.4, §8).
 *
 * <ul>
 *   <li>{@link #INDIVIDUAL}: every completion is its own row (its prompt masked, its output
 *       trained); earlier turns receive the later rewards discounted by {@code turn_discount}.
 *   <li>{@link #CONCAT}: completions that continue an earlier one (the request's messages start
 *       with the earlier request plus its answer) are chained; only the leaves are exported, each
 *       one row holding the whole conversation, with every turn's output trained and the context
 *       between turns masked.
 * </ul>
 */
public enum ExportStyle {
    INDIVIDUAL("individual"),
    CONCAT("concat");

    private final String configName;

    ExportStyle(String configName) {
        this.configName = configName;
    }

    /** The spelling in configuration: {@code individual} or {@code concat}. */
    public String configName() {
        return configName;
    }

    /**
     * The style spelled {@code name}.
     *
     * @throws InvalidConfigException for key {@code rollout.agent.export_style} otherwise
     */
    public static ExportStyle fromConfig(String name) {
        for (ExportStyle s : values()) {
            if (s.configName.equals(name)) {
                return s;
            }
        }
        throw new InvalidConfigException("rollout.agent.export_style", name, "individual or concat");
    }

    @Override
    public String toString() {
        return configName;
    }
}
