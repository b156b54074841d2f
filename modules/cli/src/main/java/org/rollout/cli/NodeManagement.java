package org.rollout.cli;

import java.net.URI;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.management.cluster.bootstrap.ClusterBootstrap;
import org.apache.pekko.management.javadsl.PekkoManagement;

/**
 * A node's management endpoint (Pekko Management over Pekko HTTP): {@code GET /alive} (liveness:
 * the endpoint answers), {@code GET /ready} (readiness: the node is Up in the cluster, and with the
 * rollout role its runner runs and one of its model servers is healthy, {@link NodeReadiness}),
 * {@code GET /cluster/members} (the members as this node sees them); and, with discovery, Cluster
 * Bootstrap, which finds the other nodes' management endpoints and forms or joins the cluster
 * without hand-listed seed nodes.
 */
final class NodeManagement implements AutoCloseable {
    private final ActorSystem system;
    private final PekkoManagement management;
    private final URI uri;

    private NodeManagement(ActorSystem system, PekkoManagement management, URI uri) {
        this.system = system;
        this.management = management;
        this.uri = uri;
    }

    /**
     * Starts the endpoint on {@code pekko.management.http.hostname:port} of the node's configuration
     * (0 picks a free port), then, when {@code bootstrap}, Cluster Bootstrap.
     *
     * @throws IllegalStateException when the endpoint cannot bind within 30 s
     */
    static NodeManagement start(
            org.apache.pekko.actor.typed.ActorSystem<?> typed, NodeReadiness.Node node, boolean bootstrap) {
        ActorSystem system = Adapter.toClassic(typed);
        NodeReadiness.register(system, node);
        PekkoManagement management = PekkoManagement.get(system);
        URI uri;
        try {
            uri = URI.create(management
                    .start()
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS)
                    .toString());
        } catch (Exception e) {
            throw new IllegalStateException(
                    "the management endpoint did not start on "
                            + system.settings().config().getString("pekko.management.http.hostname") + ":"
                            + system.settings().config().getInt("pekko.management.http.port") + ": " + e,
                    e);
        }
        if (bootstrap) {
            ClusterBootstrap.get(system).start();
        }
        return new NodeManagement(system, management, uri);
    }

    /** The endpoint's base URI, e.g. {@code http://127.0.0.1:8558}. */
    URI uri() {
        return uri;
    }

    @Override
    public void close() throws Exception {
        NodeReadiness.unregister(system);
        management.stop().toCompletableFuture().get(Duration.ofSeconds(10).toSeconds(), TimeUnit.SECONDS);
    }
}
