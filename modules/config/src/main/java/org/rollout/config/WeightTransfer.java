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
    HTTP("http"),
    /**
     * The trainer broadcasts the tensors to the servers over a collective group (NCCL between GPUs);
     * the engine sends only the control calls: {@code init_weights_update_group} once per server, then
     * per update {@code update_weights_from_distributed} with the tensors' names, dtypes and shapes
     * (docs/inference.md, "NCCL weight updates"). Also spelt {@code xccl}, AReaL's name.
     */
    NCCL("nccl");

    private final String configName;

    WeightTransfer(String configName) {
        this.configName = configName;
    }

    /** The spelling in configuration: {@code disk}, {@code http} or {@code nccl}. */
    public String configName() {
        return configName;
    }

    /**
     * The transfer spelt {@code name}.
     *
     * @throws InvalidConfigException (key {@code weight_transfer}) for any other name
     */
    public static WeightTransfer fromConfig(String name) {
        if ("xccl".equals(name)) {
            return NCCL;
        }
        for (WeightTransfer t : values()) {
            if (t.configName.equals(name)) {
                return t;
            }
        }
        throw new InvalidConfigException("weight_transfer", name, "disk, http or nccl (also spelt xccl)");
    }

    @Override
    public String toString() {
        return configName;
    }
}
