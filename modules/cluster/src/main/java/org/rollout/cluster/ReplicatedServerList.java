package org.rollout.cluster;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.ddata.Key;
import org.apache.pekko.cluster.ddata.LWWMap;
import org.apache.pekko.cluster.ddata.LWWMapKey;
import org.apache.pekko.cluster.ddata.SelfUniqueAddress;
import org.apache.pekko.cluster.ddata.typed.javadsl.DistributedData;
import org.apache.pekko.cluster.ddata.typed.javadsl.Replicator;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.SelfUp;
import org.apache.pekko.cluster.typed.Subscribe;
import org.rollout.config.ServerAddress;
import org.rollout.inference.RemoteInferenceEngine;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The inference servers added and drained at run time, replicated to every node with Pekko
 * Distributed Data, and this node's engine following them.
 *
 * <p>One {@link LWWMap} ({@code rollout-servers}): address ({@code host:port}) to {@code active} or
 * {@code draining <ms>} (the hand-over deadline in milliseconds). A node's {@link #add} or {@link
 * #drain} writes an entry; every node (this one included) subscribes to the map and applies each
 * entry to its own engine: {@code active} adds the server (or cancels its drain), {@code draining}
 * drains it. A drained server's entry stays, so a node that joins later, or restarts with the
 * server in its {@code rollout.servers}, drains it too; adding it again overwrites the entry. The
 * last write of an address wins a merge (its clock is the writer's wall clock).
 *
 * <p>Writes go to a majority of nodes within the timeout and are then gossiped on; a write that
 * misses the majority still holds locally, reaches the others by gossip, and fails its stage with
 * {@link ReplicatedState.NotReplicatedException}.
 */
public final class ReplicatedServerList {
    private static final Logger log = LoggerFactory.getLogger(ReplicatedServerList.class);
    static final Key<LWWMap<String, String>> KEY = LWWMapKey.create("rollout-servers");
    private static final String ACTIVE = "active";
    private static final String DRAINING = "draining ";

    private final ActorSystem<?> system;
    private final ActorRef<Replicator.Command> replicator;
    private final SelfUniqueAddress self;
    private final Duration timeout;

    private ReplicatedServerList(ActorSystem<?> system, Duration timeout) {
        this.system = system;
        DistributedData dd = DistributedData.get(system);
        this.replicator = dd.replicator();
        this.self = dd.selfUniqueAddress();
        this.timeout = timeout;
    }

    /**
     * Starts following the replicated list on this node: every entry, now and later, is applied to
     * {@code engine}.
     *
     * @param timeout how long a write waits for a majority of nodes
     */
    public static ReplicatedServerList follow(ActorSystem<?> system, RemoteInferenceEngine engine, Duration timeout) {
        Objects.requireNonNull(engine, "engine");
        ReplicatedServerList list = new ReplicatedServerList(system, timeout);
        system.systemActorOf(follower(list.replicator, engine, timeout), "rollout-server-list", Props.empty());
        return list;
    }

    /** Adds {@code server} on every node (each loads the current weights on it before using it). */
    public CompletionStage<Void> add(ServerAddress server) {
        return write(server, ACTIVE, "adding inference server " + server);
    }

    /** Drains {@code server} on every node, handing its segments over after {@code handOverAfter}. */
    public CompletionStage<Void> drain(ServerAddress server, Duration handOverAfter) {
        return write(server, DRAINING + handOverAfter.toMillis(), "draining inference server " + server);
    }

    private CompletionStage<Void> write(ServerAddress server, String state, String what) {
        String address = server.toString();
        return AskPattern.<Replicator.Command, Replicator.UpdateResponse<LWWMap<String, String>>>ask(
                        replicator,
                        r -> new Replicator.Update<>(
                                KEY,
                                LWWMap.<String, String>create(),
                                new Replicator.WriteMajority(timeout),
                                r,
                                map -> map.put(self, address, state)),
                        timeout.plusSeconds(5),
                        system.scheduler())
                .thenApply(reply -> {
                    if (reply instanceof Replicator.UpdateSuccess<?>) {
                        return null;
                    }
                    if (reply instanceof Replicator.UpdateTimeout<?>) {
                        throw new ReplicatedState.NotReplicatedException(what, timeout);
                    }
                    throw new IllegalStateException(what + ": replicated update failed: " + reply);
                });
    }

    /**
     * Applies every change of the map, and, once this node is Up, the map as a majority of nodes
     * hold it: a node that restarts with a drained server in its {@code rollout.servers} would
     * otherwise use that server until gossip brings the entry, which took 18 s on a busy machine.
     */
    private static Behavior<Object> follower(
            ActorRef<Replicator.Command> replicator, RemoteInferenceEngine engine, Duration timeout) {
        return Behaviors.setup(ctx -> {
            replicator.tell(new Replicator.Subscribe<>(
                    KEY,
                    ctx.<Replicator.SubscribeResponse<LWWMap<String, String>>>getSelf()
                            .narrow()));
            Cluster.get(ctx.getSystem())
                    .subscriptions()
                    .tell(Subscribe.create(ctx.getSelf().narrow(), SelfUp.class));
            return Behaviors.receive((c, msg) -> {
                if (msg instanceof Replicator.Changed<?> changed) {
                    apply(entries(changed.dataValue()), engine);
                } else if (msg instanceof SelfUp) {
                    replicator.tell(new Replicator.Get<>(
                            KEY,
                            new Replicator.ReadMajority(timeout),
                            c.<Replicator.GetResponse<LWWMap<String, String>>>getSelf()
                                    .narrow()));
                } else if (msg instanceof Replicator.GetSuccess<?> got) {
                    apply(entries(got.dataValue()), engine);
                }
                // NotFound: nothing was ever added or drained; GetFailure: gossip brings it later.
                return Behaviors.same();
            });
        });
    }

    @SuppressWarnings("unchecked")
    private static Map<String, String> entries(Object map) {
        return ((LWWMap<String, String>) map).getEntries();
    }

    /** Brings the engine's pool in line with the replicated entries. */
    static void apply(Map<String, String> entries, RemoteInferenceEngine engine) {
        Map<ServerAddress, String> states = new HashMap<>();
        engine.serverStats().forEach(s -> states.put(s.address(), s.state()));
        for (Map.Entry<String, String> e : entries.entrySet()) {
            ServerAddress server;
            try {
                server = ServerAddress.parse(e.getKey());
            } catch (IllegalArgumentException bad) {
                log.warn("replicated server list: entry '{}' is not host:port; ignored", e.getKey());
                continue;
            }
            String current = states.get(server);
            try {
                if (e.getValue().equals(ACTIVE)) {
                    if (!"active".equals(current) && engine.addServer(server)) {
                        log.info("inference server {} added by the replicated server list", server);
                    }
                } else if (e.getValue().startsWith(DRAINING)) {
                    if ("active".equals(current)) {
                        Duration handOver =
                                Duration.ofMillis(Long.parseLong(e.getValue().substring(DRAINING.length())));
                        engine.drainServer(server, handOver);
                        log.info("inference server {} drained by the replicated server list", server);
                    }
                } else {
                    log.warn("replicated server list: {} has unknown state '{}'; ignored", server, e.getValue());
                }
            } catch (IllegalArgumentException | IllegalStateException refused) {
                log.warn(
                        "replicated server list: {} -> {} not applied here: {}",
                        server,
                        e.getValue(),
                        refused.getMessage());
            }
        }
    }
}
