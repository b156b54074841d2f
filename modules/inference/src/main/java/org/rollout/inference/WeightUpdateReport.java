package org.rollout.inference;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.rollout.config.ServerAddress;

/**
 * What one weight update did on each server ({@link WeightUpdater#update}).
 *
 * @param modelPath the weights that were loaded
 * @param version the weight version they were loaded as
 * @param servers one outcome per server, in the order given to the updater
 * @param elapsed wall time of the whole update, continue included
 */
public record WeightUpdateReport(Path modelPath, int version, List<ServerOutcome> servers, Duration elapsed) {

    public WeightUpdateReport {
        Objects.requireNonNull(modelPath, "modelPath");
        servers = List.copyOf(servers);
        Objects.requireNonNull(elapsed, "elapsed");
    }

    /** True when every server paused, loaded and continued. */
    public boolean allSucceeded() {
        return servers.stream().allMatch(ServerOutcome::ok);
    }

    /** True when at least one server loaded the new weights. */
    public boolean anyLoaded() {
        return servers.stream().anyMatch(ServerOutcome::loaded);
    }

    /** The servers where some step failed. */
    public List<ServerOutcome> failures() {
        return servers.stream().filter(o -> !o.ok()).toList();
    }

    /** One line: how many servers succeeded, then each failed server and its errors. */
    public String summary() {
        StringBuilder sb = new StringBuilder("weight update to version ")
                .append(version)
                .append(" from ")
                .append(modelPath)
                .append(": ")
                .append(servers.size() - failures().size())
                .append('/')
                .append(servers.size())
                .append(" servers ok");
        for (ServerOutcome o : failures()) {
            sb.append("; ").append(o.server()).append(": ").append(String.join(", ", o.errors()));
        }
        return sb.toString();
    }

    /**
     * One server's part of an update.
     *
     * @param server the server
     * @param loaded true when its weight-update call succeeded (it now serves {@code version})
     * @param continued true when its continue call succeeded (it is not left paused)
     * @param errors what failed, step by step (e.g. {@code POST /update_weights_from_disk: HTTP 400:
     *     …}); empty when every step succeeded
     * @param pauseTime time spent in the pause call(s)
     * @param updateTime time spent loading (zero when the update was not sent because pause failed)
     * @param continueTime time spent in the continue call, which is always sent
     */
    public record ServerOutcome(
            ServerAddress server,
            boolean loaded,
            boolean continued,
            List<String> errors,
            Duration pauseTime,
            Duration updateTime,
            Duration continueTime) {

        public ServerOutcome {
            Objects.requireNonNull(server, "server");
            errors = List.copyOf(errors);
        }

        /** True when pause, update and continue all succeeded. */
        public boolean ok() {
            return errors.isEmpty();
        }
    }
}
