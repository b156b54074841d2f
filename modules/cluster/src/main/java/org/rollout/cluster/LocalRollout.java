package org.rollout.cluster;

import com.typesafe.config.Config;
import java.nio.file.Path;
import java.time.Duration;
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
            Path statsFile) {
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
    private final StatsBook stats;
    private final LocalRolloutClient client;
    private final AtomicBoolean closed = new AtomicBoolean();

    private LocalRollout(ActorSystem<Void> system, Refs refs, StatsBook stats, Duration publishTimeout) {
        this.system = system;
        this.refs = refs;
        this.stats = stats;
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
        StatsBook stats = new StatsBook(spec.statsFile());
        CompletableFuture<Refs> started = new CompletableFuture<>();
        DurableState state = DurableState.inMemory();
        AtomicReference<ActorRef<RolloutCoordinator.Command>> coordinatorRef = new AtomicReference<>();
        Behavior<Void> guardian = Behaviors.setup(ctx -> {
            ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic = ctx.spawn(
                    Topic.create(WeightVersion.VersionChanged.class, "rollout-weight-version"), "version-topic");
            ActorRef<Collector.Command> collector = ctx.spawn(
                    Supervision.collector(
                            wrapper.wrap("collector", collector(spec, stats, topic, null)), coordinatorRef::get),
                    "collector",
                    singletonProps("collector"));
            AtomicBoolean firstBudget = new AtomicBoolean(true);
            // The limits and initial version, untouched by the first incarnation's counting.
            StalenessBudget template = ClusterRollout.freshBudget(spec.budget());
            ActorRef<RolloutCoordinator.Command> coordinator = ctx.spawn(
                    Supervision.coordinator(wrapper.wrap(
                            "coordinator",
                            Behaviors.setup(c -> RolloutCoordinator.create(
                                    // A restarted coordinator counts from the ledger, as a successor does.
                                    firstBudget.getAndSet(false) ? spec.budget() : ClusterRollout.freshBudget(template),
                                    spec.source(),
                                    spec.evalItems(),
                                    spec.evalEvery(),
                                    spec.evalMaxConcurrent(),
                                    spec.queueSize(),
                                    collector,
                                    state,
                                    Duration.ofSeconds(10))))),
                    "coordinator",
                    singletonProps("coordinator"));
            coordinatorRef.set(coordinator);
            ActorRef<WeightVersion.Command> weightVersion = ctx.spawn(
                    Supervision.weightVersion(wrapper.wrap(
                            "weight-version",
                            WeightVersion.create(
                                    spec.initialVersion(),
                                    spec.publisher(),
                                    coordinator,
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
            started.complete(new Refs(coordinator, collector, weightVersion));
            return Behaviors.empty();
        });
        ActorSystem<Void> system = ActorSystem.create(guardian, "rollout", pekko);
        try {
            Refs refs = started.get(30, TimeUnit.SECONDS);
            return new LocalRollout(
                    system, refs, stats, spec.weightUpdateTimeout().plusSeconds(30));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            system.terminate();
            throw new IllegalStateException("interrupted while starting the rollout engine", e);
        } catch (ExecutionException | TimeoutException e) {
            system.terminate();
            throw new IllegalStateException("the rollout engine did not start within 30 s", e);
        }
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
        long stalenessLimit = spec.services().stalenessPolicy() == StalenessPolicy.CANCEL
                ? spec.services().maxHeadOffpolicyness()
                : Long.MAX_VALUE;
        return Collector.create(
                spec.budget().consumerBatchSize(),
                spec.batchAckTimeout(),
                stalenessLimit,
                stats,
                topic,
                coordinator,
                true);
    }

    /** The trainer's handle on this engine. */
    public LocalRolloutClient client() {
        return client;
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
            AskPattern.<Collector.Command, Boolean>ask(
                            refs.collector(), Collector.Flush::new, Duration.ofSeconds(10), system.scheduler())
                    .toCompletableFuture()
                    .get(15, TimeUnit.SECONDS);
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
