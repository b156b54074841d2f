package org.rollout.cli;

import com.typesafe.config.Config;
import org.rollout.cluster.ClusterRollout;
import org.rollout.config.RolloutSettings;

/** The ports a {@code rollout node} listens on, checked free before it joins the cluster. */
final class NodePorts {
    static final String GATEWAY = "the trainer gateway";
    static final String METRICS = "the metrics endpoint";
    static final String METRICS_KEY = "rollout.metrics.port";

    private NodePorts() {}

    /**
     * Refuses each fixed port this node will listen on that another process holds: the cluster
     * port (TCP transports), the trainer gateway's or else the metrics endpoint's, the management
     * endpoint's, and the agent proxy's when an agent runs.
     */
    static void requireFree(NodeCommand node, RolloutSettings settings, Config pekko, NodeAssembly assembly)
            throws PortInUseException {
        String transport = pekko.hasPath("pekko.remote.artery.transport")
                ? pekko.getString("pekko.remote.artery.transport")
                : "tcp";
        if (transport.equals("tcp") || transport.equals("tls-tcp")) {
            // The port this node binds: bind.port when set (a node behind a proxy advertises the
            // proxy's port as its canonical one, which is in use by design), else the canonical one.
            String bindPort = pekko.hasPath("pekko.remote.artery.bind.port")
                    ? pekko.getString("pekko.remote.artery.bind.port")
                    : "";
            String bindHost = pekko.hasPath("pekko.remote.artery.bind.hostname")
                    ? pekko.getString("pekko.remote.artery.bind.hostname")
                    : "";
            PortInUseException.requireFree(
                    "the cluster",
                    bindPort.isBlank() ? "--port, pekko.remote.artery.canonical.port" : "pekko.remote.artery.bind.port",
                    bindHost.isBlank() ? pekko.getString("pekko.remote.artery.canonical.hostname") : bindHost,
                    bindPort.isBlank()
                            ? pekko.getInt("pekko.remote.artery.canonical.port")
                            : Integer.parseInt(bindPort.strip()));
        }
        if (node.roles.contains(ClusterRollout.ROLE_GATEWAY)) {
            PortInUseException.requireFree(GATEWAY, "--gateway-port", node.gatewayHost, node.gatewayPort);
        } else {
            PortInUseException.requireFree(
                    METRICS,
                    METRICS_KEY,
                    settings.metrics().host(),
                    settings.metrics().port());
        }
        if (node.managementOn()) {
            PortInUseException.requireFree(
                    "the management endpoint",
                    "--management-port, pekko.management.http.port",
                    pekko.getString("pekko.management.http.hostname"),
                    pekko.getInt("pekko.management.http.port"));
        }
        if (assembly.runsAgentProxy()) {
            PortInUseException.requireFree(
                    "the agent proxy",
                    "rollout.agent.proxy_port",
                    settings.agentLaunch().proxyHost(),
                    settings.agentLaunch().proxyPort());
        }
    }
}
