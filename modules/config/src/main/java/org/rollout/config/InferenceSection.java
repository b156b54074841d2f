package org.rollout.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;

/**
 * The inference keys of the {@code rollout} section ({@code backend}, {@code servers} and the
 * generation loop's timeouts, retries, routing and interruption), validated by building an {@link
 * InferenceConfig}, whose errors are keyed under {@code rollout.} here.
 */
final class InferenceSection {
    /** Stands in for the servers while validating the other inference keys when none is configured. */
    private static final ServerAddress PLACEHOLDER_SERVER = new ServerAddress("127.0.0.1", 1);

    private InferenceSection() {}

    /** An error of InferenceConfig keyed under {@code rollout.}, its {@code addresses} as {@code servers}. */
    static InvalidConfigException keyed(InvalidConfigException e) {
        if (e.key().equals("addresses")) {
            return new InvalidConfigException("rollout.servers", e.value(), e.allowed());
        }
        return e.under("rollout");
    }

    /** {@code rollout.servers}, or null when it failed. */
    static List<ServerAddress> servers(ConfigReader r) {
        String key = "rollout.servers";
        List<String> texts = r.strings(
                key,
                false,
                true,
                "a list of host:port strings (or one comma-separated string), [] when the" + " launcher supplies them");
        if (texts == null) {
            return null;
        }
        List<ServerAddress> out = new ArrayList<>();
        for (String t : texts) {
            try {
                out.add(ServerAddress.parse(t));
            } catch (InvalidConfigException e) {
                r.error(keyed(e));
            }
        }
        return r.ok(key) ? out : null;
    }

    /**
     * Every inference value but the servers, as an InferenceConfig with {@code servers} (or a
     * placeholder when there are none); null when a key failed.
     */
    static InferenceConfig template(ConfigReader r, List<ServerAddress> servers) {
        Map<String, Object> v = new LinkedHashMap<>();
        String backendAllowed = "sglang or vllm, optionally with an allocation suffix such as sglang:d4 or vllm:d2t4";
        put(v, "backend", r.string("rollout.backend", false, backendAllowed));
        put(v, "request_timeout", r.seconds("rollout.request_timeout", false));
        put(
                v,
                "request_retries",
                r.intValue("rollout.request_retries", Integer.MIN_VALUE, false, "an integer >= 1 (total attempts)"));
        put(v, "setup_timeout", r.seconds("rollout.setup_timeout", false));
        put(v, "routing_strategy", r.string("rollout.routing_strategy", false, RoutingStrategy.ALLOWED));
        put(v, "interrupt_mode", r.string("rollout.interrupt_mode", false, "resume or discard"));
        put(v, "sticky_by_rid", r.bool("rollout.sticky_by_rid"));
        put(v, "deterministic_sampling", r.bool("rollout.deterministic_sampling"));
        put(v, "weight_transfer", r.string("rollout.weight_transfer", false, "disk, http or nccl"));
        put(v, "use_lora", r.bool("rollout.use_lora"));
        put(v, "lora_name", r.string("rollout.lora_name", false, "a non-blank name without blanks"));
        put(v, "vllm_api", r.string("rollout.vllm_api", false, "areal or upstream"));
        put(v, "nccl_master_address", r.string("rollout.nccl_master_address", true, "a host name or address"));
        put(
                v,
                "nccl_master_port",
                r.intValue("rollout.nccl_master_port", Integer.MIN_VALUE, true, "a port in 1..65535"));
        put(v, "shared_disk_servers", r.string("rollout.shared_disk_servers", false, "launched, local or none"));
        put(v, "nccl_group_name", r.string("rollout.nccl_group_name", false, "a non-blank name without blanks"));
        put(v, "sticky_slack", r.intValue("rollout.sticky_slack", Integer.MIN_VALUE, false, "an integer >= 0"));
        put(v, "affinity_slack", r.intValue("rollout.affinity_slack", Integer.MIN_VALUE, false, "an integer >= 0"));
        put(v, "affinity_load_factor", r.number("rollout.affinity_load_factor", "a number >= 1.0"));
        put(
                v,
                "prefix_view_tokens",
                r.intValue("rollout.prefix_view_tokens", Integer.MIN_VALUE, false, "an integer >= 0"));
        for (String k : List.of(
                "health_check_interval",
                "health_check_timeout",
                "control_timeout",
                "retry_backoff_initial",
                "retry_backoff_max",
                "pause_grace_period")) {
            put(v, k, r.seconds("rollout." + k, false));
        }
        List<ServerAddress> addresses = servers == null || servers.isEmpty() ? List.of(PLACEHOLDER_SERVER) : servers;
        return ReportingBuild.build(
                v, values -> build(values, addresses), k -> v.containsKey(k) ? k : null, InferenceSection::keyed, r);
    }

    /** SGLang does not implement beam search: {@code section.use_beam_search} must be false with it. */
    static void checkBeamSearch(ConfigReader r, String section, GenerationConfig g, InferenceConfig inference) {
        if (g.useBeamSearch() && inference.backend() == Backend.SGLANG) {
            r.error(
                    section + ".use_beam_search",
                    true,
                    "false with rollout.backend = sglang (SGLang does not implement beam search)");
        }
    }

    private static void put(Map<String, Object> m, String key, Object value) {
        if (value != null) {
            m.put(key, value);
        }
    }

    private static InferenceConfig build(Map<String, Object> v, List<ServerAddress> servers) {
        InferenceConfig.Builder b = InferenceConfig.builder().serverAddresses(servers);
        for (Map.Entry<String, Object> e : v.entrySet()) {
            Object x = e.getValue();
            switch (e.getKey()) {
                case "backend" -> b.backend((String) x);
                case "request_timeout" -> b.requestTimeout((Duration) x);
                case "request_retries" -> b.requestRetries((Integer) x);
                case "setup_timeout" -> b.setupTimeout((Duration) x);
                case "routing_strategy" -> b.routingStrategy(RoutingStrategy.fromConfig((String) x));
                case "sticky_by_rid" -> b.stickyByRid((Boolean) x);
                case "sticky_slack" -> b.stickySlack((Integer) x);
                case "affinity_slack" -> b.affinitySlack((Integer) x);
                case "affinity_load_factor" -> b.affinityLoadFactor((Double) x);
                case "prefix_view_tokens" -> b.prefixViewTokens((Integer) x);
                case "health_check_interval" -> b.healthCheckInterval((Duration) x);
                case "health_check_timeout" -> b.healthCheckTimeout((Duration) x);
                case "control_timeout" -> b.controlTimeout((Duration) x);
                case "retry_backoff_initial" -> b.retryBackoffInitial((Duration) x);
                case "retry_backoff_max" -> b.retryBackoffMax((Duration) x);
                case "pause_grace_period" -> b.pauseGracePeriod((Duration) x);
                case "interrupt_mode" -> b.interruptMode(InterruptMode.fromConfig((String) x));
                case "deterministic_sampling" -> b.deterministicSampling((Boolean) x);
                case "weight_transfer" -> b.weightTransfer(WeightTransfer.fromConfig((String) x));
                case "use_lora" -> b.useLora((Boolean) x);
                case "lora_name" -> b.loraName((String) x);
                case "vllm_api" -> b.vllmApi((String) x);
                case "nccl_master_address" -> b.ncclMasterAddress((String) x);
                case "nccl_master_port" -> b.ncclMasterPort((Integer) x);
                case "nccl_group_name" -> b.ncclGroupName((String) x);
                case "shared_disk_servers" -> b.sharedDiskServers((String) x);
                default -> throw new IllegalStateException("no inference key " + e.getKey());
            }
        }
        return b.build();
    }
}
