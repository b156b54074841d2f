package org.rollout.config;

import org.rollout.api.InvalidConfigException;

/**
 * How new weights reach the inference servers ({@code rollout.weight_transfer}, docs/inference.md,
 * "Weights without a shared disk").
 */
public enum WeightTransfer {
    /** The servers read the published path themselves ({@code update_weights_from_disk}): a shared disk. */
    DISK("disk"),
    /**
     * The engine reads the published file and streams its bytes to every server ({@code POST
     * /update_weights_from_bytes}, the built-in model server's route): no disk shared with the servers.
     */
    HTTP("http");

    private final String configName;

    WeightTransfer(String configName) {
        this.configName = configName;
    }

    /** The spelling in configuration: {@code disk} or {@code http}. */
    public String configName() {
        return configName;
    }

    /**
     * The transfer spelt {@code name}.
     *
     * @throws InvalidConfigException (key {@code weight_transfer}) for any other name
     */
    public static WeightTransfer fromConfig(String name) {
        for (WeightTransfer t : values()) {
            if (t.configName.equals(name)) {
                return t;
            }
        }
        throw new InvalidConfigException("weight_transfer", name, "disk or http");
    }

    @Override
    public String toString() {
        return configName;
    }
}
