package org.rollout.cluster;

import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/**
 * The trainer gateway of this node, if it has one: the base URL trainers reach it at. One per
 * actor system (a Pekko extension); the node sets it once its gateway listens and withdraws it
 * before the gateway closes.
 *
 * <p>The collector reads it when a gateway on another node pulls on a trainer's behalf and the
 * trainer can follow a redirect ({@link Collector.PullBatch#readElsewhere}): it then answers
 * {@link Collector.ReadFrom} with this URL instead of handing a batch out, so the trainer pulls
 * from the node that holds the batches and the bytes cross no node in between. A node without a
 * gateway leaves it empty, and batches pulled through other nodes' gateways are relayed from it
 * as before.
 *
 * <p>Thread-safe.
 */
public final class NodeGateway implements Extension {
    private static final Id ID = new Id();

    /** The extension's id; use {@link #get}. */
    public static final class Id extends ExtensionId<NodeGateway> {
        @Override
        public NodeGateway createExtension(ActorSystem<?> system) {
            return new NodeGateway(system);
        }
    }

    private final ActorSystem<?> system;
    private final AtomicReference<URI> uri = new AtomicReference<>();

    private NodeGateway(ActorSystem<?> system) {
        this.system = system;
    }

    /** The extension of {@code system}. */
    public static NodeGateway get(ActorSystem<?> system) {
        return ID.apply(system);
    }

    /**
     * Tells the collector, should it run on this node, that trainers reach this node's gateway at
     * {@code bound}; a gateway bound to every address ({@code 0.0.0.0}, {@code ::}) is advertised
     * at this node's cluster address (the host other nodes reach it at).
     *
     * @return the URL advertised
     */
    public URI advertise(URI bound) {
        URI advertised = advertisable(bound, system.address().getHost().orElse("127.0.0.1"));
        uri.set(advertised);
        return advertised;
    }

    /** Withdraws the gateway (it is closing): pulls through other nodes' gateways are relayed again. */
    public void withdraw() {
        uri.set(null);
    }

    /** The advertised gateway URL, if this node has one that listens. */
    public Optional<URI> uri() {
        return Optional.ofNullable(uri.get());
    }

    /** {@code bound} with its host replaced by {@code clusterHost} when it is a wildcard address. */
    static URI advertisable(URI bound, String clusterHost) {
        String host = bound.getHost();
        boolean wildcard;
        try {
            wildcard = host != null
                    && InetAddress.getByName(host.replace("[", "").replace("]", ""))
                            .isAnyLocalAddress();
        } catch (UnknownHostException e) {
            wildcard = false;
        }
        if (!wildcard) {
            return bound;
        }
        String h = clusterHost.contains(":") && !clusterHost.startsWith("[") ? "[" + clusterHost + "]" : clusterHost;
        return URI.create(bound.getScheme() + "://" + h + ":" + bound.getPort());
    }
}
