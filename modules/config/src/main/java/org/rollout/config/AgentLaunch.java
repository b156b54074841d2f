package org.rollout.config;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.rollout.api.InvalidConfigException;

/**
 * Where a configured agent runs, from the {@code rollout.agent} section: the program of a process
 * agent ({@code command}, {@code working_dir}, {@code process_timeout}) and the address of the node's
 * agent proxy ({@code proxy_host}, {@code proxy_port}). {@link AgentSection} holds how episodes
 * export; this record holds what the launcher starts.
 *
 * @param command the agent program and its arguments, run without a shell; empty when none is configured
 * @param workingDir the program's working directory; null for the node's
 * @param processTimeout how long one episode's process may run; positive
 * @param proxyHost the address the agent proxy binds
 * @param proxyPort its port; 0 for any free port
 */
public record AgentLaunch(
        List<String> command, Path workingDir, Duration processTimeout, String proxyHost, int proxyPort) {
    private static final String P = "rollout.agent.";

    public AgentLaunch {
        command = List.copyOf(command);
    }

    /** True when {@code rollout.agent.command} names a program. */
    public boolean hasCommand() {
        return !command.isEmpty();
    }

    /**
     * The keys of a resolved configuration, validated.
     *
     * @throws InvalidConfigException naming the first {@code rollout.agent.*} key of a value not allowed
     */
    public static AgentLaunch read(Config config) {
        String host = host(config);
        requireOwnAdminKeyOffLoopback(config, host);
        return new AgentLaunch(
                command(config), workingDir(config), seconds(config, "process_timeout"), host, port(config));
    }

    /**
     * A proxy reachable from the network must not keep AReaL's public default admin key: anyone who
     * can reach it could claim the online sessions.
     */
    private static void requireOwnAdminKeyOffLoopback(Config config, String host) {
        String key = P + "admin_api_key";
        String admin = config.hasPath(key) ? config.getString(key) : AgentSection.DEFAULT_ADMIN_API_KEY;
        if (!isLoopback(host) && admin.equals(AgentSection.DEFAULT_ADMIN_API_KEY)) {
            throw new InvalidConfigException(
                    key,
                    "(the default)",
                    "a key of your own while rollout.agent.proxy_host (\"" + host + "\") is not a loopback"
                            + " address: the default is public and would let anyone who reaches the proxy claim its"
                            + " sessions; set it, e.g. from an environment variable: admin_api_key ="
                            + " ${ROLLOUT_AGENT_ADMIN_KEY}");
        }
    }

    private static boolean isLoopback(String host) {
        String h = host.strip();
        return h.equals("localhost") || h.startsWith("127.") || h.equals("::1") || h.equals("[::1]");
    }

    private static List<String> command(Config config) {
        String key = P + "command";
        String allowed = "a list of strings [\"program\", \"arg\", …] or one string split at blanks, the program"
                + " not blank; [] for none";
        if (!config.hasPath(key)) {
            return List.of();
        }
        ConfigValue v = config.getValue(key);
        List<String> parts = new ArrayList<>();
        if (v.valueType() == ConfigValueType.STRING) {
            String s = ((String) v.unwrapped()).strip();
            if (!s.isEmpty()) {
                parts.addAll(Arrays.asList(s.split("\\s+")));
            }
        } else if (v.valueType() == ConfigValueType.LIST) {
            for (Object o : (List<?>) v.unwrapped()) {
                if (!(o instanceof String s)) {
                    throw new InvalidConfigException(key, v.unwrapped(), allowed);
                }
                parts.add(s);
            }
        } else {
            throw new InvalidConfigException(key, v.unwrapped(), allowed);
        }
        if (!parts.isEmpty() && parts.getFirst().isBlank()) {
            throw new InvalidConfigException(key, v.unwrapped(), allowed);
        }
        return parts;
    }

    private static Path workingDir(Config config) {
        String key = P + "working_dir";
        if (!config.hasPath(key)) {
            return null;
        }
        String s = config.getString(key);
        if (s.isBlank()) {
            return null;
        }
        try {
            Path dir = Path.of(s);
            if (!Files.isDirectory(dir)) {
                throw new InvalidConfigException(key, s, "an existing directory, or \"\" for the node's");
            }
            return dir;
        } catch (InvalidPathException e) {
            throw new InvalidConfigException(key, s, "an existing directory, or \"\" for the node's");
        }
    }

    private static Duration seconds(Config config, String name) {
        String key = P + name;
        String allowed = "a positive number of seconds";
        if (!config.hasPath(key)) {
            throw new InvalidConfigException(key, null, allowed);
        }
        ConfigValue v = config.getValue(key);
        if (!(v.unwrapped() instanceof Number n) || !(n.doubleValue() > 0) || Double.isInfinite(n.doubleValue())) {
            throw new InvalidConfigException(key, v.unwrapped(), allowed);
        }
        return Duration.ofNanos((long) (n.doubleValue() * 1e9));
    }

    private static String host(Config config) {
        String key = P + "proxy_host";
        String h = config.hasPath(key) ? config.getString(key) : "";
        if (h.isBlank()) {
            throw new InvalidConfigException(key, h, "an address to bind, e.g. \"127.0.0.1\" or \"0.0.0.0\"");
        }
        return h;
    }

    private static int port(Config config) {
        String key = P + "proxy_port";
        ConfigValue v = config.hasPath(key) ? config.getValue(key) : null;
        Object raw = v == null ? null : v.unwrapped();
        if (!(raw instanceof Integer p) || p < 0 || p > 65535) {
            throw new InvalidConfigException(key, raw, "a port in [0, 65535], 0 for any free port");
        }
        return p;
    }
}
