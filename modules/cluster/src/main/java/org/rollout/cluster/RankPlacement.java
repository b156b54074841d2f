package org.rollout.cluster;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.function.IntFunction;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.ShardRegion;
import org.apache.pekko.cluster.sharding.typed.ClusterShardingQuery;
import org.apache.pekko.cluster.sharding.typed.ClusterShardingSettings;
import org.apache.pekko.cluster.sharding.typed.GetShardRegionState;
import org.apache.pekko.cluster.sharding.typed.ShardingEnvelope;
import org.apache.pekko.cluster.sharding.typed.ShardingMessageExtractor;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;

/**
 * Where each trainer rank's coordinator and collector run when the trainer pulls with several
 * ranks: as Cluster Sharding entities (one shard per rank) on the {@code coordinator} role, which
 * spreads them over the coordinator nodes, so that each rank's groups go into a node of their own
 * and the bytes into any one node fall with the number of ranks. A node that leaves or is downed
 * hands its ranks to the others, as a singleton's node does: the coordinator recovers from its
 * ledger, the runners deliver again what they hold to the new collector.
 *
 * <p>Every node talks to a rank's actors through a proxy of its own (a plain actor that forwards
 * to the entity). The entities are not remembered by sharding; instead each coordinator node asks
 * the shard regions every {@link #KEEP_ALIVE} to start every rank's entities ({@code
 * ShardRegion.StartEntity}: nothing is delivered to an entity that runs), which starts one that a
 * rebalance or a lost node stopped. Other nodes only send through their proxies.
 */
final class RankPlacement {

    private RankPlacement() {}

    static final EntityTypeKey<Collector.Command> COLLECTORS =
            EntityTypeKey.create(Collector.Command.class, "rollout-rank-collector");
    static final EntityTypeKey<RolloutCoordinator.Command> COORDINATORS =
            EntityTypeKey.create(RolloutCoordinator.Command.class, "rollout-rank-coordinator");

    /** How often every node makes sure each rank's coordinator and collector run somewhere. */
    static final Duration KEEP_ALIVE = Duration.ofSeconds(1);

    /** Each rank's proxies on this node, by rank. */
    record Proxies(
            List<ActorRef<RolloutCoordinator.Command>> coordinators, List<ActorRef<Collector.Command>> collectors) {}

    /**
     * Starts this node's share of the placement: the proxies, both entity types on {@code role},
     * and, when this node has {@code role} ({@code hosts}), the keep-alive. {@code collector} and
     * {@code coordinator} build rank {@code r}'s actors, given the proxies (filled before any entity
     * starts).
     */
    static Proxies start(
            ActorContext<Void> ctx,
            int ranks,
            String role,
            boolean hosts,
            IntFunction<Behavior<Collector.Command>> collector,
            IntFunction<Behavior<RolloutCoordinator.Command>> coordinator,
            Props collectorProps,
            Props coordinatorProps,
            List<ActorRef<RolloutCoordinator.Command>> coordinatorProxies,
            List<ActorRef<Collector.Command>> collectorProxies) {
        ActorSystem<Void> sys = ctx.getSystem();
        ClusterSharding sharding = ClusterSharding.get(sys);
        for (int r = 0; r < ranks; r++) {
            coordinatorProxies.add(ctx.spawn(proxy(sharding, COORDINATORS, r), "rank-coordinator-" + r));
            collectorProxies.add(ctx.spawn(proxy(sharding, COLLECTORS, r), "rank-collector-" + r));
        }
        ClusterShardingSettings settings =
                ClusterShardingSettings.create(sys).withRole(role).withNoPassivationStrategy();
        sharding.init(Entity.of(COLLECTORS, e -> collector.apply(rankOf(e.getEntityId())))
                .withSettings(settings)
                .withEntityProps(collectorProps)
                .withMessageExtractor(new ByRank<>()));
        sharding.init(Entity.of(COORDINATORS, e -> coordinator.apply(rankOf(e.getEntityId())))
                .withSettings(settings)
                .withEntityProps(coordinatorProps)
                .withMessageExtractor(new ByRank<>()));
        if (hosts) {
            ctx.spawn(keepAlive(ranks), "rank-keep-alive");
        }
        return new Proxies(List.copyOf(coordinatorProxies), List.copyOf(collectorProxies));
    }

    /** The ranks whose collector runs on this node now. */
    static CompletionStage<Set<Integer>> collectorsHere(ActorSystem<?> system) {
        return AskPattern.<ClusterShardingQuery, ShardRegion.CurrentShardRegionState>ask(
                        ClusterSharding.get(system).shardState(),
                        reply -> new GetShardRegionState(COLLECTORS, reply),
                        Duration.ofSeconds(5),
                        system.scheduler())
                .thenApply(state -> {
                    Set<Integer> ranks = new HashSet<>();
                    for (ShardRegion.ShardState shard : state.getShards()) {
                        for (String id : shard.getEntityIds()) {
                            ranks.add(rankOf(id));
                        }
                    }
                    return ranks;
                });
    }

    private static int rankOf(String entityId) {
        return Integer.parseInt(entityId);
    }

    /** Forwards every message to rank {@code rank}'s entity of {@code key}. */
    private static <M> Behavior<M> proxy(ClusterSharding sharding, EntityTypeKey<M> key, int rank) {
        return Behaviors.setup(ctx -> {
            List<EntityRef<M>> entity = new ArrayList<>(1); // resolved at the first message, after init
            return Behaviors.receiveMessage(m -> {
                if (entity.isEmpty()) {
                    entity.add(sharding.entityRefFor(key, Integer.toString(rank)));
                }
                entity.get(0).tell(m);
                return Behaviors.same();
            });
        });
    }

    private record Tick() {}

    /**
     * Every {@link #KEEP_ALIVE}, asks both shard regions to start each rank's entity; the regions'
     * acknowledgements come back here and are dropped.
     */
    private static Behavior<Object> keepAlive(int ranks) {
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> {
            org.apache.pekko.actor.ActorSystem classic = Adapter.toClassic(ctx.getSystem());
            org.apache.pekko.cluster.sharding.ClusterSharding sharding =
                    org.apache.pekko.cluster.sharding.ClusterSharding.get(classic);
            List<org.apache.pekko.actor.ActorRef> regions =
                    List.of(sharding.shardRegion(COORDINATORS.name()), sharding.shardRegion(COLLECTORS.name()));
            org.apache.pekko.actor.ActorRef self = Adapter.toClassic(ctx.getSelf());
            timers.startTimerWithFixedDelay(new Tick(), Duration.ZERO, KEEP_ALIVE);
            return Behaviors.receiveMessage(m -> {
                if (m instanceof Tick) {
                    for (org.apache.pekko.actor.ActorRef region : regions) {
                        for (int r = 0; r < ranks; r++) {
                            region.tell(new ShardRegion.StartEntity(Integer.toString(r)), self);
                        }
                    }
                }
                return Behaviors.same(); // a StartEntityAck: nothing to do
            });
        }));
    }

    /** One shard per rank: the entity id is the rank, and so is the shard id. */
    private static final class ByRank<M> extends ShardingMessageExtractor<ShardingEnvelope<M>, M> {
        @Override
        public String entityId(ShardingEnvelope<M> envelope) {
            return envelope.entityId();
        }

        @Override
        public String shardId(String entityId) {
            return entityId;
        }

        @Override
        public M unwrapMessage(ShardingEnvelope<M> envelope) {
            return envelope.message();
        }
    }
}
