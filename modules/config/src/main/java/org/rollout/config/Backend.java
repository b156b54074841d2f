package org.rollout.inference;

/**
 * The wire protocol the inference servers speak (config key {@code backend}, semantics §9): {@link #SGLANG}
 * (the default, and what the built-in model server speaks) or {@link #VLLM} (AReaL's vLLM server
 * extension). Each backend has one stateless {@link ServerProtocol}.
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

    /** The request builder and response parser for this backend. */
    public ServerProtocol protocol() {
        return switch (this) {
            case SGLANG -> SglangProtocol.INSTANCE;
            case VLLM -> VllmProtocol.INSTANCE;
        };
    }

    @Override
    public String toString() {
        return configName;
    }
}
