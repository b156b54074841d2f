package org.rollout.cluster;

import com.typesafe.config.Config;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.rollout.config.StalenessPolicy;
import org.rollout.core.StalenessBudget;
import org.slf4j.LoggerFactory;

/**
 * A whole rollout engine in one {@link ActorSystem}: the version topic, the collector, the
 * coordinator, the weight version and one group runner, wired as they will be across a cluster.
 * {@code rollout local} and the end-to-end tests run it; {@link #client()} is the trainer's handle.
 *
 * <pre>
 *   try (LocalRollout rollout = LocalRollout.start(spec, pekkoConfig)) {
 *       RolloutClient c = rollout.client();
 *       …
 *   }
 * </pre>
 *
 * <p>{@link #close()} stops admission, writes the statistics still held, and terminates the
 * system; groups still in flight are abandoned (their generations aborted).
 */
public final class LocalRollout implements AutoCloseable {
    /**
     * The dispatcher of the coordinator and the collector (reference.conf, {@code
     * pekko.actor.rollout-singleton-dispatcher}): one thread for both, so that their exchanges on
     * the way of every group and every batch are queue operations on a running thread rather than
     * the wake-up of another (benchmarks/RESULTS.md, section 1b). Neither blocks.
     */
    static final String SINGLETON_DISPATCHER = "pekko.actor.rollout-singleton-dispatcher";

    /** The props of the coordinator or the collector: its counting mailbox, the singletons' dispatcher. */
    static Props singletonProps(String kind) {
        return MailboxDepths.mailbox(kind).withDispatcherFromConfig(SINGLETON_DISPATCHER);
    }

    /**
     * What a local engine is made of.
     *
     * @param services the node's engine, workflows and group options
     * @param budget the staleness budget (C, B, η) at the initial version
     * @param source training prompts
     * @param evalItems one evaluation pass, or empty
     * @param evalEvery versions between evaluation passes (0: only at start)
     * @param evalMaxConcurrent eval groups in flight at most
     * @param queueSize accepted groups held unbatched (plus those running) before admission waits
     * @param publisher how weights reach the servers
     * @param initialVersion the weight version at start (0, or the recovered one)
     * @param nodeCapacity groups this node runs at once
     * @param batchAckTimeout a batch not acknowledged within this is delivered again
     * @param prepareTimeout how long a weight update waits for runners to pause
     * @param weightUpdateTimeout how long a runner stays paused without news of its update
     * @param statsFile where per-version statistics are appended, or null
     * @param trainerRanks the trainer's data-parallel ranks, each pulling batches of its own from a
     *     coordinator and collector of its own ({@link RankShare}); 1 for one global budget
     */
    public record Spec(
            NodeServices services,
            StalenessBudget budget,
            PromptSource source,
            List<Map<String, Object>> evalItems,
            int evalEvery,
            int evalMaxConcurrent,
            int queueSize,
            WeightPublisher publisher,
            int initialVersion,
            int nodeCapacity,
            Duration batchAckTimeout,
            Duration prepareTimeout,
            Duration weightUpdateTimeout,
            Path statsFile,
            int trainerRanks) {
        /** A spec for a trainer that pulls with one rank. */
        public Spec(
                NodeServices services,
                StalenessBudget budget,
                PromptSource source,
                List<Map<String, Object>> evalItems,
                int evalEvery,
                int evalMaxConcurrent,
                int queueSize,
                WeightPublisher publisher,
                int initialVersion,
                int nodeCapacity,
                Duration batchAckTimeout,
                Duration prepareTimeout,
                Duration weightUpdateTimeout,
                Path statsFile) {
            this(
                    services,
                    budget,
                    source,
                    evalItems,
                    evalEvery,
                    evalMaxConcurrent,
                    queueSize,
                    publisher,
                    initialVersion,
                    nodeCapacity,
                    batchAckTimeout,
                    prepareTimeout,
                    weightUpdateTimeout,
                    statsFile,
                    1);
        }

        /** This spec, for a trainer that pulls with {@code ranks} data-parallel ranks. */
        public Spec withTrainerRanks(int ranks) {
            return new Spec(
                    services,
                    budget,
                    source,
                    evalItems,
                    evalEvery,
                    evalMaxConcurrent,
                    queueSize,
                    publisher,
                    initialVersion,
                    nodeCapacity,
                    batchAckTimeout,
                    prepareTimeout,
                    weightUpdateTimeout,
                    statsFile,
                    ranks);
        }

        public Spec {
            Objects.requireNonNull(services, "services");
            Objects.requireNonNull(budget, "budget");
            Objects.requireNonNull(source, "source");
            Objects.requireNonNull(publisher, "publisher");
            evalItems = List.copyOf(evalItems);
        }
    }

    /** The actors a client talks to. */
    record Refs(
            ActorRef<RolloutCoordinator.Command> coordinator,
            ActorRef<Collector.Command> collector,
            ActorRef<WeightVersion.Command> weightVersion) {}

    private final ActorSystem<Void> system;
    private final Refs refs;
    /** Each trainer rank's actors, by rank ({@code refs} is rank 0's). */
    private final List<Refs> ranks;

    private final StatsBook stats;
    private final LocalRolloutClient client;
    private final Duration publishTimeout;
    private final AtomicBoolean closed = new AtomicBoolean();

    private LocalRollout(ActorSystem<Void> system, List<Refs> ranks, StatsBook stats, Duration publishTimeout) {
        this.system = system;
        this.ranks = List.copyOf(ranks);
        this.refs = ranks.get(0);
        this.stats = stats;
        this.publishTimeout = publishTimeout;
        this.client = new LocalRolloutClient(system, refs, publishTimeout);
    }

    /**
     * Starts the engine; returns once every actor is up.
     *
     * @param pekko the ActorSystem's configuration (dispatcher sizes, logging)
     */
    public static LocalRollout start(Spec spec, Config pekko) {
        return start(spec, pekko, Supervision.Wrapper.IDENTITY);
    }

    /** As above, with each long-lived actor's behaviour passed through {@code wrapper} inside its supervision. */
    static LocalRollout start(Spec spec, Config pekko, Supervision.Wrapper wrapper) {
        return start(spec, pekko, wrapper, spec.trainerRanks());
    }

    /**
     * As above, for a trainer with {@code ranks} data-parallel ranks that each pull their own
     * batches: one coordinator and one collector per rank, each over the rank's share of the run
     * ({@link RankShare}: its task ids and prompts, {@code consumer_batch_size / ranks} groups a
     * batch, its share of the other limits), as AReaL's ranks each run their own rollout. The
     * ranks share the runner, the weight version and the statistics; a publish pauses and resumes
     * every rank. Evaluation passes run in rank 0. {@link #client(int)} is a rank's handle.
     *
     * @throws IllegalArgumentException when {@code ranks} is not between 1 and 256 or does not
     *     divide {@code consumer_batch_size}
     */
    static LocalRollout start(Spec spec, Config pekko, Supervision.Wrapper wrapper, int ranks) {
        int rankBatch = RankShare.batchShare(spec.budget().consumerBatchSize(), ranks);
        List<RankShare> shares = new ArrayList<>();
        for (int r = 0; r < ranks; r++) {
            shares.add(new RankShare(r, ranks));
        }
        StatsBook stats = new StatsBook(spec.statsFile());
        CompletableFuture<Ranks> started = new CompletableFuture<>();
        DurableState state = DurableState.inMemory();
        Behavior<Void> guardian = Behaviors.setup(ctx -> {
            ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic = ctx.spawn(
                    Topic.create(WeightVersion.VersionChanged.class, "rollout-weight-version"), "version-topic");
            List<ActorRef<Collector.Command>> collectors = new ArrayList<>();
            List<ActorRef<RolloutCoordinator.Command>> coordinators = new ArrayList<>();
            for (RankShare share : shares) {
                String suffix = share.rank() == 0 ? "" : "-" + share.rank();
                AtomicReference<ActorRef<RolloutCoordinator.Command>> coordinatorRef = new AtomicReference<>();
                ActorRef<Collector.Command> collector = ctx.spawn(
                        Supervision.collector(
                                wrapper.wrap(
                                        "collector" + suffix, collector(spec, rankBatch, stats, topic, null, share)),
                                coordinatorRef::get),
                        "collector" + suffix,
                        singletonProps("collector"));
                // The rank's ledger is its own; the version is the run's.
                DurableState rankState = ranks == 1 ? state : DurableState.ledgerApart(state, DurableState.inMemory());
                StalenessBudget first = ranks == 1 ? spec.budget() : rankBudget(spec.budget(), share, rankBatch);
                AtomicBoolean firstBudget = new AtomicBoolean(true);
                // The limits and initial version, untouched by the first incarnation's counting.
                StalenessBudget template = ClusterRollout.freshBudget(first);
                ActorRef<RolloutCoordinator.Command> coordinator = ctx.spawn(
                        Supervision.coordinator(wrapper.wrap(
                                "coordinator" + suffix,
                                Behaviors.setup(c -> RolloutCoordinator.create(
                                        // A restarted coordinator counts from the ledger, as a successor does.
                                        firstBudget.getAndSet(false) ? first : ClusterRollout.freshBudget(template),
                                        share.prompts(spec.source()),
                                        share.rank() == 0 ? spec.evalItems() : List.of(),
                                        spec.evalEvery(),
                                        spec.evalMaxConcurrent(),
                                        spec.queueSize(), // per rank, as AReaL's runner queues
                                        collector,
                                        rankState,
                                        Duration.ofSeconds(10),
                                        share)))),
                        "coordinator" + suffix,
                        singletonProps("coordinator"));
                coordinatorRef.set(coordinator);
                collectors.add(collector);
                coordinators.add(coordinator);
            }
            ActorRef<RolloutCoordinator.Command> admission =
                    ranks == 1 ? coordinators.get(0) : ctx.spawn(RankFanOut.create(coordinators), "ranks");
            ActorRef<WeightVersion.Command> weightVersion = ctx.spawn(
                    Supervision.weightVersion(wrapper.wrap(
                            "weight-version",
                            WeightVersion.create(
                                    spec.initialVersion(),
                                    spec.publisher(),
                                    admission,
                                    topic,
                                    spec.services().blocking(),
                                    spec.prepareTimeout(),
                                    state))),
                    "weight-version",
                    MailboxDepths.mailbox("weight_version"));
            ctx.spawn(
                    GroupRunner.create(
                            spec.services(),
                            "local",
                            spec.nodeCapacity(),
                            topic,
                            spec.weightUpdateTimeout(),
                            new LongAdder(),
                            wrapper),
                    "runner",
                    GroupRunner.PROPS);
            List<Refs> refs = new ArrayList<>();
            for (int r = 0; r < ranks; r++) {
                refs.add(new Refs(coordinators.get(r), collectors.get(r), weightVersion));
            }
            started.complete(new Ranks(refs));
            return Behaviors.empty();
        });
        ActorSystem<Void> system = ActorSystem.create(guardian, "rollout", pekko);
        try {
            Ranks refs = started.get(30, TimeUnit.SECONDS);
            return new LocalRollout(
                    system, refs.byRank(), stats, spec.weightUpdateTimeout().plusSeconds(30));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            system.terminate();
            throw new IllegalStateException("interrupted while starting the rollout engine", e);
        } catch (ExecutionException | TimeoutException e) {
            system.terminate();
            throw new IllegalStateException("the rollout engine did not start within 30 s", e);
        }
    }

    /** The actors of each trainer rank, by rank. */
    private record Ranks(List<Refs> byRank) {}

    /**
     * Rank {@code share}'s staleness budget: {@code max_concurrent_rollouts / ranks} (at least 1)
     * in flight, {@code rankBatch} groups a batch, the same η and initial version.
     */
    static StalenessBudget rankBudget(StalenessBudget whole, RankShare share, int rankBatch) {
        StalenessBudget b = new StalenessBudget(
                share.limit(whole.maxConcurrentRollouts()), rankBatch, whole.maxHeadOffpolicyness());
        if (whole.version() > 0) {
            b.onVersionRecovered(whole.version());
        }
        return b;
    }

    /**
     * The collector of {@code spec}'s engine, waiting for its coordinator to attach ({@code
     * coordinator}: told who the collector is at start, or null when it introduces itself).
     */
    static Behavior<Collector.Command> collector(
            Spec spec,
            StatsBook stats,
            ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic,
            ActorRef<RolloutCoordinator.Command> coordinator) {
        return collector(spec, spec.budget().consumerBatchSize(), stats, topic, coordinator, RankShare.ALONE);
    }

    /** As above, for rank {@code share}'s collector, which forms batches of {@code batchSize} groups. */
    static Behavior<Collector.Command> collector(
            Spec spec,
            int batchSize,
            StatsBook stats,
            ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic,
            ActorRef<RolloutCoordinator.Command> coordinator,
            RankShare share) {
        long stalenessLimit = spec.services().stalenessPolicy() == StalenessPolicy.CANCEL
                ? spec.services().maxHeadOffpolicyness()
                : Long.MAX_VALUE;
        return Collector.create(
                batchSize, spec.batchAckTimeout(), stalenessLimit, stats, topic, coordinator, true, share);
    }

    /** The trainer's handle on this engine (rank 0's, when each trainer rank pulls its own batches). */
    public LocalRolloutClient client() {
        return client;
    }

    /**
     * Trainer rank {@code rank}'s handle: it pulls and acknowledges the rank's batches, and its
     * status is the rank's (its budget, its collector); publishing goes to the run's weight
     * version, which every rank follows.
     */
    public LocalRolloutClient client(int rank) {
        return rank == 0 ? client : new LocalRolloutClient(system, ranks.get(rank), publishTimeout);
    }

    /** How many trainer ranks pull from this engine. */
    public int ranks() {
        return ranks.size();
    }

    /** The per-version statistics (live). */
    public StatsBook stats() {
        return stats;
    }

    ActorSystem<Void> system() {
        return system;
    }

    Refs refs() {
        return refs;
    }

    /** Writes the statistics still held, then stops every actor. Waits up to 30 s; idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            for (Refs rank : ranks) {
                AskPattern.<Collector.Command, Boolean>ask(
                                rank.collector(), Collector.Flush::new, Duration.ofSeconds(10), system.scheduler())
                        .toCompletableFuture()
                        .get(15, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            stats.flushAll();
        }
        stats.close();
        system.terminate();
        try {
            system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            LoggerFactory.getLogger(LocalRollout.class)
                    .warn("the actor system did not terminate within 30 s: {}", e.toString());
        }
    }
}
