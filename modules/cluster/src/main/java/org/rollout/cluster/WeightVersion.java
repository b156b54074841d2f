package org.rollout.cluster;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PreRestart;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.BehaviorBuilder;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.StashBuffer;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.WeightPublishException;

/**
 * The single source of the weight version. A trainer's publish moves it forward through the
 * training-step order of semantics §6.9:
 *
 * <pre>
 *   Publish(v, path)
 *     │ refuse unless v &gt; current (fencing: a stale trainer can never roll the version back)
 *     ├─► coordinator: PauseAdmission                   no new groups
 *     ├─► every runner: PrepareWeightUpdate ─► ack      engines send no new segment
 *     ├─► [virtual thread] WeightPublisher.update       servers: pause → load → continue (finally)
 *     ├─► topic: VersionChanged(v)                      engines take v, then resume
 *     ├─► coordinator: ResumeAdmission(v) ─► v          staleness budget grows by B
 *     └─► publisher: PublishReply(v)                    once the coordinator admits at v
 * </pre>
 *
 * <p>Durability: the new version is written to {@link DurableState} after the servers loaded it
 * and before anyone is told, and a weight version that starts (its node took over the singleton)
 * begins at the newest version written, so the version never goes backwards. A publish of the
 * version already current with the same path succeeds without loading anything again: a trainer
 * that retries a publish whose reply was lost with the old node gets its answer.
 *
 * <p>Its lifecycle is explicit, one behaviour per state:
 *
 * <pre>
 *   recovering ──Recovered──► idle ──Publish──► preparing ──all runners ready / prepare_timeout──► loading
 *       (reads the durable version;             (runners close                      (servers load on a
 *        publishes and reads wait)               their gates)                        blocking thread)
 *                               ▲                                                         │ loaded
 *                               └── confirming ◄── version told ◄──────────────── persisting (record written)
 *                        (publisher answered once the        (or, when nothing loaded, the update abandoned)
 *                         coordinator admits at v)
 * </pre>
 *
 * A publish that arrives while another is under way is stashed and taken, in arrival order, when
 * the version is idle again; a version read waits only while recovering (it must never see a
 * version older than the durable one) and is answered at once in every other state.
 *
 * <p>Publishes are handled one at a time, in arrival order. When no server could load the weights
 * the version does not move: runners get {@code AbandonWeightUpdate}, admission resumes at the old
 * version, and the publisher gets the reason. A runner that does not confirm the prepare within
 * {@code prepare_timeout} is named in the log and the update goes on without it.
 */
public final class WeightVersion {

    public sealed interface Command {}

    /**
     * Broadcast on the version topic after every successful publish, and by a new singleton that
     * took over a version written before. {@code path} is where the weights of {@code version}
     * are (empty for the launch weights): every node's engine keeps it, so that whichever node
     * probes a restarted server first re-sends it the current weights, not only a continue.
     */
    public record VersionChanged(int version, String path) implements CborSerializable {}

    /** Load {@code path} everywhere as {@code version}. */
    public record Publish(int version, String path, ActorRef<PublishReply> replyTo)
            implements Command, CborSerializable {}

    /**
     * The outcome of a publish: {@code error} and {@code failure} are null on success; {@code
     * failure} says whether the version was fenced ({@code REFUSED}), no server loaded the weights
     * ({@code NOT_LOADED}, version unchanged), or neither is known ({@code UNSPECIFIED}).
     */
    public record PublishReply(int version, String error, PublishResult report, WeightPublishException.Kind failure)
            implements CborSerializable {
        public boolean ok() {
            return error == null;
        }
    }

    /** Asks for the current version. */
    public record GetVersion(ActorRef<Integer> replyTo) implements Command, CborSerializable {}

    /** A runner closed its engine's gate for update {@code updateId}. */
    public record RunnerPrepared(long updateId, ActorRef<GroupRunner.Command> runner)
            implements Command, CborSerializable {}

    private record Runners(Set<ActorRef<GroupRunner.Command>> runners) implements Command, NodeLocal {}

    private record PrepareTimedOut(long updateId) implements Command, NodeLocal {}

    private record Updated(long updateId, PublishResult report, Throwable error) implements Command, NodeLocal {}

    private record Recovered(DurableState.VersionRecord record, Throwable error) implements Command, NodeLocal {}

    private record Written(long updateId, PublishResult report, Throwable error) implements Command, NodeLocal {}

    /** The coordinator took the version of update {@code updateId} in ({@code admitting} it now). */
    private record AdmissionConfirmed(long updateId, int admitting) implements Command, NodeLocal {}

    private record ConfirmTimedOut(long updateId) implements Command, NodeLocal {}

    /**
     * Publishes and version reads held while recovering or while an update is under way. Publishes
     * come from trainers one at a time each, reads from status polls: far below this.
     */
    static final int STASH_CAPACITY = 1_000;

    private static final String PREPARE_TIMER = "prepare";

    private static final String CONFIRM_TIMER = "confirm";

    private final ActorContext<Command> ctx;
    private final TimerScheduler<Command> timers;
    private final StashBuffer<Command> stash;
    private final WeightPublisher publisher;
    private final ActorRef<RolloutCoordinator.Command> coordinator;
    private final ActorRef<Topic.Command<VersionChanged>> topic;
    private final ExecutorService blocking;
    private final Duration prepareTimeout;
    private final DurableState state;
    private Set<ActorRef<GroupRunner.Command>> runners = Set.of();
    private int version;
    private String path = "";
    private long updateId;

    public static Behavior<Command> create(
            int initialVersion,
            WeightPublisher publisher,
            ActorRef<RolloutCoordinator.Command> coordinator,
            ActorRef<Topic.Command<VersionChanged>> topic,
            ExecutorService blocking,
            Duration prepareTimeout,
            DurableState state) {
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> Behaviors.withStash(STASH_CAPACITY, stash -> {
            ActorRef<Receptionist.Listing> listing = ctx.messageAdapter(
                    Receptionist.Listing.class, l -> new Runners(l.getServiceInstances(GroupRunner.SERVICE_KEY)));
            ctx.getSystem().receptionist().tell(Receptionist.subscribe(GroupRunner.SERVICE_KEY, listing));
            ctx.pipeToSelf(state.readVersion().toCompletableFuture(), Recovered::new);
            return new WeightVersion(
                            ctx,
                            timers,
                            stash,
                            initialVersion,
                            publisher,
                            coordinator,
                            topic,
                            blocking,
                            prepareTimeout,
                            state)
                    .recovering();
        })));
    }

    private WeightVersion(
            ActorContext<Command> ctx,
            TimerScheduler<Command> timers,
            StashBuffer<Command> stash,
            int initialVersion,
            WeightPublisher publisher,
            ActorRef<RolloutCoordinator.Command> coordinator,
            ActorRef<Topic.Command<VersionChanged>> topic,
            ExecutorService blocking,
            Duration prepareTimeout,
            DurableState state) {
        this.ctx = ctx;
        this.timers = timers;
        this.stash = stash;
        this.state = state;
        this.version = initialVersion;
        // Update ids of each incarnation start above the previous one's (a restart, a successor on
        // another node): a late reply meant for an abandoned update is never taken for a new one.
        this.updateId = System.currentTimeMillis() << 16;
        this.publisher = publisher;
        this.coordinator = coordinator;
        this.topic = topic;
        this.blocking = blocking;
        this.prepareTimeout = prepareTimeout;
    }

    // ---- states ----

    /** Reading the durable version: everything but the runners' listing waits. */
    private Behavior<Command> recovering() {
        return Behaviors.receive(Command.class)
                .onMessage(Recovered.class, this::onRecovered)
                .onMessage(Runners.class, this::onRunners)
                .onMessage(Publish.class, this::hold)
                .onMessage(GetVersion.class, this::hold)
                .onSignal(PreRestart.class, r -> abandonHeld())
                .build();
    }

    /** No update under way: a publish starts one. */
    private Behavior<Command> idle() {
        return Behaviors.receive(Command.class)
                .onMessage(Publish.class, this::begin)
                .onMessage(GetVersion.class, g -> {
                    g.replyTo().tell(version);
                    return Behaviors.same();
                })
                .onMessage(Runners.class, this::onRunners)
                .onMessage(Command.class, this::late)
                .build();
    }

    /** Runners closing their gates for {@code p}; {@code awaiting} have not confirmed yet. */
    private Behavior<Command> preparing(Publish p, Set<ActorRef<GroupRunner.Command>> awaiting) {
        return busy(p).onMessage(RunnerPrepared.class, r -> {
                    if (r.updateId() == updateId && awaiting.remove(r.runner()) && awaiting.isEmpty()) {
                        timers.cancel(PREPARE_TIMER);
                        return loading(p);
                    }
                    return Behaviors.same();
                })
                .onMessage(PrepareTimedOut.class, t -> {
                    if (t.updateId() != updateId) {
                        return Behaviors.same();
                    }
                    ctx.getLog()
                            .warn(
                                    "weight update {}: {} runner(s) did not confirm the pause within {}: {}; updating anyway",
                                    updateId,
                                    awaiting.size(),
                                    prepareTimeout,
                                    awaiting);
                    return loading(p);
                })
                .onMessage(Command.class, this::late)
                .build();
    }

    /** The servers loading {@code p} on a blocking thread. */
    private Behavior<Command> loading(Publish p) {
        long id = updateId;
        CompletableFuture<PublishResult> f = CompletableFuture.supplyAsync(
                () -> {
                    try {
                        return publisher.update(Path.of(p.path()), p.version());
                    } catch (RuntimeException e) {
                        throw e;
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                },
                blocking);
        ctx.pipeToSelf(f, (report, error) -> new Updated(id, report, error));
        return busy(p).onMessage(Updated.class, u -> u.updateId() == updateId ? onUpdated(p, u) : Behaviors.same())
                .onMessage(Command.class, this::late)
                .build();
    }

    /** {@code p} loaded; its record being written before anyone hears of it. */
    private Behavior<Command> persisting(Publish p) {
        return busy(p).onMessage(Written.class, w -> w.updateId() == updateId ? onWritten(p, w) : Behaviors.same())
                .onMessage(Command.class, this::late)
                .build();
    }

    /**
     * {@code p} is the version, told to everyone; the publisher is answered once the coordinator
     * confirms it admits at {@code p}'s version (or after {@code prepare_timeout}, when it could
     * not: a coordinator that starts again reads the written version).
     */
    private Behavior<Command> confirming(Publish p, PublishResult report) {
        long id = updateId;
        ActorRef<Integer> confirm = ctx.messageAdapter(Integer.class, v -> new AdmissionConfirmed(id, v));
        coordinator.tell(new RolloutCoordinator.ResumeAdmission(id, version, confirm));
        timers.startSingleTimer(CONFIRM_TIMER, new ConfirmTimedOut(id), prepareTimeout);
        return busy(p).onMessage(AdmissionConfirmed.class, c -> {
                    if (c.updateId() != updateId) {
                        return Behaviors.same();
                    }
                    timers.cancel(CONFIRM_TIMER);
                    p.replyTo().tell(new PublishReply(version, null, report, null));
                    return next();
                })
                .onMessage(ConfirmTimedOut.class, t -> {
                    if (t.updateId() != updateId) {
                        return Behaviors.same();
                    }
                    ctx.getLog()
                            .warn(
                                    "version {}: the coordinator did not confirm it within {}; answering the publisher,"
                                            + " the coordinator reads the written version when it starts again",
                                    version,
                                    prepareTimeout);
                    p.replyTo().tell(new PublishReply(version, null, report, null));
                    return next();
                })
                .onMessage(Command.class, this::late)
                .build();
    }

    /** An update of {@code p} under way: further publishes wait their turn. */
    private BehaviorBuilder<Command> busy(Publish p) {
        return Behaviors.receive(Command.class)
                .onMessage(Publish.class, this::hold)
                .onSignal(PreRestart.class, r -> abandon(p))
                .onMessage(GetVersion.class, g -> {
                    g.replyTo().tell(version);
                    return Behaviors.same();
                })
                .onMessage(Runners.class, this::onRunners);
    }

    // ---- transitions ----

    /**
     * A reply or timer of an update that is over (or of a previous incarnation: update ids differ),
     * which the current state does not wait for.
     */
    private Behavior<Command> late(Command m) {
        return Behaviors.same();
    }

    private Behavior<Command> onRunners(Runners r) {
        runners = r.runners();
        return Behaviors.same();
    }

    private Behavior<Command> hold(Command m) {
        if (stash.isFull()) {
            String error = "the weight version holds " + STASH_CAPACITY + " requests already; try again";
            ctx.getLog().warn("{}: refusing {}", error, m);
            if (m instanceof Publish p) {
                p.replyTo().tell(new PublishReply(p.version(), error, null, WeightPublishException.Kind.UNSPECIFIED));
            }
            return Behaviors.same();
        }
        stash.stash(m);
        return Behaviors.same();
    }

    private Behavior<Command> onRecovered(Recovered r) {
        if (r.error() != null) {
            ctx.getLog()
                    .error("reading the replicated weight version failed; starting at version {}", version, r.error());
        } else if (r.record().version() > version) {
            ctx.getLog()
                    .warn(
                            "taking over at weight version {} ({}), as written by the previous weight version",
                            r.record().version(),
                            r.record().path());
            version = r.record().version();
            path = r.record().path();
            topic.tell(Topic.publish(new VersionChanged(version, path)));
            coordinator.tell(new RolloutCoordinator.ResumeAdmission(-1, version));
        }
        return stash.unstashAll(idle());
    }

    /** Takes {@code p} up: answers it at once (a repeat, a stale version) or starts its update. */
    private Behavior<Command> begin(Publish p) {
        if (p.version() == version && p.path().equals(path) && !path.isEmpty()) {
            p.replyTo()
                    .tell(new PublishReply(
                            version, null, new PublishResult(version, Duration.ZERO, 0, Map.of()), null));
            return Behaviors.same();
        }
        if (p.version() <= version) {
            p.replyTo()
                    .tell(new PublishReply(
                            p.version(),
                            "version " + p.version() + " is not newer than the current version " + version
                                    + "; a publish must increase the version",
                            null,
                            WeightPublishException.Kind.REFUSED));
            return Behaviors.same();
        }
        updateId++;
        coordinator.tell(new RolloutCoordinator.PauseAdmission(updateId));
        // Mutable: a runner's confirmation may still come after the prepare timed out.
        Set<ActorRef<GroupRunner.Command>> awaiting = new HashSet<>(runners);
        for (ActorRef<GroupRunner.Command> r : runners) {
            r.tell(new GroupRunner.PrepareWeightUpdate(updateId, ctx.getSelf()));
        }
        if (awaiting.isEmpty()) {
            return loading(p);
        }
        timers.startSingleTimer(PREPARE_TIMER, new PrepareTimedOut(updateId), prepareTimeout);
        return preparing(p, awaiting);
    }

    private Behavior<Command> onUpdated(Publish p, Updated u) {
        String error = null;
        if (u.error() != null) {
            Throwable e = u.error().getCause() != null ? u.error().getCause() : u.error();
            error = "weight update to version " + p.version() + " failed: " + GroupRun.describe(e);
        } else if (!u.report().applied()) {
            error = "no server loaded " + p.path() + " as version " + p.version() + ": "
                    + u.report().serverFailures();
        }
        if (error == null) {
            // Written before anyone hears of it: a successor never starts below it.
            CompletableFuture<Void> w = state.writeVersion(new DurableState.VersionRecord(p.version(), p.path()))
                    .toCompletableFuture();
            ctx.pipeToSelf(w, (ok, e) -> new Written(u.updateId(), u.report(), e));
            return persisting(p);
        }
        ctx.getLog().error(error);
        for (ActorRef<GroupRunner.Command> r : runners) {
            r.tell(new GroupRunner.AbandonWeightUpdate(u.updateId()));
        }
        coordinator.tell(new RolloutCoordinator.ResumeAdmission(u.updateId(), version));
        p.replyTo().tell(new PublishReply(p.version(), error, u.report(), WeightPublishException.Kind.NOT_LOADED));
        return next();
    }

    private Behavior<Command> onWritten(Publish p, Written w) {
        PublishResult report = w.report();
        if (w.error() != null) {
            ctx.getLog()
                    .warn(
                            "version {} is loaded but its record was not confirmed by a majority ({}); going on",
                            p.version(),
                            GroupRun.describe(w.error()));
        }
        version = p.version();
        path = p.path();
        if (!report.serverFailures().isEmpty()) {
            ctx.getLog()
                    .warn(
                            "version {}: {} server(s) failed to load the weights and are out of rotation: {}",
                            version,
                            report.serverFailures().size(),
                            report.serverFailures());
        }
        topic.tell(Topic.publish(new VersionChanged(version, path)));
        return confirming(p, report);
    }

    /** Idle again: the publishes held meanwhile are taken in arrival order. */
    private Behavior<Command> next() {
        return stash.unstashAll(idle());
    }

    /**
     * This incarnation failed and is about to be replaced (supervision: restart): the update in
     * flight and those held are abandoned, so that admission resumes, runners open their gates and
     * publishers hear the failure (they publish again). The next incarnation reads the version from
     * the durable state: an update whose record was written is not lost.
     */
    private Behavior<Command> abandon(Publish current) {
        String error = RESTARTED;
        ctx.getLog().warn("weight update {} to version {} abandoned: {}", updateId, current.version(), error);
        for (ActorRef<GroupRunner.Command> r : runners) {
            r.tell(new GroupRunner.AbandonWeightUpdate(updateId));
        }
        coordinator.tell(new RolloutCoordinator.ResumeAdmission(updateId, version));
        current.replyTo()
                .tell(new PublishReply(current.version(), error, null, WeightPublishException.Kind.UNSPECIFIED));
        return abandonHeld();
    }

    private static final String RESTARTED = "the weight version failed and restarted; publish again";

    private Behavior<Command> abandonHeld() {
        stash.forEach(m -> {
            if (m instanceof Publish p) {
                p.replyTo()
                        .tell(new PublishReply(p.version(), RESTARTED, null, WeightPublishException.Kind.UNSPECIFIED));
            }
        });
        stash.clear();
        return Behaviors.same();
    }
}
