package org.rollout.config;

import com.typesafe.config.Config;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The {@code rollout.launch} section: the inference servers a node starts itself. Checked at load
 * (every error names its key); read by {@link RolloutSettings#launch()}.
 */
final class LaunchSection {
    private static final String P = "rollout.launch.";

    private LaunchSection() {}

    static void check(ConfigReader r) {
        Integer servers = r.intValue(P + "servers", 0, false, "an integer >= 0 (0: launch none)");
        List<String> command =
                r.strings(P + "command", false, false, "a list of arguments, or one string split at blanks");
        if (command != null) {
            command = split(command);
            if (servers != null && servers > 0 && command.isEmpty()) {
                r.error(P + "command", command, "a non-empty command when rollout.launch.servers > 0");
            }
            List<String> unknown = ServerLaunch.unknownPlaceholders(command);
            if (!unknown.isEmpty()) {
                r.error(
                        P + "command",
                        command,
                        "placeholders among {port}, {gpu}, {model_path}, {host}, {index} (unknown: {"
                                + String.join("}, {", unknown) + "})");
            }
        }
        String host = r.string(P + "host", false, "a non-blank host name or address");
        if (host != null && host.isBlank()) {
            r.error(P + "host", host, "a non-blank host name or address");
        }
        Integer basePort = r.intValue(P + "base_port", 0, false, "0 (free ports) or a port 1..65535");
        if (basePort != null && servers != null && basePort > 0 && basePort + Math.max(servers, 1) - 1 > 65535) {
            r.error(P + "base_port", basePort, "a port such that base_port + servers - 1 <= 65535");
        }
        List<String> gpus = r.strings(P + "gpus", false, true, "a list of GPU ids, [] for 0, 1, 2, ...");
        Integer perServer =
                r.intValue(P + "gpus_per_server", 0, false, "an integer >= 0 (0: CUDA_VISIBLE_DEVICES unset)");
        if (gpus != null
                && !gpus.isEmpty()
                && servers != null
                && perServer != null
                && gpus.size() < servers * perServer) {
            r.error(
                    P + "gpus",
                    gpus,
                    "at least servers x gpus_per_server = " + servers * perServer + " GPU ids, or [] for 0, 1, 2, ...");
        }
        r.string(P + "model_path", false, "a string, \"\" for none");
        r.string(P + "log_dir", false, "a directory, \"\" for {fileroot}/server-logs");
        r.seconds(P + "health_timeout", true);
        Duration initial = r.seconds(P + "restart_backoff_initial", false);
        Duration max = r.seconds(P + "restart_backoff_max", false);
        if (initial != null && (initial.isNegative())) {
            r.error(P + "restart_backoff_initial", initial.toMillis() / 1000.0, "a number of seconds >= 0");
        }
        if (initial != null && max != null && max.compareTo(initial) < 0) {
            r.error(
                    P + "restart_backoff_max",
                    max.toMillis() / 1000.0,
                    "a number of seconds >= restart_backoff_initial (" + initial.toMillis() / 1000.0 + ")");
        }
        r.intValue(P + "max_restarts", 0, false, "an integer >= 0");
    }

    /** One string is split at blanks, as {@code rollout.agent.command}. */
    private static List<String> split(List<String> command) {
        if (command.size() == 1) {
            String s = command.getFirst().strip();
            return s.isEmpty() ? List.of() : List.of(s.split("\\s+"));
        }
        return command;
    }

    static ServerLaunch read(Config c, Path fileroot) {
        List<String> gpus = c.getValue(P + "gpus").unwrapped() instanceof String s
                ? List.of(s.split(",")).stream()
                        .map(String::strip)
                        .filter(x -> !x.isEmpty())
                        .toList()
                : c.getStringList(P + "gpus");
        List<String> command = c.getValue(P + "command").unwrapped() instanceof String s
                ? split(List.of(s))
                : c.getStringList(P + "command");
        String logDir = c.getString(P + "log_dir");
        return new ServerLaunch(
                c.getInt(P + "servers"),
                command,
                c.getString(P + "host"),
                c.getInt(P + "base_port"),
                gpus,
                c.getInt(P + "gpus_per_server"),
                c.getString(P + "model_path"),
                logDir.isBlank() ? fileroot.resolve("server-logs") : Path.of(logDir),
                seconds(c, P + "health_timeout"),
                seconds(c, P + "restart_backoff_initial"),
                seconds(c, P + "restart_backoff_max"),
                c.getInt(P + "max_restarts"));
    }

    /** A duration checked at load: a number of seconds, a numeric string, or a HOCON duration ("90s"). */
    private static Duration seconds(Config c, String path) {
        Object v = c.getValue(path).unwrapped();
        if (v instanceof Number n) {
            return Duration.ofNanos(Math.round(n.doubleValue() * 1e9));
        }
        String text = ((String) v).strip();
        try {
            return Duration.ofNanos(Math.round(Double.parseDouble(text) * 1e9));
        } catch (NumberFormatException e) {
            return c.getDuration(path);
        }
    }
}
