package org.rollout.cluster;

import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import com.fasterxml.jackson.databind.deser.std.UntypedObjectDeserializer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.ReceiveBuilder;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;
import org.rollout.config.StalenessPolicy;

/**
 * One per rollout node: owns the node's engine and workflows ({@link NodeServices}) and hands each
 * dispatched task to a group actor ({@link GroupRun}) from its pool of idle group actors (its
 * children, spawned when the pool is empty and reused from then on); the group actor owns its
 * slots, one per sample ({@link SlotLease}).
 * Registered with the Receptionist under {@link
 * #SERVICE_KEY}, where the coordinator and the weight version find it.
 *
 * <p>Protocol: {@link RunGroup} starts a group; {@link CancelGroup} ends one (its slots are
 * aborted); {@link GetInfo} reports capacity and load. During a weight update the weight version
 * sends {@link PrepareWeightUpdate} (the node's engine closes its gate: no new segment is sent)
 * and then either broadcasts the new version — the engine takes it and opens the gate — or sends
 * {@link AbandonWeightUpdate}.
 *
 * <p>Outbox: a group's outcome goes from its group actor to the runner, which delivers it to the
 * collector and keeps it until the coordinator says it is done with the task ({@link Forget}: the
 * rejection is recorded, or the trainer acknowledged the batch). When the coordinator's node is
 * lost, its successor asks every runner what it holds ({@link GetHoldings}) and has the outcomes
 * its new collector never saw delivered again ({@link Resend}); so an accepted group that was
 * buffered, or handed out and not acknowledged, is not lost with the collector. A group cancelled
 * by the coordinator (another attempt finished first) is delivered but not kept.
 *
 * <p>Groups: the runner tells a group when the coordinator cancels it and, under {@code
 * staleness_policy = cancel}, when the version moves on; each group owns its {@code episode_timeout}
 * timer and reports its one outcome ({@link Ended}). A group is supervised with stop: one that
 * throws reports itself {@code failed} as it stops, and the runner carries on.
 *
 * <p>Two behaviours: taking groups, and draining ({@link Drain}, when its node shuts down
 * gracefully; see {@code Draining}): the runner leaves the Receptionist, so the coordinator takes
 * no more groups here and dispatches the ones in flight again elsewhere (the first attempt to
 * finish wins, semantics §6); it replies when its groups have ended, and its node then leaves the
 * cluster. A runner restarted while draining stays draining.
 *
 * <p>When the runner stops (its node shuts down), its group actors stop with it: each interrupts
 * its slots' episodes and releases its cache; the coordinator re-dispatches their
 * tasks elsewhere.
 *
 * <p>Failure: a runner that stays paused longer than {@code weight_update_timeout} without hearing
 * the outcome (the weight version's node died mid-update) resumes on its own with its current
 * version and logs it, so a lost update never leaves generation stopped (other rollout systems
 * have left servers paused for good after an update that never finished).
 */
public final class GroupRunner extends AbstractBehavior<GroupRunner.Command> {

    /**
     * The dispatcher to spawn a runner on: one thread for the runner and its group actors (reference.conf, {@code pekko.actor.rollout-runner-dispatcher}).
     */
    public static final DispatcherSelector DISPATCHER =
            DispatcherSelector.fromConfig("pekko.actor.rollout-runner-dispatcher");

    /** The runner's dispatcher and its counting mailbox ({@link MailboxDepths}). */
    public static final Props PROPS = DISPATCHER.withMailboxFromConfig(MailboxDepths.configPath("runner"));

    /** Where the coordinator and the weight version find runners. */
    public static final ServiceKey<Command> SERVICE_KEY = ServiceKey.create(Command.class, "rollout-group-runner");

    public sealed interface Command {}

    /**
     * Run task {@code taskId} (attempt {@code attempt}) as a group; report it to {@code collector},
     * the collector of trainer rank {@code rank} of {@code ranks}, where every task of that rank
     * goes from now on. On the wire {@code data} is JSON: its values come back as Java JSON types (numbers, strings,
     * booleans, {@code List}s, {@code Map}s). The annotation keeps Pekko's Scala module from turning
     * nested objects and arrays into Scala collections, which no workflow expects.
     */
    public record RunGroup(
            long taskId,
            int attempt,

            @JsonDeserialize(contentUsing = UntypedObjectDeserializer.class)
            Map<String, Object> data,

            boolean isEval,
            int dispatchVersion,
            ActorRef<Collector.Command> collector,
            int rank,
            int ranks)
            implements Command, CborSerializable {}

    /** Stop the group of task {@code taskId}, attempt {@code attempt}, and report it rejected. */
    public record CancelGroup(long taskId, int attempt, RejectReason reason, String detail)
            implements Command, CborSerializable {}

    /**
     * Stop taking groups (leave the Receptionist) and reply with the groups still running once none
     * is, or at once when none is. Sent by the node's coordinated shutdown.
     */
    public record Drain(ActorRef<Drained> replyTo) implements Command, NodeLocal {}

    /** The answer to {@link Drain}: the runner has no group in flight. */
    public record Drained(String node) implements NodeLocal {}

    /** Asks for this runner's capacity and load. */
    public record GetInfo(ActorRef<Info> replyTo) implements Command, CborSerializable {}

    /** A runner's capacity (groups it runs at once) and current load. */
    public record Info(ActorRef<Command> runner, String node, int capacity, int running) implements CborSerializable {}

    /** Close the engine's gate for weight update {@code updateId}, then confirm to {@code replyTo}. */
    public record PrepareWeightUpdate(long updateId, ActorRef<WeightVersion.Command> replyTo)
            implements Command, CborSerializable {}

    /** Weight update {@code updateId} failed everywhere: open the gate with the old version. */
    public record AbandonWeightUpdate(long updateId) implements Command, CborSerializable {}

    /**
     * The group {@code name} ended with {@code finished} (one per group, from its actor); the actor
     * is idle again and may own another group when {@code reusable}.
     */
    record Ended(String name, Collector.GroupFinished finished, boolean reusable) implements Command, NodeLocal {}

    /** The coordinator is done with these tasks: drop their outcomes. */
    public record Forget(List<Long> taskIds) implements Command, CborSerializable {
        public Forget {
            taskIds = List.copyOf(taskIds);
        }
    }

    /**
     * Asks what this runner runs and holds of trainer rank {@code rank}'s tasks (of {@code ranks}
     * ranks: the task ids that are {@code rank} modulo {@code ranks}); {@code collector} is where
     * those tasks' outcomes go from now on.
     */
    public record GetHoldings(ActorRef<Collector.Command> collector, int rank, int ranks, ActorRef<Holdings> replyTo)
            implements Command, CborSerializable {
        /** Whether task {@code taskId} is one this request asks about. */
        public boolean asksAbout(long taskId) {
            return ranks <= 1 || Math.floorMod(taskId, (long) ranks) == rank;
        }
    }

    /** A task this runner runs ({@code finished} false) or holds the outcome of ({@code finished} true). */
    public record Held(long taskId, int attempt, boolean finished, boolean accepted) implements CborSerializable {}

    /** The reply to {@link GetHoldings}. */
    public record Holdings(ActorRef<Command> runner, String node, List<Held> held) implements CborSerializable {}

    /**
     * Deliver the held outcomes of {@code taskIds} again, to {@code collector}: the collector of
     * trainer rank {@code rank} of {@code ranks}, which takes them.
     */
    public record Resend(List<Long> taskIds, ActorRef<Collector.Command> collector, int rank, int ranks)
            implements Command, CborSerializable {
        public Resend {
            taskIds = List.copyOf(taskIds);
        }
    }

    private record NewVersion(int version, String path) implements Command, NodeLocal {}

    /** The group actor {@code group} stopped (watched once, when it was spawned). */
    private record GroupActorStopped(ActorRef<GroupRun.Command> group) implements Command, NodeLocal {}

    private record PauseExpired(long updateId) implements Command, NodeLocal {}

    private final NodeServices svc;
    private final String node;
    private final int capacity;
    private final Duration updateTimeout;
    private final TimerScheduler<Command> timers;
    private final Map<String, Running> groups;
    private final Set<String> cancelled;
    private final Map<Long, Collector.GroupFinished> outbox;
    private final Kept kept;
    private final Supervision.Wrapper wrapper;
    private final boolean cancelStale;
    private final LargePayloads payloads;
    private final LongAdder started;

    /**
     * What the runner holds, kept across its restarts: its groups in flight and its pool of group
     * actors (none is stopped by a restart), the outbox, where outcomes go, and the weight
     * update it is paused for.
     */
    private static final class Kept {
        final Map<String, Running> groups = new HashMap<>();
        final Set<String> cancelled = new HashSet<>();
        final Map<Long, Collector.GroupFinished> outbox = new LinkedHashMap<>();
        /** The node's idle group actors (children of the runner), the last to go idle first. */
        final ArrayDeque<ActorRef<GroupRun.Command>> idleGroups = new ArrayDeque<>();

        int groupActors;

        /** Where outcomes go: each trainer rank's collector. */
        final RankCollectors collectors = new RankCollectors();

        long pausedFor = -1;
        /**
         * Draining rather than taking groups ({@link Drain}): the runner's behaviour, kept so that a
         * restarted runner comes back draining, off the Receptionist.
         */
        boolean draining;
        /** Who waits for the groups in flight to end ({@link Drain}), while draining. */
        final List<ActorRef<Drained>> drainWaiters = new ArrayList<>();
    }

    /**
     * A node's runner. Supervision: restart, keeping what the runner holds ({@link Kept}) and its
     * group actors: an exception in one message costs that message only; the groups run on, their
     * outcomes are delivered and kept as before, the engine's gate is re-armed to open if a weight
     * update was in progress. (Stopping instead would leave the coordinator dispatching to a dead
     * runner; a restart from nothing would lose the outbox and orphan the groups.)
     *
     * @param node a name for this node in status and logs
     * @param capacity how many groups this node runs at once (the coordinator balances by it)
     * @param versionTopic the weight version's broadcast topic
     * @param updateTimeout how long the engine's gate may stay closed without news of the update
     * @param started counts the groups this runner starts
     * @param wrapper the runner's behaviour and its group actors' pass through it inside their
     *     supervision (a test's fault injection; {@link Supervision.Wrapper#IDENTITY} otherwise)
     */
    static Behavior<Command> create(
            NodeServices svc,
            String node,
            int capacity,
            ActorRef<Topic.Command<WeightVersion.VersionChanged>> versionTopic,
            Duration updateTimeout,
            LongAdder started,
            Supervision.Wrapper wrapper) {
        return Behaviors.setup(outer -> {
            Kept kept = new Kept();
            AtomicBoolean first = new AtomicBoolean(true);
            Behavior<Command> runner = Behaviors.setup(ctx -> Behaviors.withTimers(timers -> {
                if (!kept.draining) {
                    // A draining runner stays off the Receptionist, also once restarted.
                    ctx.getSystem().receptionist().tell(Receptionist.register(SERVICE_KEY, ctx.getSelf()));
                }
                ActorRef<WeightVersion.VersionChanged> adapter = ctx.messageAdapter(
                        WeightVersion.VersionChanged.class, v -> new NewVersion(v.version(), v.path()));
                versionTopic.tell(Topic.subscribe(adapter));
                GroupRunner r =
                        new GroupRunner(ctx, timers, svc, node, capacity, updateTimeout, started, kept, wrapper);
                if (!first.getAndSet(false)) {
                    r.restarted();
                }
                return kept.draining ? r.new Draining() : r;
            }));
            return Behaviors.supervise(wrapper.wrap("runner", runner))
                    .onFailure(Supervision.restart().withStopChildren(false));
        });
    }

    private GroupRunner(
            ActorContext<Command> ctx,
            TimerScheduler<Command> timers,
            NodeServices svc,
            String node,
            int capacity,
            Duration updateTimeout,
            LongAdder started,
            Kept kept,
            Supervision.Wrapper wrapper) {
        super(ctx);
        this.kept = kept;
        this.wrapper = wrapper;
        this.groups = kept.groups;
        this.cancelled = kept.cancelled;
        this.outbox = kept.outbox;
        this.started = started;
        this.timers = timers;
        this.svc = svc;
        this.node = node;
        this.capacity = capacity;
        this.updateTimeout = updateTimeout;
        this.payloads = LargePayloads.get(ctx.getSystem());
        this.cancelStale = svc.stalenessPolicy() == StalenessPolicy.CANCEL;
    }

    /** After a restart: the gate of a weight update still in progress is re-armed to open on time. */
    private void restarted() {
        getContext()
                .getLog()
                .warn(
                        "runner restarted after a failure; its {} group(s) in flight and {} held outcome(s) carry on",
                        groups.size(),
                        outbox.size());
        if (kept.pausedFor >= 0) {
            timers.startSingleTimer("pause", new PauseExpired(kept.pausedFor), updateTimeout);
        }
        if (kept.draining) {
            getContext().getLog().info("runner on {} is still draining", node);
        }
    }

    /** A group in flight: its task, its actor and its run. */
    private record Running(RunGroup task, ActorRef<GroupRun.Command> group, GroupRun.Run run) {}

    /**
     * Taking groups: listed with the Receptionist, where the coordinator finds it; {@link Drain}
     * makes it draining ({@code Draining}).
     */
    @Override
    public Receive<Command> createReceive() {
        return serving(newReceiveBuilder())
                .onMessage(Ended.class, e -> ended(e.name(), e.finished(), e.reusable()))
                .onMessage(GroupActorStopped.class, this::onGroupActorStopped)
                .onMessage(Drain.class, this::startDraining)
                .build();
    }

    /**
     * Draining, its node shutting down gracefully: off the Receptionist, so the coordinator
     * dispatches no more groups here and those in flight here again elsewhere. It still runs and
     * reports its groups, keeps its outbox and answers everything a taking runner answers; every
     * {@link Drain} is answered once no group is in flight (at once when none is), and a runner
     * restarted while draining stays draining. A {@link RunGroup} that arrives now is run as when
     * taking: the coordinator sent it before it learnt that the runner left, and once it learns
     * it dispatches the task again elsewhere, where the first attempt to finish wins. Run here, it
     * may finish first and spare the other; the drain then waits for it too (for at most the
     * shutdown phase's timeout, after which the stop ends it and the other attempt stands).
     * Refusing it with a rejection would be wrong: a rejection that came first would end the task.
     */
    private final class Draining extends AbstractBehavior<Command> {
        Draining() {
            super(GroupRunner.this.getContext());
        }

        @Override
        public Receive<Command> createReceive() {
            return serving(newReceiveBuilder())
                    .onMessage(Ended.class, e -> {
                        ended(e.name(), e.finished(), e.reusable());
                        return replyIfDrained();
                    })
                    .onMessage(GroupActorStopped.class, s -> {
                        onGroupActorStopped(s);
                        return replyIfDrained();
                    })
                    .onMessage(Drain.class, d -> {
                        kept.drainWaiters.add(d.replyTo());
                        return replyIfDrained();
                    })
                    .build();
        }
    }

    /**
     * What a runner does taking groups or draining: all but a group's end and {@link Drain}. Their
     * handlers stay in the behaviour at hand ({@code Behaviors.same()}; {@code this} is taking).
     */
    private ReceiveBuilder<Command> serving(ReceiveBuilder<Command> builder) {
        return builder.onMessage(RunGroup.class, this::onRunGroup)
                .onMessage(CancelGroup.class, this::onCancelGroup)
                .onMessage(GetInfo.class, g -> {
                    g.replyTo().tell(new Info(getContext().getSelf(), node, capacity, groups.size()));
                    return Behaviors.same();
                })
                .onMessage(PrepareWeightUpdate.class, this::onPrepare)
                .onMessage(AbandonWeightUpdate.class, a -> {
                    if (kept.pausedFor == a.updateId()) {
                        openGate();
                    }
                    return Behaviors.same();
                })
                .onMessage(NewVersion.class, this::onNewVersion)
                .onMessage(PauseExpired.class, this::onPauseExpired)
                .onMessage(Forget.class, f -> {
                    for (Long id : f.taskIds()) {
                        outbox.remove(id);
                    }
                    return Behaviors.same();
                })
                .onMessage(GetHoldings.class, this::onGetHoldings)
                .onMessage(Resend.class, this::onResend);
    }

    private Behavior<Command> onRunGroup(RunGroup run) {
        String name = groupName(run.taskId(), run.attempt());
        if (groups.containsKey(name)) {
            getContext()
                    .getLog()
                    .warn("task {} attempt {} is already running here; ignoring", run.taskId(), run.attempt());
            return Behaviors.same();
        }
        kept.collectors.learn(run.rank(), run.ranks(), run.collector());
        if (run.dispatchVersion() > svc.engine().version()) {
            // This runner missed the version broadcasts before it joined (a node started or
            // restarted since the last publish): its engine would pin an older version than the
            // group's dispatch version, and label tokens with it. The dispatch version is one the
            // weight version had published, so every server has loaded it or is owed a re-sync.
            getContext()
                    .getLog()
                    .info(
                            "version {} learnt from task {}'s dispatch (this node was at {})",
                            run.dispatchVersion(),
                            run.taskId(),
                            svc.engine().version());
            svc.engine().setVersion(run.dispatchVersion());
        }
        ActorRef<GroupRun.Command> group = kept.idleGroups.pollFirst();
        if (group == null) {
            // Supervision of a group actor: stop. It holds nothing the node needs after its group:
            // stopped by a failure, it reports its group failed (GroupRun's PostStop), so the task
            // ends once, and it is not reused.
            group = getContext()
                    .spawn(
                            Behaviors.supervise(wrapper.wrap(
                                            "group",
                                            GroupRun.create(svc, getContext().getSelf())))
                                    .onFailure(SupervisorStrategy.stop()),
                            "group-" + kept.groupActors++,
                            DispatcherSelector.sameAsParent());
            // One watch per group actor's life, not per group: a group actor that stops while idle
            // (it throws on a late report) must not be handed groups, and one that stops owning a
            // group it was handed but had not yet heard of must not lose it.
            getContext().watchWith(group, new GroupActorStopped(group));
        }
        GroupRun.Run g = GroupRun.prepare(name, run, svc, group);
        group.tell(new GroupRun.Start(g));
        g.startEpisodes();
        groups.put(name, new Running(run, group, g));
        started.increment();
        return Behaviors.same();
    }

    /**
     * The group {@code name} ended with {@code g}: kept in the outbox unless the coordinator
     * cancelled it, and delivered to the collector; its actor owns the next group handed out when
     * {@code reusable}.
     */
    private Behavior<Command> ended(String name, Collector.GroupFinished g, boolean reusable) {
        Running ended = groups.remove(name);
        if (ended == null) {
            return Behaviors.same();
        }
        if (reusable) {
            kept.idleGroups.addFirst(ended.group());
        }
        if (!cancelled.remove(name)) {
            outbox.put(g.taskId(), g);
        }
        ActorRef<Collector.Command> to = kept.collectors.of(g.taskId());
        if (to != null) {
            CollectorTransfers.deliver(to, g, payloads);
        }
        return Behaviors.same();
    }

    /** Taking to draining: leaves the Receptionist; {@code drain} is answered once no group is in flight. */
    private Behavior<Command> startDraining(Drain drain) {
        kept.draining = true;
        getContext()
                .getSystem()
                .receptionist()
                .tell(Receptionist.deregister(SERVICE_KEY, getContext().getSelf()));
        getContext().getLog().info("runner on {} draining: no new groups; {} group(s) in flight", node, groups.size());
        kept.drainWaiters.add(drain.replyTo());
        replyIfDrained();
        return new Draining();
    }

    /** While draining: answers whoever waits once no group is in flight. */
    private Behavior<Command> replyIfDrained() {
        if (groups.isEmpty() && !kept.drainWaiters.isEmpty()) {
            getContext().getLog().info("runner on {} drained: no group in flight", node);
            for (ActorRef<Drained> w : kept.drainWaiters) {
                w.tell(new Drained(node));
            }
            kept.drainWaiters.clear();
        }
        return Behaviors.same();
    }

    /**
     * A group actor stopped: it is not handed groups any more, and a group it owned that did not
     * report (it had not yet taken it when it stopped) ends as {@code failed} here.
     */
    private Behavior<Command> onGroupActorStopped(GroupActorStopped s) {
        kept.idleGroups.remove(s.group());
        List<Running> orphans = new ArrayList<>();
        for (Running r : groups.values()) {
            if (r.group().equals(s.group())) {
                orphans.add(r);
            }
        }
        for (Running r : orphans) {
            ended(r.run().name, r.run().stopped(), false);
        }
        return Behaviors.same();
    }

    private Behavior<Command> onGetHoldings(GetHoldings get) {
        kept.collectors.learn(get.rank(), get.ranks(), get.collector());
        List<Held> held = new ArrayList<>();
        for (Running g : groups.values()) {
            if (get.asksAbout(g.task().taskId())) {
                held.add(new Held(g.task().taskId(), g.task().attempt(), false, false));
            }
        }
        for (Collector.GroupFinished g : outbox.values()) {
            if (get.asksAbout(g.taskId())) {
                held.add(new Held(g.taskId(), g.attempt(), true, g.outcome() instanceof Collector.Accepted));
            }
        }
        get.replyTo().tell(new Holdings(getContext().getSelf(), node, held));
        return Behaviors.same();
    }

    private Behavior<Command> onResend(Resend resend) {
        kept.collectors.learn(resend.rank(), resend.ranks(), resend.collector());
        for (Long id : resend.taskIds()) {
            Collector.GroupFinished g = outbox.get(id);
            if (g != null) {
                CollectorTransfers.deliver(resend.collector(), g, payloads);
            }
        }
        return Behaviors.same();
    }

    private Behavior<Command> onCancelGroup(CancelGroup cancel) {
        String name = groupName(cancel.taskId(), cancel.attempt());
        Running group = groups.get(name);
        if (group != null) {
            // Its outcome (this rejection, or one already on its way) is delivered but not kept.
            cancelled.add(name);
            group.group().tell(new GroupRun.Abandon(group.run(), cancel.reason(), cancel.detail()));
        }
        return Behaviors.same();
    }

    private Behavior<Command> onPrepare(PrepareWeightUpdate prepare) {
        svc.engine().pause();
        kept.pausedFor = prepare.updateId();
        timers.startSingleTimer("pause", new PauseExpired(prepare.updateId()), updateTimeout);
        prepare.replyTo()
                .tell(new WeightVersion.RunnerPrepared(
                        prepare.updateId(), getContext().getSelf()));
        return Behaviors.same();
    }

    private Behavior<Command> onNewVersion(NewVersion v) {
        svc.engine().weightsPublished(v.version(), v.path());
        if (v.version() > svc.engine().version()) {
            svc.engine().setVersion(v.version());
        }
        openGate();
        if (cancelStale) {
            GroupRun.VersionChanged changed = new GroupRun.VersionChanged(v.version());
            for (Running g : groups.values()) {
                if (!g.task().isEval()) {
                    g.group().tell(changed);
                }
            }
        }
        return Behaviors.same();
    }

    private Behavior<Command> onPauseExpired(PauseExpired expired) {
        if (kept.pausedFor == expired.updateId()) {
            getContext()
                    .getLog()
                    .warn(
                            "weight update {} sent no outcome within weight_update_timeout={}; resuming generation at version {}",
                            expired.updateId(),
                            updateTimeout,
                            svc.engine().version());
            openGate();
        }
        return Behaviors.same();
    }

    private void openGate() {
        kept.pausedFor = -1;
        timers.cancel("pause");
        svc.engine().resume();
    }

    private static String groupName(long taskId, int attempt) {
        return "group-" + taskId + "-" + attempt;
    }
}
