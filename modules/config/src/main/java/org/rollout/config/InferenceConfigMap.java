package org.rollout.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.rollout.api.InvalidConfigException;

/** {@link InferenceConfig#fromMap}: a config from snake_case keys, each value's type checked and keyed. */
final class InferenceConfigMap {
    private InferenceConfigMap() {}

    static InferenceConfig read(Map<String, ?> values) {
        InferenceConfig.Builder b = InferenceConfig.builder();
        for (Map.Entry<String, ?> e : new LinkedHashMap<>(values).entrySet()) {
            String key = e.getKey();
            Object v = e.getValue();
            switch (key) {
                case "backend" -> b.backend(string(key, v));
                case "addresses" -> b.addresses(addressList(v));
                case "request_timeout" -> b.requestTimeout(secondsValue(key, v));
                case "request_retries" -> b.requestRetries(intValue(key, v));
                case "setup_timeout" -> b.setupTimeout(secondsValue(key, v));
                case "routing_strategy" -> b.routingStrategy(RoutingStrategy.fromConfig(string(key, v)));
                case "sticky_by_rid" -> b.stickyByRid(bool(key, v));
                case "sticky_slack" -> b.stickySlack(intValue(key, v));
                case "affinity_slack" -> b.affinitySlack(intValue(key, v));
                case "affinity_load_factor" -> b.affinityLoadFactor(doubleValue(key, v));
                case "prefix_view_tokens" -> b.prefixViewTokens(intValue(key, v));
                case "health_check_interval" -> b.healthCheckInterval(secondsValue(key, v));
                case "health_check_timeout" -> b.healthCheckTimeout(secondsValue(key, v));
                case "control_timeout" -> b.controlTimeout(secondsValue(key, v));
                case "retry_backoff_initial" -> b.retryBackoffInitial(secondsValue(key, v));
                case "retry_backoff_max" -> b.retryBackoffMax(secondsValue(key, v));
                case "pause_grace_period" -> b.pauseGracePeriod(secondsValue(key, v));
                case "interrupt_mode" -> b.interruptMode(InterruptMode.fromConfig(string(key, v)));
                case "deterministic_sampling" -> b.deterministicSampling(bool(key, v));
                case "weight_transfer" -> b.weightTransfer(WeightTransfer.fromConfig(string(key, v)));
                case "use_lora" -> b.useLora(bool(key, v));
                case "lora_name" -> b.loraName(string(key, v));
                case "vllm_api" -> b.vllmApi(string(key, v));
                case "nccl_master_address" -> b.ncclMasterAddress(string(key, v));
                case "nccl_master_port" -> b.ncclMasterPort(intValue(key, v));
                case "nccl_group_name" -> b.ncclGroupName(string(key, v));
                case "shared_disk_servers" -> b.sharedDiskServers(string(key, v));
                default ->
                    throw new InvalidConfigException(
                            key, v, "one of the keys " + String.join(", ", InferenceConfig.KEYS));
            }
        }
        return b.build();
    }

    private static String string(String key, Object v) {
        if (v instanceof String s) {
            return s;
        }
        throw new InvalidConfigException(key, v, "a string");
    }

    private static boolean bool(String key, Object v) {
        if (v instanceof Boolean b) {
            return b;
        }
        if ("true".equals(v) || "false".equals(v)) {
            return Boolean.parseBoolean((String) v);
        }
        throw new InvalidConfigException(key, v, "true or false");
    }

    private static int intValue(String key, Object v) {
        if (v instanceof Integer || v instanceof Long || v instanceof Short) {
            long l = ((Number) v).longValue();
            if (l == (int) l) {
                return (int) l;
            }
        }
        if (v instanceof String s && s.strip().matches("-?\\d{1,9}")) {
            return Integer.parseInt(s.strip());
        }
        throw new InvalidConfigException(key, v, "an integer");
    }

    private static double doubleValue(String key, Object v) {
        if (v instanceof Number n) {
            return n.doubleValue();
        }
        if (v instanceof String s) {
            try {
                return Double.parseDouble(s.strip());
            } catch (NumberFormatException e) {
                throw new InvalidConfigException(key, v, "a number");
            }
        }
        throw new InvalidConfigException(key, v, "a number");
    }

    private static Duration secondsValue(String key, Object v) {
        double s;
        if (v instanceof Number n) {
            s = n.doubleValue();
        } else if (v instanceof String str) {
            try {
                s = Double.parseDouble(str.strip());
            } catch (NumberFormatException e) {
                throw new InvalidConfigException(key, v, "a number of seconds");
            }
        } else {
            throw new InvalidConfigException(key, v, "a number of seconds");
        }
        if (!Double.isFinite(s) || s < 0 || s > 1e9) {
            throw new InvalidConfigException(key, v, "a finite number of seconds >= 0");
        }
        return Duration.ofNanos(Math.round(s * 1e9));
    }

    private static List<String> addressList(Object v) {
        List<String> out = new ArrayList<>();
        if (v instanceof String s) {
            for (String part : s.split(",")) {
                if (!part.isBlank()) {
                    out.add(part.strip());
                }
            }
        } else if (v instanceof List<?> list) {
            for (Object o : list) {
                out.add(string("addresses", o));
            }
        } else {
            throw new InvalidConfigException(
                    "addresses", v, "a list of host:port strings or one comma-separated string");
        }
        return out;
    }
}
