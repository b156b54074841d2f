package org.rollout.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import org.rollout.config.InferenceConfig;
import org.rollout.config.RolloutSettings;
import org.rollout.config.ServerAddress;
import org.rollout.config.ServerLaunch;
import org.rollout.inference.ServerLauncher;

/** The inference configuration of a {@code rollout node}'s engine, with the servers it launches. */
final class NodeInferenceConfig {
    private NodeInferenceConfig() {}

    /**
     * The engine's configuration: {@code rollout.servers} plus the servers of {@code rollout.launch},
     * started here (and stopped with the node) and awaited healthy for {@code launch.health_timeout}.
     */
    static InferenceConfig of(
            RolloutSettings settings, List<ServerAddress> fromFile, List<AutoCloseable> toClose, PrintStream out)
            throws InterruptedException {
        ServerLaunch launch = settings.launch();
        List<ServerAddress> all = new ArrayList<>(settings.servers());
        for (ServerAddress s : fromFile) {
            if (!all.contains(s)) {
                all.add(s);
            }
        }
        if (launch.servers() == 0) {
            return fromFile.isEmpty() ? settings.inferenceConfig() : settings.inferenceConfig(all);
        }
        ServerLauncher launcher = ServerLauncher.start(launch);
        toClose.add(launcher);
        out.println("launching " + launch.servers() + " inference server(s) at " + launcher.addresses() + ", logs in "
                + launch.logDir());
        out.flush();
        launcher.awaitHealthy(launch.healthTimeout());
        all.addAll(launcher.addresses());
        // The launched servers read this node's disk: under weight_transfer = http they load a
        // published file by its node-local path (shared_disk_servers).
        return settings.inferenceConfig(all).toBuilder()
                .launchedServers(launcher.addresses())
                .build();
    }
}
