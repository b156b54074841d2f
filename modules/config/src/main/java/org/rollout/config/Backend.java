package org.rollout.config;

/**
 * The wire protocol the inference servers speak (config key {@code backend}, semantics §9): {@link #SGLANG}
 * (the default, and what the built-in model server speaks) or {@link #VLLM} (AReaL's vLLM server
 * extension). The inference module maps each backend to its stateless protocol ({@code ServerProtocol.of}).
 */
public enum Backend {
    SGLANG("sglang"),
    VLLM("vllm");

    private final String configName;

    Backend(String configName) {
        this.configName = configName;
    }

    /** The spelling in configuration: {@code sglang} or {@code vllm}. */
    public String configName() {
        return configName;
    }

    @Override
    public String toString() {
        return configName;
    }
}
