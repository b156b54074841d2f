package org.rollout.agent;

import java.util.Objects;
import org.rollout.api.Tokenizer;

/**
 * Where and how the {@link OpenAIProxy} listens. Immutable; start from {@link #defaults()}.
 *
 * @param host the address to bind; {@code 127.0.0.1} by default (agents run on the same node).
 *     Binding another address exposes sessions to the network, protected only by their keys.
 * @param port the port; 0 picks a free one
 * @param modelName the model name {@code /v1/models} lists and responses carry; requests may name
 *     any model, it is not checked
 * @param adminApiKey the Bearer key of {@code POST /online/claim}
 * @param maxRequestBytes the largest request body accepted; larger ones get 413
 * @param toolCallFormat how the model writes tool calls: {@code auto} (detected from the chat
 *     template, {@link ToolCallFormat#detect}) or a {@link ToolCallFormat} config name
 */
public record ProxyConfig(
        String host, int port, String modelName, String adminApiKey, int maxRequestBytes, String toolCallFormat) {
    public static final int DEFAULT_MAX_REQUEST_BYTES = 32 << 20;

    public ProxyConfig {
        if (host == null || host.isBlank()) {
            throw new IllegalArgumentException("proxy host must be set");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("proxy port must be in [0, 65535], got " + port);
        }
        Objects.requireNonNull(modelName, "modelName");
        if (adminApiKey == null || adminApiKey.isBlank()) {
            throw new IllegalArgumentException("proxy admin_api_key must not be blank");
        }
        if (maxRequestBytes < 1024) {
            throw new IllegalArgumentException("proxy max_request_bytes must be >= 1024, got " + maxRequestBytes);
        }
        if (toolCallFormat == null || toolCallFormat.isBlank()) {
            toolCallFormat = "auto";
        }
        if (!toolCallFormat.equals("auto")) {
            ToolCallFormat.fromConfig(toolCallFormat);
        }
    }

    /** 127.0.0.1, a free port, model {@code rollout}, AReaL's default admin key, 32 MiB bodies, tool calls auto. */
    public static ProxyConfig defaults() {
        return new ProxyConfig(
                "127.0.0.1", 0, "rollout", AgentOptions.DEFAULT_ADMIN_API_KEY, DEFAULT_MAX_REQUEST_BYTES, "auto");
    }

    public ProxyConfig withHost(String h) {
        return new ProxyConfig(h, port, modelName, adminApiKey, maxRequestBytes, toolCallFormat);
    }

    public ProxyConfig withPort(int p) {
        return new ProxyConfig(host, p, modelName, adminApiKey, maxRequestBytes, toolCallFormat);
    }

    public ProxyConfig withModelName(String m) {
        return new ProxyConfig(host, port, m, adminApiKey, maxRequestBytes, toolCallFormat);
    }

    public ProxyConfig withAdminApiKey(String k) {
        return new ProxyConfig(host, port, modelName, k, maxRequestBytes, toolCallFormat);
    }

    public ProxyConfig withMaxRequestBytes(int n) {
        return new ProxyConfig(host, port, modelName, adminApiKey, n, toolCallFormat);
    }

    public ProxyConfig withToolCallFormat(String f) {
        return new ProxyConfig(host, port, modelName, adminApiKey, maxRequestBytes, f);
    }

    /** The format to parse: the configured one, or the one the tokenizer's chat template shows. */
    ToolCallFormat resolveToolCallFormat(Tokenizer tokenizer) {
        return toolCallFormat.equals("auto")
                ? ToolCallFormat.detect(tokenizer)
                : ToolCallFormat.fromConfig(toolCallFormat);
    }
}
