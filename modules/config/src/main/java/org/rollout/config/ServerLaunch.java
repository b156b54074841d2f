package org.rollout.config;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code rollout.launch}: the inference servers a node starts itself (docs/inference.md,
 * "Launching servers"), validated at load. {@code servers = 0} launches none.
 *
 * @param servers how many servers this node starts
 * @param command the command template, one element per argument, with {@code {port}}, {@code
 *     {gpu}}, {@code {model_path}}, {@code {host}} and {@code {index}} substituted per server
 * @param host the address the servers listen on and are reached at
 * @param basePort server i listens on {@code base_port + i}; 0 picks a free port per server
 * @param gpus the GPU ids handed out, {@code gpusPerServer} per server in order; empty for {@code 0 ..}
 * @param gpusPerServer GPUs per server; 0 leaves {@code CUDA_VISIBLE_DEVICES} alone
 * @param modelPath what {@code {model_path}} becomes
 * @param logDir where each server's output goes ({@code server-<index>.log})
 * @param healthTimeout how long start-up waits for every server's {@code GET /health}
 * @param restartBackoffInitial the wait before the first restart of a server that exited
 * @param restartBackoffMax the cap of the doubling wait
 * @param maxRestarts restarts per server at most; then it stays down
 */
public record ServerLaunch(
        int servers,
        List<String> command,
        String host,
        int basePort,
        List<String> gpus,
        int gpusPerServer,
        String modelPath,
        Path logDir,
        Duration healthTimeout,
        Duration restartBackoffInitial,
        Duration restartBackoffMax,
        int maxRestarts) {

    /** The placeholders a command template may hold. */
    public static final Set<String> PLACEHOLDERS = Set.of("port", "gpu", "model_path", "host", "index");

    private static final Pattern PLACEHOLDER = Pattern.compile("\\{([a-z_]*)}");

    public ServerLaunch {
        command = List.copyOf(command);
        gpus = List.copyOf(gpus);
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(modelPath, "model_path");
        Objects.requireNonNull(logDir, "log_dir");
    }

    /** The placeholders of {@code template} that are not {@link #PLACEHOLDERS}, in order. */
    static List<String> unknownPlaceholders(List<String> template) {
        return template.stream()
                .flatMap(a -> PLACEHOLDER.matcher(a).results().map(m -> m.group(1)))
                .filter(p -> !PLACEHOLDERS.contains(p))
                .toList();
    }

    /** The GPUs of server {@code index}, comma-separated as CUDA_VISIBLE_DEVICES takes them; "" with none. */
    public String gpusOf(int index) {
        if (gpusPerServer == 0) {
            return "";
        }
        StringBuilder b = new StringBuilder();
        for (int k = 0; k < gpusPerServer; k++) {
            int slot = index * gpusPerServer + k;
            b.append(k == 0 ? "" : ",").append(gpus.isEmpty() ? Integer.toString(slot) : gpus.get(slot));
        }
        return b.toString();
    }

    /** Server {@code index}'s command: the template with every placeholder substituted. */
    public List<String> commandOf(int index, int port) {
        return command.stream()
                .map(a -> PLACEHOLDER
                        .matcher(a)
                        .replaceAll(m -> Matcher.quoteReplacement(
                                switch (m.group(1)) {
                                    case "port" -> Integer.toString(port);
                                    case "gpu" -> gpusOf(index);
                                    case "model_path" -> modelPath;
                                    case "host" -> host;
                                    case "index" -> Integer.toString(index);
                                    default -> m.group();
                                })))
                .toList();
    }
}
