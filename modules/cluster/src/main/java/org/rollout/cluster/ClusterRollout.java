package org.rollout.cluster;

import com.typesafe.config.Config;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.ClusterSingleton;
import org.apache.pekko.cluster.typed.ClusterSingletonSettings;
import org.apache.pekko.cluster.typed.SingletonActor;
import org.rollout.core.StalenessBudget;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One node of a rollout cluster: an {@link ActorSystem} named {@code rollout} that joins a Pekko
 * cluster and runs what its roles say.
 *
 * <ul>
 *   <li>{@value #ROLE_COORDINATOR}: may host the cluster singletons — {@link RolloutCoordinator},
 *       {@link Collector} and {@link WeightVersion}. They run on the oldest node with this role,
 *       all three together; when that node is lost they start on the next one and take over from
 *       the {@link ReplicatedState} (the version never goes backwards; open tasks, accepted and
 *       unacknowledged groups are recovered from the ledger and the runners' outboxes).
 *   <li>{@value #ROLE_ROLLOUT}: runs one {@link GroupRunner}, found by the coordinator through the
 *       Receptionist; the coordinator balances groups by load over each node's capacity.
 *   <li>Any node can serve trainers: {@link #client()} talks to the singletons through their
 *       proxies (the gateway role of {@code rollout node} puts the HTTP trainer gateway on it).
 * </ul>
 *
 * <p>Every node with the coordinator role must be started with the same run configuration
 * (dataset, budget, servers): whichever of them hosts the singletons uses its own.
 */
public final class ClusterRollout implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ClusterRollout.class);

    public static final String ROLE_COORDINATOR = "coordinator";
    public static final String ROLE_ROLLOUT = "rollout";
    public static final String ROLE_GATEWAY = "gateway";

    private final ActorSystem<Void> system;
    private final LocalRollout.Refs refs;
    /** Each trainer rank's singletons' proxies, by rank ({@code refs} is rank 0's). */
    private final List<LocalRollout.Refs> ranks;

    private final Duration publishTimeout;
    private final StatsBook stats;
    private final LocalRolloutClient client;
    private final AtomicBoolean closed = new AtomicBoolean();

    private final LongAdder groupsStarted;

    private ClusterRollout(
            ActorSystem<Void> system,
            List<LocalRollout.Refs> ranks,
            StatsBook stats,
            Duration publishTimeout,
            LongAdder groupsStarted) {
        this.groupsStarted = groupsStarted;
        this.system = system;
        this.ranks = List.copyOf(ranks);
        this.refs = ranks.get(0);
        this.publishTimeout = publishTimeout;
        this.stats = stats;
        this.client = new LocalRolloutClient(system, refs, publishTimeout);
    }

    /**
     * Starts this node; returns once its actors are spawned (joining the cluster goes on in the
     * background: see {@link #awaitUp}).
     *
     * @param spec what the node runs (on a node without the coordinator role only the services,
     *     capacity and timeouts are used)
     * @param nodeName this node's name in status and logs
     * @param pekko the ActorSystem's configuration: cluster provider, roles ({@code
     *     pekko.cluster.roles}), seed nodes, transport
     * @param replicationTimeout how long a replicated write or read waits for a majority
     */
    /**
     * How long {@link MinorityGuard} remembers a member lost by downing: long enough to cover the
     * gap between the two sides' decisions (three times the resolver's stable-after), at least a minute.
     */
    private static Duration minorityWindow(Config config) {
        String key = "pekko.cluster.split-brain-resolver.stable-after";
        Duration stable = config.hasPath(key) ? config.getDuration(key) : Duration.ofSeconds(20);
        Duration three = stable.multipliedBy(3);
        return three.compareTo(Duration.ofMinutes(1)) > 0 ? three : Duration.ofMinutes(1);
    }

    public static ClusterRollout start(
            LocalRollout.Spec spec, String nodeName, Config pekko, Duration replicationTimeout) {
        StatsBook stats = new StatsBook(spec.statsFile());
        LongAdder groupsStarted = new LongAdder();
        int ranks = spec.trainerRanks();
        int rankBatch = RankShare.batchShare(spec.budget().consumerBatchSize(), ranks);
        CompletableFuture<List<LocalRollout.Refs>> started = new CompletableFuture<>();
        Behavior<Void> guardian = Behaviors.setup(ctx -> {
            ActorSystem<Void> sys = ctx.getSystem();
            Set<String> roles = Cluster.get(sys).selfMember().getRoles();
            ReplicatedState state = new ReplicatedState(sys, replicationTimeout);
            ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic = ctx.spawn(
                    Topic.create(WeightVersion.VersionChanged.class, "rollout-weight-version"), "version-topic");
            ctx.spawn(MinorityGuard.create(minorityWindow(sys.settings().config())), "minority-guard");
            ClusterSingleton singletons = ClusterSingleton.get(sys);
            ClusterSingletonSettings onCoordinators =
                    ClusterSingletonSettings.create(sys).withRole(ROLE_COORDINATOR);
            List<ActorRef<Collector.Command>> collectors = new ArrayList<>();
            List<ActorRef<RolloutCoordinator.Command>> coordinators = new ArrayList<>();
            if (ranks == 1) {
                AtomicReference<ActorRef<RolloutCoordinator.Command>> coordinatorProxy = new AtomicReference<>();
                ActorRef<Collector.Command> collector = singletons.init(SingletonActor.of(
                                Supervision.collector(
                                        Behaviors.<Collector.Command>setup(c ->
                                                LocalRollout.collector(spec, stats, topic, coordinatorProxy.get())),
                                        coordinatorProxy::get),
                                "rollout-collector")
                        .withProps(LocalRollout.singletonProps("collector"))
                        .withSettings(onCoordinators));
                ActorRef<RolloutCoordinator.Command> coordinator = singletons.init(SingletonActor.of(
                                Supervision.coordinator(Behaviors.<RolloutCoordinator.Command>setup(
                                        c -> coordinator(spec, RankShare.ALONE, collector, state, replicationTimeout))),
                                "rollout-coordinator")
                        .withProps(LocalRollout.singletonProps("coordinator"))
                        .withSettings(onCoordinators));
                coordinatorProxy.set(coordinator);
                collectors.add(collector);
                coordinators.add(coordinator);
            } else {
                // Each rank's coordinator and collector are sharded entities on the coordinator
                // nodes, so that the ranks' groups go into different nodes.
                RankPlacement.start(
                        ctx,
                        ranks,
                        ROLE_COORDINATOR,
                        roles.contains(ROLE_COORDINATOR),
                        r -> Supervision.collector(
                                Behaviors.<Collector.Command>setup(c -> LocalRollout.collector(
                                        spec, rankBatch, stats, topic, coordinators.get(r), new RankShare(r, ranks))),
                                () -> coordinators.get(r)),
                        r -> Supervision.coordinator(Behaviors.<RolloutCoordinator.Command>setup(c -> coordinator(
                                spec,
                                new RankShare(r, ranks),
                                collectors.get(r),
                                state.forRank(r),
                                replicationTimeout))),
                        LocalRollout.singletonProps("collector"),
                        LocalRollout.singletonProps("coordinator"),
                        coordinators,
                        collectors);
            }
            // With several ranks, a publish pauses and resumes each rank's coordinator; the fan-out
            // runs beside the weight version, on every node (it keeps nothing).
            ActorRef<RolloutCoordinator.Command> admission =
                    ranks == 1 ? coordinators.get(0) : ctx.spawn(RankFanOut.create(coordinators), "rank-fan-out");
            ActorRef<WeightVersion.Command> weightVersion = singletons.init(SingletonActor.of(
                            Supervision.weightVersion(Behaviors.<WeightVersion.Command>setup(c -> WeightVersion.create(
                                    spec.initialVersion(),
                                    spec.publisher(),
                                    admission,
                                    topic,
                                    spec.services().blocking(),
                                    spec.prepareTimeout(),
                                    state))),
                            "rollout-weight-version")
                    .withProps(MailboxDepths.mailbox("weight_version"))
                    .withSettings(onCoordinators));
            if (roles.contains(ROLE_ROLLOUT)) {
                ActorRef<GroupRunner.Command> runner = ctx.spawn(
                        GroupRunner.create(
                                spec.services(),
                                nodeName,
                                spec.nodeCapacity(),
                                topic,
                                spec.weightUpdateTimeout(),
                                groupsStarted,
                                Supervision.Wrapper.IDENTITY),
                        "runner",
                        GroupRunner.PROPS);
                drainOnShutdown(sys, runner, nodeName);
            }
            log.info("node {} started with roles {}", nodeName, roles);
            List<LocalRollout.Refs> refs = new ArrayList<>();
            for (int r = 0; r < ranks; r++) {
                refs.add(new LocalRollout.Refs(coordinators.get(r), collectors.get(r), weightVersion));
            }
            started.complete(refs);
            return Behaviors.empty();
        });
        ActorSystem<Void> system = ActorSystem.create(guardian, "rollout", pekko);
        try {
            List<LocalRollout.Refs> refs = started.get(30, TimeUnit.SECONDS);
            return new ClusterRollout(
                    system, refs, stats, spec.weightUpdateTimeout().plusSeconds(30), groupsStarted);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            system.terminate();
            throw new IllegalStateException("interrupted while starting the node", e);
        } catch (ExecutionException | TimeoutException e) {
            system.terminate();
            throw new IllegalStateException("the node did not start within 30 s", e);
        }
    }

    /**
     * Trainer rank {@code share}'s coordinator (the only one with one rank): the rank's budget,
     * prompts and ledger; evaluation passes run in rank 0.
     */
    private static Behavior<RolloutCoordinator.Command> coordinator(
            LocalRollout.Spec spec,
            RankShare share,
            ActorRef<Collector.Command> collector,
            DurableState state,
            Duration replicationTimeout) {
        StalenessBudget budget = share.ranks() == 1
                ? spec.budget()
                : LocalRollout.rankBudget(
                        spec.budget(), share, RankShare.batchShare(spec.budget().consumerBatchSize(), share.ranks()));
        return RolloutCoordinator.create(
                freshBudget(budget),
                share.prompts(spec.source()),
                share.rank() == 0 ? spec.evalItems() : List.of(),
                spec.evalEvery(),
                spec.evalMaxConcurrent(),
                spec.queueSize(),
                collector,
                state,
                replicationTimeout.plusSeconds(5),
                share);
    }

    /**
     * A graceful stop (SIGTERM, or leaving) first drains the runner, in coordinated shutdown's
     * {@code service-requests-done} phase, before the node leaves the cluster: the runner takes no
     * more groups, the coordinator dispatches the ones in flight here again elsewhere, and the node
     * waits for them to end here for at most that phase's timeout ({@code
     * pekko.coordinated-shutdown.phases.service-requests-done.timeout}, else {@code
     * default-phase-timeout}). Then the node leaves (its singletons hand over at once, without
     * waiting for failure detection) and stops; a group still running is ended by the stop and its
     * other attempt stands.
     */
    private static void drainOnShutdown(ActorSystem<Void> sys, ActorRef<GroupRunner.Command> runner, String nodeName) {
        CoordinatedShutdown shutdown = CoordinatedShutdown.get(Adapter.toClassic(sys));
        String phase = CoordinatedShutdown.PhaseServiceRequestsDone();
        Duration deadline = Duration.ofNanos(shutdown.timeout(phase).toNanos()).minusMillis(500);
        shutdown.addTask(phase, "rollout-drain-runner", () -> {
            long start = System.nanoTime();
            return AskPattern.<GroupRunner.Command, GroupRunner.Drained>ask(
                            runner, GroupRunner.Drain::new, deadline, sys.scheduler())
                    .handle((drained, failure) -> {
                        long ms = (System.nanoTime() - start) / 1_000_000;
                        if (failure == null) {
                            log.info("node {} drained in {} ms", nodeName, ms);
                        } else {
                            log.warn(
                                    "node {} leaves with groups still in flight after {} ms (they run again"
                                            + " elsewhere): {}",
                                    nodeName,
                                    ms,
                                    failure.toString());
                        }
                        return Done.getInstance();
                    });
        });
    }

    /** A budget with the template's limits and nothing counted: each coordinator incarnation starts from one. */
    static StalenessBudget freshBudget(StalenessBudget template) {
        StalenessBudget b = new StalenessBudget(
                template.maxConcurrentRollouts(), template.consumerBatchSize(), template.maxHeadOffpolicyness());
        if (template.version() > 0) {
            b.onVersionRecovered(template.version());
        }
        return b;
    }

    /** Waits until this node is Up in its own view of the cluster. */
    public void awaitUp(Duration timeout) throws InterruptedException, TimeoutException {
        long deadline = System.nanoTime() + timeout.toNanos();
        Cluster cluster = Cluster.get(system);
        while (cluster.selfMember().status() != MemberStatus.up()) {
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("node " + cluster.selfMember().address() + " not Up within " + timeout
                        + " (status " + cluster.selfMember().status() + "); are the seed nodes reachable?");
            }
            Thread.sleep(50);
        }
    }

    /** Groups (attempts) this node's runner has started (0 without the rollout role). */
    public long groupsStarted() {
        return groupsStarted.sum();
    }

    /** A trainer's handle, through the singletons' proxies (rank 0's, with several trainer ranks). */
    public LocalRolloutClient client() {
        return client;
    }

    /**
     * Trainer rank {@code rank}'s handle ({@code rollout.train_data_parallel_size}): it pulls and
     * acknowledges the rank's batches, and its status is the rank's; publishing goes to the run's
     * weight version, which every rank follows.
     */
    public LocalRolloutClient client(int rank) {
        return rank == 0 ? client : new LocalRolloutClient(system, ranks.get(rank), publishTimeout);
    }

    /** How many trainer ranks pull from this run. */
    public int ranks() {
        return ranks.size();
    }

    /** The trainer ranks whose collector runs on this node now (none with one rank: it is a singleton). */
    public java.util.concurrent.CompletionStage<java.util.Set<Integer>> collectorRanksHere() {
        if (ranks.size() == 1) {
            return java.util.concurrent.CompletableFuture.completedFuture(java.util.Set.of());
        }
        return RankPlacement.collectorsHere(system);
    }

    /** This node's statistics (written on the node that hosts the collector). */
    public StatsBook stats() {
        return stats;
    }

    public ActorSystem<Void> system() {
        return system;
    }

    /** This node's address, as {@code host:port}. */
    public String address() {
        var a = Cluster.get(system).selfMember().address();
        return a.getHost().orElse("?") + ":" + a.getPort().orElse(0);
    }

    /** The roles this node runs. */
    public List<String> roles() {
        return List.copyOf(Cluster.get(system).selfMember().getRoles());
    }

    LocalRollout.Refs refs() {
        return refs;
    }

    /** Leaves the cluster (singletons hand over) and stops the node; waits up to 30 s; idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        system.terminate();
        try {
            system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            log.warn("node did not terminate within 30 s: {}", e.toString());
        }
        stats.close();
    }
}
