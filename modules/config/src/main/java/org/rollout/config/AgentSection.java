package org.rollout.config;

import com.typesafe.config.Config;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.rollout.api.InvalidConfigException;

/**
 * The {@code rollout.agent} section: how agent episodes run and export (AReaL's {@code
 * rollout.agent} options, semantics §8, §10), validated, in configuration spelling. The agent module
 * turns it into its {@code AgentOptions} ({@code AgentOptions.from(section)}); the meaning of each
 * key is documented there.
 *
 * <p>{@link #read(Config)} and {@link #fromMap} take every key of AReaL's section; the keys of what a
 * launcher starts (the agent program, the proxy's address) are {@link AgentLaunch}'s. Errors name the
 * full key ({@code rollout.agent.…}).
 *
 * @param mode {@code inline}, {@code subproc} or {@code online}
 * @param exportStyle {@code individual} or {@code concat}
 * @param turnDiscount in (0, 1]
 * @param adminApiKey the key for {@code POST /online/claim}; not blank
 * @param onlineTimeout how long an online episode waits for its reward; positive
 * @param api {@code chat}, {@code responses} or {@code messages}
 * @param toolCallFormat {@code auto} or a tool-call format name ({@link #toolCallFormatName})
 */
public record AgentSection(
        String mode,
        String exportStyle,
        double turnDiscount,
        String adminApiKey,
        Duration onlineTimeout,
        String api,
        String toolCallFormat) {
    public static final String DEFAULT_ADMIN_API_KEY = "areal-admin-key";
    public static final Duration DEFAULT_ONLINE_TIMEOUT = Duration.ofHours(1);
    /** The values of {@code rollout.agent.mode}. */
    public static final Set<String> MODES = Set.of("inline", "subproc", "online");
    /** The values of {@code rollout.agent.export_style}. */
    public static final List<String> EXPORT_STYLES = List.of("individual", "concat");
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

    private static final AgentSection DEFAULTS = new AgentSection(
            "inline", "individual", 1.0, DEFAULT_ADMIN_API_KEY, DEFAULT_ONLINE_TIMEOUT, "chat", "auto");

    /** @throws InvalidConfigException naming the {@code rollout.agent.*} key of a bad value */
    public AgentSection {
        if (mode == null || !MODES.contains(mode)) {
            throw new InvalidConfigException("rollout.agent.mode", mode, "inline, subproc or online");
        }
        Objects.requireNonNull(exportStyle, "export_style");
        if (!EXPORT_STYLES.contains(exportStyle)) {
            throw new InvalidConfigException("rollout.agent.export_style", exportStyle, "individual or concat");
        }
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
        if ((toolCallFormat == null || !toolCallFormat.equals("auto")) && toolCallFormatName(toolCallFormat) == null) {
            throw new InvalidConfigException(
                    "rollout.agent.tool_call_format", toolCallFormat, "auto, hermes, llama3_json, mistral or deepseek");
        }
    }

    /** inline, individual, turn_discount 1.0, admin key {@value #DEFAULT_ADMIN_API_KEY}, one hour online, chat, tool calls auto. */
    public static AgentSection defaults() {
        return DEFAULTS;
    }

    /**
     * The canonical name of a tool-call format spelling, or null when it names none: {@code hermes}
     * (also {@code qwen}, {@code qwen25}), {@code llama3_json} ({@code llama3}, {@code llama}),
     * {@code mistral}, {@code deepseek} ({@code deepseek_v3}, {@code deepseek_v31}); case and
     * surrounding blanks are ignored. {@code auto} is not a format.
     */
    public static String toolCallFormatName(String spelling) {
        String n = spelling == null ? "" : spelling.trim().toLowerCase(Locale.ROOT);
        return switch (n) {
            case "hermes", "qwen", "qwen25" -> "hermes";
            case "llama3_json", "llama3", "llama" -> "llama3_json";
            case "mistral" -> "mistral";
            case "deepseek", "deepseek_v3", "deepseek_v31" -> "deepseek";
            default -> null;
        };
    }

    /**
     * The section of a resolved configuration: the keys of {@link #KEYS} under {@code
     * rollout.agent} over the defaults (the others, {@link AgentLaunch}'s, are read there). Checked
     * at load by {@link RolloutConfig}; read again when a launcher runs an agent.
     *
     * @throws InvalidConfigException naming the full key of a value not allowed
     */
    public static AgentSection read(Config config) {
        Map<String, Object> values = new LinkedHashMap<>();
        for (String key : KEYS) {
            if (config.hasPath("rollout.agent." + key)) {
                values.put(key, config.getValue("rollout.agent." + key).unwrapped());
            }
        }
        return fromMap(values);
    }

    /**
     * The section from the snake_case keys under {@code rollout.agent} (a parsed configuration
     * tree); keys not given keep their defaults. {@code online_timeout} is in seconds. AReaL's
     * {@code subproc_max_workers} and {@code drop_retry_orphans} are accepted and have no effect.
     *
     * @throws InvalidConfigException naming the full key ({@code rollout.agent.…}) of an unknown key
     *     or a value of the wrong type or range
     */
    public static AgentSection fromMap(Map<String, ?> values) {
        AgentSection o = defaults();
        for (Map.Entry<String, ?> e : new LinkedHashMap<>(values).entrySet()) {
            String key = "rollout.agent." + e.getKey();
            Object v = e.getValue();
            o = switch (e.getKey()) {
                case "mode" -> o.withMode(string(key, v));
                case "export_style" -> o.withExportStyle(string(key, v));
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

    public AgentSection withMode(String m) {
        return new AgentSection(m, exportStyle, turnDiscount, adminApiKey, onlineTimeout, api, toolCallFormat);
    }

    public AgentSection withExportStyle(String s) {
        return new AgentSection(mode, s, turnDiscount, adminApiKey, onlineTimeout, api, toolCallFormat);
    }

    public AgentSection withTurnDiscount(double d) {
        return new AgentSection(mode, exportStyle, d, adminApiKey, onlineTimeout, api, toolCallFormat);
    }

    public AgentSection withAdminApiKey(String k) {
        return new AgentSection(mode, exportStyle, turnDiscount, k, onlineTimeout, api, toolCallFormat);
    }

    public AgentSection withOnlineTimeout(Duration t) {
        return new AgentSection(mode, exportStyle, turnDiscount, adminApiKey, t, api, toolCallFormat);
    }

    public AgentSection withApi(String a) {
        return new AgentSection(mode, exportStyle, turnDiscount, adminApiKey, onlineTimeout, a, toolCallFormat);
    }

    public AgentSection withToolCallFormat(String f) {
        return new AgentSection(mode, exportStyle, turnDiscount, adminApiKey, onlineTimeout, api, f);
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
