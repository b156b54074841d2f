package org.rollout.cli;

import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.cluster.Cluster;
import org.rollout.config.ServerAddress;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.inference.ServerStats;

/**
 * The readiness check of a node's management endpoint ({@code GET /ready}), besides Pekko
 * Management's own cluster-membership check (the node is Up or WeaklyUp in the cluster). A node
 * with the rollout role is ready when its runner actor is running and at least one of its model
 * servers answers {@code GET /health} with 200 within {@link #PROBE_TIMEOUT}; servers are probed in
 * order and the first healthy one ends the probe. A node without the rollout role runs no groups,
 * so cluster membership is all its readiness needs.
 *
 * <p>Pekko Management creates the check by class name, with the classic ActorSystem; the node
 * registers what it needs ({@link #register}) under that system before the endpoint starts.
 */
public final class NodeReadiness implements Supplier<CompletionStage<Boolean>> {
    /** How long one model server's health probe may take. */
    static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);

    private static final Map<String, Node> NODES = new ConcurrentHashMap<>();
    private static final HttpClient HTTP = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(PROBE_TIMEOUT)
            .build();

    /** What a node's readiness looks at. */
    record Node(boolean runsGroups, RemoteInferenceEngine engine) {}

    private final ActorSystem system;

    public NodeReadiness(ActorSystem system) {
        this.system = system;
    }

    /** Registers the node of {@code system} (by its name and address) for its readiness check. */
    static void register(ActorSystem system, Node node) {
        NODES.put(key(system), node);
    }

    static void unregister(ActorSystem system) {
        NODES.remove(key(system));
    }

    private static String key(ActorSystem system) {
        return system.name() + "@" + Cluster.get(system).selfAddress();
    }

    @Override
    public CompletionStage<Boolean> get() {
        Node node = NODES.get(key(system));
        if (node == null) {
            return CompletableFuture.completedFuture(false); // still starting
        }
        if (!node.runsGroups()) {
            return CompletableFuture.completedFuture(true);
        }
        CompletionStage<Boolean> runner = system.actorSelection("/user/runner")
                .resolveOne(PROBE_TIMEOUT)
                .handle((ref, failure) -> failure == null);
        List<ServerAddress> servers =
                node.engine().serverStats().stream().map(ServerStats::address).toList();
        return runner.thenCompose(up -> up ? anyHealthy(servers, 0) : CompletableFuture.completedFuture(false));
    }

    private static CompletionStage<Boolean> anyHealthy(List<ServerAddress> servers, int from) {
        if (from >= servers.size()) {
            return CompletableFuture.completedFuture(false);
        }
        HttpRequest probe = HttpRequest.newBuilder(servers.get(from).uri("/health"))
                .timeout(PROBE_TIMEOUT)
                .GET()
                .build();
        return HTTP.sendAsync(probe, HttpResponse.BodyHandlers.discarding())
                .handle((response, failure) -> failure == null && response.statusCode() == 200)
                .thenCompose(
                        healthy -> healthy ? CompletableFuture.completedFuture(true) : anyHealthy(servers, from + 1));
    }
}
