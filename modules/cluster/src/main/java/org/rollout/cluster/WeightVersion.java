package org.rollout.cluster;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PreRestart;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
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
 *     └─► coordinator: ResumeAdmission(v)               staleness budget grows by B
 * </pre>
 *
 * <p>Durability: the new version is written to {@link DurableState} after the servers loaded it
 * and before anyone is told, and a weight version that starts (its node took over the singleton)
 * begins at the newest version written, so the version never goes backwards. A publish of the
 * version already current with the same path succeeds without loading anything again: a trainer
 * that retries a publish whose reply was lost with the old node gets its answer.
 *
 * <p>Publishes are handled one at a time, in arrival order. When no server could load the weights
 * the version does not move: runners get {@code AbandonWeightUpdate}, admission resumes at the old
 * version, and the publisher gets the reason. A runner that does not confirm the prepare within
 * {@code prepare_timeout} is named in the log and the update goes on without it.
 */
public final class WeightVersion extends AbstractBehavior<WeightVersion.Command> {

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

    private final WeightPublisher publisher;
    private final ActorRef<RolloutCoordinator.Command> coordinator;
    private final ActorRef<Topic.Command<VersionChanged>> topic;
    private final ExecutorService blocking;
    private final Duration prepareTimeout;
    private final TimerScheduler<Command> timers;
    private final ArrayDeque<Publish> queue = new ArrayDeque<>();
    private Set<ActorRef<GroupRunner.Command>> runners = Set.of();
    private final DurableState state;
    private int version;
    private String path = "";
    private boolean ready;
    private long updateId;
    private Publish current;
    private Set<ActorRef<GroupRunner.Command>> awaiting = new HashSet<>();

    public static Behavior<Command> create(
            int initialVersion,
            WeightPublisher publisher,
            ActorRef<RolloutCoordinator.Command> coordinator,
            ActorRef<Topic.Command<VersionChanged>> topic,
            ExecutorService blocking,
            Duration prepareTimeout,
            DurableState state) {
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> {
            ActorRef<Receptionist.Listing> listing = ctx.messageAdapter(
                    Receptionist.Listing.class, l -> new Runners(l.getServiceInstances(GroupRunner.SERVICE_KEY)));
            ctx.getSystem().receptionist().tell(Receptionist.subscribe(GroupRunner.SERVICE_KEY, listing));
            ctx.pipeToSelf(state.readVersion().toCompletableFuture(), Recovered::new);
            return new WeightVersion(
                    ctx, timers, initialVersion, publisher, coordinator, topic, blocking, prepareTimeout, state);
        }));
    }

    private WeightVersion(
            ActorContext<Command> ctx,
            TimerScheduler<Command> timers,
            int initialVersion,
            WeightPublisher publisher,
            ActorRef<RolloutCoordinator.Command> coordinator,
            ActorRef<Topic.Command<VersionChanged>> topic,
            ExecutorService blocking,
            Duration prepareTimeout,
            DurableState state) {
        super(ctx);
        this.state = state;
        this.timers = timers;
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

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Publish.class, this::onPublish)
                .onMessage(GetVersion.class, g -> {
                    if (!ready) {
                        // Answer once the replicated version is known, never with an older one.
                        getContext()
                                .scheduleOnce(
                                        Duration.ofMillis(50), getContext().getSelf(), g);
                        return this;
                    }
                    g.replyTo().tell(version);
                    return this;
                })
                .onMessage(Runners.class, r -> {
                    runners = r.runners();
                    return this;
                })
                .onMessage(RunnerPrepared.class, this::onRunnerPrepared)
                .onMessage(PrepareTimedOut.class, this::onPrepareTimedOut)
                .onMessage(Updated.class, this::onUpdated)
                .onMessage(Written.class, this::onWritten)
                .onMessage(Recovered.class, this::onRecovered)
                .onSignal(PreRestart.class, r -> onPreRestart())
                .build();
    }

    /**
     * This incarnation failed and is about to be replaced (supervision: restart): the update in
     * flight and those queued are abandoned, so that admission resumes, runners open their gates and
     * publishers hear the failure (they publish again). The next incarnation reads the version from
     * the durable state: an update whose record was written is not lost.
     */
    private Behavior<Command> onPreRestart() {
        String error = "the weight version failed and restarted; publish again";
        if (current != null) {
            getContext()
                    .getLog()
                    .warn("weight update {} to version {} abandoned: {}", updateId, current.version(), error);
            for (ActorRef<GroupRunner.Command> r : runners) {
                r.tell(new GroupRunner.AbandonWeightUpdate(updateId));
            }
            coordinator.tell(new RolloutCoordinator.ResumeAdmission(updateId, version));
            current.replyTo()
                    .tell(new PublishReply(current.version(), error, null, WeightPublishException.Kind.UNSPECIFIED));
            current = null;
        }
        for (Publish p : queue) {
            p.replyTo().tell(new PublishReply(p.version(), error, null, WeightPublishException.Kind.UNSPECIFIED));
        }
        queue.clear();
        return this;
    }

    private Behavior<Command> onPublish(Publish p) {
        queue.addLast(p);
        if (current == null) {
            startNext();
        }
        return this;
    }

    private Behavior<Command> onRecovered(Recovered r) {
        if (r.error() != null) {
            getContext()
                    .getLog()
                    .error("reading the replicated weight version failed; starting at version {}", version, r.error());
        } else if (r.record().version() > version) {
            getContext()
                    .getLog()
                    .warn(
                            "taking over at weight version {} ({}), as written by the previous weight version",
                            r.record().version(),
                            r.record().path());
            version = r.record().version();
            path = r.record().path();
            topic.tell(Topic.publish(new VersionChanged(version, path)));
            coordinator.tell(new RolloutCoordinator.ResumeAdmission(-1, version));
        }
        ready = true;
        startNext();
        return this;
    }

    private void startNext() {
        while (ready && current == null && !queue.isEmpty()) {
            Publish p = queue.pollFirst();
            if (p.version() == version && p.path().equals(path) && !path.isEmpty()) {
                p.replyTo()
                        .tell(new PublishReply(
                                version, null, new PublishResult(version, Duration.ZERO, 0, java.util.Map.of()), null));
                continue;
            }
            if (p.version() <= version) {
                p.replyTo()
                        .tell(new PublishReply(
                                p.version(),
                                "version " + p.version() + " is not newer than the current version " + version
                                        + "; a publish must increase the version",
                                null,
                                WeightPublishException.Kind.REFUSED));
                continue;
            }
            current = p;
            updateId++;
            coordinator.tell(new RolloutCoordinator.PauseAdmission(updateId));
            awaiting = new HashSet<>(runners);
            for (ActorRef<GroupRunner.Command> r : runners) {
                r.tell(new GroupRunner.PrepareWeightUpdate(
                        updateId, getContext().getSelf()));
            }
            if (awaiting.isEmpty()) {
                startUpdate();
            } else {
                timers.startSingleTimer("prepare", new PrepareTimedOut(updateId), prepareTimeout);
            }
        }
    }

    private Behavior<Command> onRunnerPrepared(RunnerPrepared p) {
        if (current != null && p.updateId() == updateId && awaiting.remove(p.runner()) && awaiting.isEmpty()) {
            timers.cancel("prepare");
            startUpdate();
        }
        return this;
    }

    private Behavior<Command> onPrepareTimedOut(PrepareTimedOut t) {
        if (current != null && t.updateId() == updateId && !awaiting.isEmpty()) {
            getContext()
                    .getLog()
                    .warn(
                            "weight update {}: {} runner(s) did not confirm the pause within {}: {}; updating anyway",
                            updateId,
                            awaiting.size(),
                            prepareTimeout,
                            awaiting);
            // Emptied, not replaced by an immutable set: a runner's confirmation may still come.
            awaiting.clear();
            startUpdate();
        }
        return this;
    }

    private void startUpdate() {
        Publish p = current;
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
        getContext().pipeToSelf(f, (report, error) -> new Updated(id, report, error));
    }

    private Behavior<Command> onUpdated(Updated u) {
        if (current == null || u.updateId() != updateId) {
            return this;
        }
        Publish p = current;
        current = null;
        String error = null;
        if (u.error() != null) {
            Throwable e = u.error().getCause() != null ? u.error().getCause() : u.error();
            error = "weight update to version " + p.version() + " failed: " + GroupRun.describe(e);
        } else if (!u.report().applied()) {
            error = "no server loaded " + p.path() + " as version " + p.version() + ": "
                    + u.report().serverFailures();
        }
        if (error != null) {
            getContext().getLog().error(error);
            for (ActorRef<GroupRunner.Command> r : runners) {
                r.tell(new GroupRunner.AbandonWeightUpdate(u.updateId()));
            }
            coordinator.tell(new RolloutCoordinator.ResumeAdmission(u.updateId(), version));
            p.replyTo().tell(new PublishReply(p.version(), error, u.report(), WeightPublishException.Kind.NOT_LOADED));
        } else {
            // Written before anyone hears of it: a successor never starts below it.
            current = p;
            CompletableFuture<Void> w = state.writeVersion(new DurableState.VersionRecord(p.version(), p.path()))
                    .toCompletableFuture();
            getContext().pipeToSelf(w, (ok, e) -> new Written(u.updateId(), u.report(), e));
            return this;
        }
        startNext();
        return this;
    }

    private Behavior<Command> onWritten(Written w) {
        if (current == null || w.updateId() != updateId) {
            return this;
        }
        Publish p = current;
        current = null;
        PublishResult report = w.report();
        if (w.error() != null) {
            getContext()
                    .getLog()
                    .warn(
                            "version {} is loaded but its record was not confirmed by a majority ({}); going on",
                            p.version(),
                            GroupRun.describe(w.error()));
        }
        version = p.version();
        path = p.path();
        if (!report.serverFailures().isEmpty()) {
            getContext()
                    .getLog()
                    .warn(
                            "version {}: {} server(s) failed to load the weights and are out of rotation: {}",
                            version,
                            report.serverFailures().size(),
                            report.serverFailures());
        }
        topic.tell(Topic.publish(new VersionChanged(version, path)));
        coordinator.tell(new RolloutCoordinator.ResumeAdmission(w.updateId(), version));
        p.replyTo().tell(new PublishReply(version, null, report, null));
        startNext();
        return this;
    }
}
