package org.rollout.agent;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.rollout.api.InvalidConfigException;
import org.rollout.config.AgentSection;

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
 * <p>The configuration module reads and validates the section ({@link AgentSection}, in
 * configuration spelling); {@link #from(AgentSection)} turns it into these options, and the
 * constructor applies the same rules with the same messages.
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
    public static final String DEFAULT_ADMIN_API_KEY = AgentSection.DEFAULT_ADMIN_API_KEY;
    public static final Duration DEFAULT_ONLINE_TIMEOUT = AgentSection.DEFAULT_ONLINE_TIMEOUT;
    /** The values of {@code rollout.agent.api}. */
    public static final List<String> APIS = AgentSection.APIS;
    /** The keys {@link #fromMap} accepts (under {@code rollout.agent}). */
    public static final List<String> KEYS = AgentSection.KEYS;

    private static final AgentOptions DEFAULTS = from(AgentSection.defaults());

    /** @throws InvalidConfigException naming the {@code rollout.agent.*} key of a bad value */
    public AgentOptions {
        // The section's rules and messages (a null export style is refused there by name).
        new AgentSection(
                mode,
                exportStyle == null ? null : exportStyle.configName(),
                turnDiscount,
                adminApiKey,
                onlineTimeout,
                api,
                toolCallFormat);
    }

    /** The options of a validated {@code rollout.agent} section. */
    public static AgentOptions from(AgentSection s) {
        return new AgentOptions(
                s.mode(),
                ExportStyle.fromConfig(s.exportStyle()),
                s.turnDiscount(),
                s.adminApiKey(),
                s.onlineTimeout(),
                s.api(),
                s.toolCallFormat());
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
     * keys not given keep their defaults. {@code online_timeout} is in seconds. See {@link
     * AgentSection#fromMap}.
     *
     * @throws InvalidConfigException naming the full key ({@code rollout.agent.…}) of an unknown key
     *     or a value of the wrong type or range
     */
    public static AgentOptions fromMap(Map<String, ?> values) {
        return from(AgentSection.fromMap(values));
    }
}
