package org.rollout.agent;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.rollout.api.InvalidConfigException;
import org.rollout.core.WorkflowResolver;

/**
 * How agent episodes run and export: AReaL's {@code rollout.agent} options (semantics §8, §10).
 *
 * <table>
 *   <caption>keys under rollout.agent</caption>
 *   <tr><th>key</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>mode</td><td>inline</td><td>inline, subproc or online; subproc runs Java agents inline
 *       (see below), online waits for external clients</td></tr>
 *   <tr><td>export_style</td><td>individual</td><td>individual or concat ({@link ExportStyle})</td></tr>
 *   <tr><td>turn_discount</td><td>1.0</td><td>(0, 1]: reward[i] = own reward + turn_discount ×
 *       reward[i+1], from the last completion backwards</td></tr>
 *   <tr><td>admin_api_key</td><td>areal-admin-key</td><td>the Bearer key external clients use to
 *       claim online sessions; the proxy enforces it, so start it with {@code
 *       ProxyConfig.defaults().withAdminApiKey(options.adminApiKey())}</td></tr>
 *   <tr><td>online_timeout</td><td>3600</td><td>seconds an online episode waits for its reward
 *       (ours; AReaL's sessions expire after the same hour)</td></tr>
 *   <tr><td>api</td><td>chat</td><td>chat, responses or messages: the API the demo agent ({@code
 *       bin/rollout local --workflow agent}) calls the proxy with; the proxy serves all three
 *       always</td></tr>
 *   <tr><td>tool_call_format</td><td>auto</td><td>auto, hermes, llama3_json, mistral or deepseek:
 *       how the model writes tool calls ({@link ToolCallFormat}); auto detects it from the chat
 *       template. Start the proxy with {@code ProxyConfig.withToolCallFormat(options.toolCallFormat())}</td></tr>
 * </table>
 *
 * <p>{@code subproc}: AReaL runs agents in a process pool so that a blocking Python agent does not
 * stall the event loop. A Java agent runs on its own virtual thread and cannot stall anything, so
 * {@code subproc} runs it inline; agents written in other languages run as processes through
 * {@link ProcessAgentWorkflow}. AReaL's {@code subproc_max_workers} and {@code drop_retry_orphans}
 * are accepted and have no effect here.
 *
 * @param mode {@code inline}, {@code subproc} or {@code online}
 * @param exportStyle how completions become rows
 * @param turnDiscount in (0, 1]
 * @param adminApiKey the key for {@code POST /online/claim}; not blank
 * @param onlineTimeout how long an online episode waits for its reward; positive
 * @param api {@code chat}, {@code responses} or {@code messages}
 * @param toolCallFormat {@code auto} or a {@link ToolCallFormat} config name
 */
public record AgentOptions(
        String mode,
        ExportStyle exportStyle,
        double turnDiscount,
        String adminApiKey,
        Duration onlineTimeout,
        String api,
        String toolCallFormat) {
    public static final String DEFAULT_ADMIN_API_KEY = "areal-admin-key";
    public static final Duration DEFAULT_ONLINE_TIMEOUT = Duration.ofHours(1);
    /** The values of {@code rollout.agent.api}. */
    public static final List<String> APIS = List.of("chat", "responses", "messages");
    /** The keys {@link #fromMap} accepts (under {@code rollout.agent}). */
    public static final List<String> KEYS = List.of(
            "mode",
            "export_style",
            "turn_discount",
            "admin_api_key",
            "online_timeout",
            "api",
            "tool_call_format",
            "subproc_max_workers",
            "drop_retry_orphans");

    private static final AgentOptions DEFAULTS = new AgentOptions(
            WorkflowResolver.MODE_INLINE,
            ExportStyle.INDIVIDUAL,
            1.0,
            DEFAULT_ADMIN_API_KEY,
            DEFAULT_ONLINE_TIMEOUT,
            "chat",
            "auto");

    /** @throws InvalidConfigException naming the {@code rollout.agent.*} key of a bad value */
    public AgentOptions {
        if (mode == null || !WorkflowResolver.AGENT_MODES.contains(mode)) {
            throw new InvalidConfigException("rollout.agent.mode", mode, "inline, subproc or online");
        }
        Objects.requireNonNull(exportStyle, "export_style");
        if (!(turnDiscount > 0 && turnDiscount <= 1)) {
            throw new InvalidConfigException("rollout.agent.turn_discount", turnDiscount, "a number in (0, 1]");
        }
        if (adminApiKey == null || adminApiKey.isBlank()) {
            throw new InvalidConfigException("rollout.agent.admin_api_key", adminApiKey, "a non-blank string");
        }
        if (onlineTimeout == null || onlineTimeout.isNegative() || onlineTimeout.isZero()) {
            throw new InvalidConfigException("rollout.agent.online_timeout", onlineTimeout, "a positive duration");
        }
        if (api == null || !APIS.contains(api)) {
            throw new InvalidConfigException("rollout.agent.api", api, "chat, responses or messages");
        }
        if (toolCallFormat == null || !toolCallFormat.equals("auto")) {
            try {
                ToolCallFormat.fromConfig(toolCallFormat);
            } catch (IllegalArgumentException e) {
                throw new InvalidConfigException(
                        "rollout.agent.tool_call_format",
                        toolCallFormat,
                        "auto, hermes, llama3_json, mistral or deepseek");
            }
        }
    }

    /** inline, individual, turn_discount 1.0, admin key {@value #DEFAULT_ADMIN_API_KEY}, one hour online, chat, tool calls auto. */
    public static AgentOptions defaults() {
        return DEFAULTS;
    }

    public AgentOptions withMode(String m) {
        return new AgentOptions(m, exportStyle, turnDiscount, adminApiKey, onlineTimeout, api, toolCallFormat);
    }

    public AgentOptions withExportStyle(ExportStyle s) {
        return new AgentOptions(mode, s, turnDiscount, adminApiKey, onlineTimeout, api, toolCallFormat);
    }

    public AgentOptions withTurnDiscount(double d) {
        return new AgentOptions(mode, exportStyle, d, adminApiKey, onlineTimeout, api, toolCallFormat);
    }

    public AgentOptions withAdminApiKey(String k) {
        return new AgentOptions(mode, exportStyle, turnDiscount, k, onlineTimeout, api, toolCallFormat);
    }

    public AgentOptions withOnlineTimeout(Duration t) {
        return new AgentOptions(mode, exportStyle, turnDiscount, adminApiKey, t, api, toolCallFormat);
    }

    public AgentOptions withApi(String a) {
        return new AgentOptions(mode, exportStyle, turnDiscount, adminApiKey, onlineTimeout, a, toolCallFormat);
    }

    public AgentOptions withToolCallFormat(String f) {
        return new AgentOptions(mode, exportStyle, turnDiscount, adminApiKey, onlineTimeout, api, f);
    }

    /**
     * Options from the snake_case keys under {@code rollout.agent} (a parsed configuration tree);
     * keys not given keep their defaults. {@code online_timeout} is in seconds.
     *
     * @throws InvalidConfigException naming the full key ({@code rollout.agent.…}) of an unknown key
     *     or a value of the wrong type or range
     */
    public static AgentOptions fromMap(Map<String, ?> values) {
        AgentOptions o = defaults();
        for (Map.Entry<String, ?> e : new LinkedHashMap<>(values).entrySet()) {
            String key = "rollout.agent." + e.getKey();
            Object v = e.getValue();
            o = switch (e.getKey()) {
                case "mode" -> o.withMode(string(key, v));
                case "export_style" -> o.withExportStyle(ExportStyle.fromConfig(string(key, v)));
                case "turn_discount" -> o.withTurnDiscount(number(key, v, "a number in (0, 1]"));
                case "admin_api_key" -> o.withAdminApiKey(string(key, v));
                case "online_timeout" -> {
                    double s = number(key, v, "a positive number of seconds");
                    if (!(s > 0) || Double.isInfinite(s)) {
                        throw new InvalidConfigException(key, v, "a positive number of seconds");
                    }
                    yield o.withOnlineTimeout(Duration.ofNanos((long) (s * 1e9)));
                }
                case "api" -> o.withApi(string(key, v));
                case "tool_call_format" -> o.withToolCallFormat(string(key, v));
                case "subproc_max_workers", "drop_retry_orphans" -> o;
                default ->
                    throw new InvalidConfigException(
                            key, v, "one of the keys rollout.agent." + String.join(", rollout.agent.", KEYS));
            };
        }
        return o;
    }

    private static String string(String key, Object v) {
        if (v instanceof String s) {
            return s;
        }
        throw new InvalidConfigException(key, v, "a string");
    }

    private static double number(String key, Object v, String allowed) {
        if (v instanceof Number n) {
            return n.doubleValue();
        }
        if (v instanceof String s) {
            try {
                return Double.parseDouble(s.trim());
            } catch (NumberFormatException e) {
                throw new InvalidConfigException(key, v, allowed);
            }
        }
        throw new InvalidConfigException(key, v, allowed);
    }
}
