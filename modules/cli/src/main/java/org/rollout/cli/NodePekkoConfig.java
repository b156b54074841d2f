package org.rollout.cli;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.rollout.api.InvalidConfigException;
import org.rollout.config.RolloutSettings;

/** The Pekko configuration of a {@code rollout node}, layered from its flags down ({@link #of}). */
final class NodePekkoConfig {
    /** --discovery's values and the Pekko discovery method each stands for. */
    static final Map<String, String> DISCOVERY_METHODS =
            Map.of("config", "config", "dns", "pekko-dns", "kubernetes-api", "kubernetes-api");

    private NodePekkoConfig() {}

    /**
     * {@code node}'s flags (roles, seed nodes or discovery, host, port, management endpoint), over
     * its {@code --profile} files (later wins), the run configuration's {@code pekko} block, then
     * {@code cluster-config/local.conf}.
     */
    static Config of(NodeCommand node, RolloutSettings settings) {
        List<String> seeds = new ArrayList<>();
        List<String> given = node.seedNodes.isEmpty() ? List.of(node.host + ":" + node.port) : node.seedNodes;
        for (String s : node.discovery != null ? List.<String>of() : given) {
            if (!s.matches("[^:/\\s]+:\\d+")) {
                throw new InvalidConfigException("--seed-nodes", s, "host:port");
            }
            seeds.add("pekko://rollout@" + s);
        }
        Config flags = ConfigFactory.empty()
                .withValue("pekko.cluster.roles", ConfigValueFactory.fromIterable(node.roles))
                .withValue("pekko.cluster.seed-nodes", ConfigValueFactory.fromIterable(seeds))
                .withValue("pekko.remote.artery.canonical.hostname", ConfigValueFactory.fromAnyRef(node.host))
                .withValue("pekko.remote.artery.canonical.port", ConfigValueFactory.fromAnyRef(node.port));
        if (node.managementOn()) {
            flags = flags.withValue(
                            "pekko.management.http.hostname",
                            ConfigValueFactory.fromAnyRef(
                                    node.managementHost != null ? node.managementHost : node.host))
                    .withValue(
                            "pekko.management.http.port",
                            ConfigValueFactory.fromAnyRef(node.managementPort != null ? node.managementPort : 8558))
                    .withValue(
                            "pekko.management.health-checks.readiness-checks.rollout-node",
                            ConfigValueFactory.fromAnyRef(NodeReadiness.class.getName()));
        }
        if (node.discovery != null) {
            String method = DISCOVERY_METHODS.get(node.discovery);
            flags = flags.withValue(
                            "pekko.management.cluster.bootstrap.contact-point-discovery.service-name",
                            ConfigValueFactory.fromAnyRef(node.serviceName))
                    .withValue(
                            "pekko.management.cluster.bootstrap.contact-point-discovery.discovery-method",
                            ConfigValueFactory.fromAnyRef(method))
                    .withValue("pekko.discovery.method", ConfigValueFactory.fromAnyRef(method));
        }
        Config layered = flags;
        for (int i = node.profiles.size() - 1; i >= 0; i--) {
            Path p = node.profiles.get(i);
            if (!Files.isReadable(p)) {
                throw new InvalidConfigException("--profile", p.toString(), "a readable HOCON file");
            }
            layered = layered.withFallback(ConfigFactory.parseFile(p.toFile()));
        }
        Config logging = ConfigFactory.parseString("""
                pekko.loglevel = INFO
                pekko.loggers = ["org.apache.pekko.event.slf4j.Slf4jLogger"]
                pekko.logging-filter = "org.apache.pekko.event.slf4j.Slf4jLoggingFilter"
                """);
        return layered.withFallback(settings.config())
                .withFallback(ConfigFactory.parseResources("cluster-config/local.conf"))
                .withFallback(logging)
                .withFallback(ConfigFactory.load())
                .resolve();
    }
}
