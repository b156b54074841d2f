package org.rollout.cluster;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.rollout.core.StalenessBudget;

/**
 * Admits prompt groups and keeps track of every task in flight.
 *
 * <pre>
 *   PromptSource ─► RolloutCoordinator ──RunGroup──► least-loaded GroupRunner ─► GroupRun ─► Collector
 *                     ▲  StalenessBudget (§6.8)                                                  │
 *                     └────────────────────────────── TaskFinished (accepted | rejected) ────────┘
 * </pre>
 *
 * <p>Admission: a training group is admitted only while the staleness budget's capacity is
 * positive, admission is not paused by a weight update, some runner has room, and the groups
 * running plus those the collector holds unbatched stay below {@code queue_size} (so memory stays
 * bounded even with a large η). One task is one
 * prompt, i.e. one whole group of {@code n_samples}: capacity, {@code consumer_batch_size} and
 * {@code max_concurrent_rollouts} all count groups (§6.8).
 *
 * <p>Evaluation: when an eval dataset is configured, a pass over it starts at the initial version
 * and whenever the version reaches a multiple of {@code eval_every}. Eval groups run beside
 * training ones with their own concurrency limit and no staleness bound; they never wait for, nor
 * hold up, training admission. A pass due while the previous one still runs is skipped and logged.
 *
 * <p>Failure: when a runner disappears (its node was lost), its tasks are dispatched again to other
 * runners with the same task id and attempt + 1; the collector keeps the first outcome of a task
 * and drops any later one, and when one attempt finishes the coordinator cancels the others.
 *
 * <p>Durability ({@link DurableState}): a task is written to the ledger before it is dispatched,
 * marked when accepted, and removed when rejected or when the trainer acknowledged the batch that
 * carried it (the acknowledgement is answered only after the removal is written). A coordinator
 * that starts over a ledger that is not fresh (its predecessor's node was lost) recovers: it asks
 * every runner what it runs and holds ({@link GroupRunner.GetHoldings}), keeps the tasks still
 * running where they are, has held outcomes delivered again to the new collector, dispatches the
 * rest again (attempt + 1; prompts are re-read from the source by index), restores the staleness
 * budget, and continues from the written cursor. Batch ids embed the coordinator's incarnation, so
 * an acknowledgement meant for a predecessor's batch is never taken for a new one.
 */
public final class RolloutCoordinator extends AbstractBehavior<RolloutCoordinator.Command> {

    public sealed interface Command {}

    /**
     * A task ended (from the collector, once per task id); {@code buffered} is the number of
     * accepted groups the collector holds unbatched after it.
     */
    public record TaskFinished(long taskId, int attempt, boolean isEval, boolean accepted, String reason, int buffered)
            implements Command, CborSerializable {}

    /** The collector's buffer changed size (a batch was formed): {@code buffered} groups wait. */
    public record Backlog(int buffered) implements Command, CborSerializable {}

    /**
     * An accepted group was dropped before hand-out because it became too stale
     * ({@code staleness_policy = cancel}); its budget position is freed.
     */
    public record AcceptedDiscarded(long taskId, int buffered) implements Command, CborSerializable {}

    /** A weight update began: admit nothing until the matching {@link ResumeAdmission}. */
    public record PauseAdmission(long updateId) implements Command, CborSerializable {}

    /** A weight update ended; {@code version} is the version now current. */
    public record ResumeAdmission(long updateId, int version) implements Command, CborSerializable {}

    /** The collector announces itself (its real ref, never a singleton proxy). */
    public record CollectorIs(ActorRef<Collector.Command> collector) implements Command, CborSerializable {}

    /** The collector restarted after a failure (same ref, empty buffer): see {@link Supervision}. */
    public record CollectorRestarted(ActorRef<Collector.Command> collector) implements Command, CborSerializable {}

    /**
     * A trainer acknowledged batch {@code batchId}, which carried {@code taskIds}: the tasks are
     * removed from the ledger, then {@code replyTo} is answered.
     */
    public record BatchConsumed(long batchId, List<Long> taskIds, ActorRef<Collector.AckReply> replyTo)
            implements Command, CborSerializable {}

    /** Asks for the coordinator's part of the status. */
    public record GetStatus(ActorRef<Status> replyTo) implements Command, CborSerializable {}

    /**
     * The coordinator's part of the status.
     *
     * @param oldestInFlight how long the oldest task in flight has been running
     */
    public record Status(
            StalenessBudget.Snapshot budget,
            int inFlight,
            int evalInFlight,
            boolean paused,
            boolean trainingExhausted,
            int buffered,
            Map<String, Integer> inFlightByNode,
            Duration oldestInFlight,
            long redispatched)
            implements CborSerializable {}

    private record Runners(Set<ActorRef<GroupRunner.Command>> runners) implements Command, NodeLocal {}

    private record RunnerJoined(GroupRunner.Info info) implements Command, NodeLocal {}

    private record RunnerGone(ActorRef<GroupRunner.Command> runner) implements Command, NodeLocal {}

    private record StateRead(DurableState.Ledger ledger, DurableState.VersionRecord version, Throwable error)
            implements Command, NodeLocal {}

    private record HoldingsReceived(ActorRef<GroupRunner.Command> runner, GroupRunner.Holdings holdings)
            implements Command, NodeLocal {}

    private record RecoveryDeadline() implements Command, NodeLocal {}

    /** Looks at the latest Receptionist listing again: a runner still listed but lost here is asked again. */
    private record RecheckRunners() implements Command, NodeLocal {}

    /** A ledger write completed (or failed: {@code error}); {@code then} runs on the actor. */
    private record Persisted(Runnable then, Throwable error) implements Command, NodeLocal {}

    private record InFlight(
            long taskId,
            int attempt,
            java.util.Map<String, Object> data,
            boolean isEval,
            long sourceIndex,
            ActorRef<GroupRunner.Command> runner,
            int dispatchVersion,
            long startedNanos) {
        DurableState.OpenTask entry(boolean accepted) {
            return new DurableState.OpenTask(taskId, attempt, isEval, sourceIndex, dispatchVersion, accepted);
        }
    }

    /** What the coordinator knows of one runner: its capacity and what it dispatched there. */
    static final class RunnerState {
        final GroupRunner.Info info;
        int inFlight;
        int evalInFlight;
        /** Groups dispatched here so far: breaks ties between equally loaded runners. */
        long dispatched;

        RunnerState(GroupRunner.Info info) {
            this.info = info;
        }
    }

    private final StalenessBudget budget;
    private final PromptSource source;
    private final List<Map<String, Object>> evalItems;
    private final int evalEvery;
    private final int evalMaxConcurrent;
    private final ActorRef<Collector.Command> collectorEntry;
    private ActorRef<Collector.Command> collector;
    private final DurableState state;
    private final Duration recoveryTimeout;
    private final TimerScheduler<Command> timers;
    private final int queueSize;
    /** Accepted, not yet acknowledged tasks: their ledger entry and the runner holding the outcome. */
    private final Map<Long, InFlight> acceptedUnacked = new HashMap<>();

    private boolean recovered;
    private DurableState.Ledger recoveredLedger;
    private int recoveredVersion;
    private final Map<ActorRef<GroupRunner.Command>, GroupRunner.Holdings> holdings = new HashMap<>();
    private final Set<ActorRef<GroupRunner.Command>> holdingsAsked = new HashSet<>();
    private long trainTaken;
    private long incarnation;
    private final Map<ActorRef<GroupRunner.Command>, RunnerState> runners = new LinkedHashMap<>();
    private final Set<ActorRef<GroupRunner.Command>> asked = new HashSet<>();
    /** The runners of the latest Receptionist listing. */
    private Set<ActorRef<GroupRunner.Command>> listed = Set.of();

    private final Map<Long, InFlight> ledger = new HashMap<>();
    private final ArrayDeque<InFlight> toRedispatch = new ArrayDeque<>();
    private final ArrayDeque<Integer> evalPending = new ArrayDeque<>();
    private final Set<Long> pausedBy = new HashSet<>();
    private long nextTaskId;
    private int evalInFlight;
    private int evalVersion;
    private boolean exhausted;
    private long redispatched;
    private int buffered;
    private long writeFailures;

    /**
     * @param budget the staleness budget, already at the initial version
     * @param source training prompts
     * @param evalItems one evaluation pass (empty for none)
     * @param evalEvery start a pass when the version is a multiple of this (0: only at start)
     * @param evalMaxConcurrent eval groups in flight at most
     * @param queueSize accepted groups the collector may hold unbatched before admission waits
     * @param collector the collector, or a proxy of it (it answers with its own ref)
     * @param state where the ledger is written and read back by a successor
     * @param recoveryTimeout how long a successor waits for runners to say what they hold
     */
    public static Behavior<Command> create(
            StalenessBudget budget,
            PromptSource source,
            List<Map<String, Object>> evalItems,
            int evalEvery,
            int evalMaxConcurrent,
            int queueSize,
            ActorRef<Collector.Command> collector,
            DurableState state,
            Duration recoveryTimeout) {
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> {
            ActorRef<Receptionist.Listing> listing = ctx.messageAdapter(
                    Receptionist.Listing.class, l -> new Runners(l.getServiceInstances(GroupRunner.SERVICE_KEY)));
            ctx.getSystem().receptionist().tell(Receptionist.subscribe(GroupRunner.SERVICE_KEY, listing));
            collector.tell(new Collector.Introduce(ctx.getSelf()));
            ctx.pipeToSelf(
                    state.readLedger()
                            .thenCombine(state.readVersion(), (l, v) -> new StateRead(l, v, null))
                            .toCompletableFuture(),
                    (read, error) -> read != null ? read : new StateRead(null, null, error));
            return new RolloutCoordinator(
                    ctx,
                    timers,
                    budget,
                    source,
                    evalItems,
                    evalEvery,
                    evalMaxConcurrent,
                    queueSize,
                    collector,
                    state,
                    recoveryTimeout);
        }));
    }

    private RolloutCoordinator(
            ActorContext<Command> ctx,
            TimerScheduler<Command> timers,
            StalenessBudget budget,
            PromptSource source,
            List<Map<String, Object>> evalItems,
            int evalEvery,
            int evalMaxConcurrent,
            int queueSize,
            ActorRef<Collector.Command> collector,
            DurableState state,
            Duration recoveryTimeout) {
        super(ctx);
        this.timers = timers;
        this.state = state;
        this.recoveryTimeout = recoveryTimeout;
        this.collectorEntry = collector;
        this.queueSize = Math.max(1, queueSize);
        this.budget = budget;
        this.source = source;
        this.evalItems = List.copyOf(evalItems);
        this.evalEvery = evalEvery;
        this.evalMaxConcurrent = Math.max(1, evalMaxConcurrent);
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(StateRead.class, this::onStateRead)
                .onMessage(CollectorIs.class, this::onCollectorIs)
                .onMessage(CollectorRestarted.class, this::onCollectorRestarted)
                .onMessage(HoldingsReceived.class, this::onHoldings)
                .onMessage(RecoveryDeadline.class, d -> {
                    if (!recovered && recoveredLedger != null) {
                        getContext()
                                .getLog()
                                .warn(
                                        "recovery: {} runner(s) did not say what they hold within {}; their tasks are dispatched again",
                                        holdingsAsked.size() - holdings.size(),
                                        recoveryTimeout);
                        finishRecovery();
                    }
                    return this;
                })
                .onMessage(Persisted.class, this::onPersisted)
                .onMessage(Runners.class, this::onRunners)
                .onMessage(RunnerJoined.class, this::onRunnerJoined)
                .onMessage(RunnerGone.class, g -> onRunnerGone(g.runner()))
                .onMessage(RecheckRunners.class, r -> onRunners(new Runners(listed)))
                .onMessage(TaskFinished.class, this::onTaskFinished)
                .onMessage(AcceptedDiscarded.class, this::onAcceptedDiscarded)
                .onMessage(BatchConsumed.class, this::onBatchConsumed)
                .onMessage(Backlog.class, b -> {
                    buffered = b.buffered();
                    admit();
                    return this;
                })
                .onMessage(PauseAdmission.class, p -> {
                    pausedBy.add(p.updateId());
                    return this;
                })
                .onMessage(ResumeAdmission.class, this::onResume)
                .onMessage(GetStatus.class, this::onGetStatus)
                .build();
    }

    // ---- start and recovery ----

    private Behavior<Command> onStateRead(StateRead read) {
        if (read.error() != null) {
            getContext().getLog().error("reading the durable ledger failed; starting as on a fresh run", read.error());
            recoveredLedger = DurableState.Ledger.EMPTY;
            recoveredVersion = budget.version();
        } else {
            recoveredLedger = read.ledger();
            recoveredVersion = Math.max(budget.version(), read.version().version());
        }
        if (!recoveredLedger.isFresh()) {
            getContext()
                    .getLog()
                    .warn(
                            "taking over a run: ledger holds {} open task(s), next task id {}, {} training prompt(s) taken, version {}; asking runners what they hold",
                            recoveredLedger.open().size(),
                            recoveredLedger.cursor().nextTaskId(),
                            recoveredLedger.cursor().trainTaken(),
                            recoveredVersion);
            timers.startSingleTimer(RecoveryDeadline.class, new RecoveryDeadline(), recoveryTimeout);
            for (ActorRef<GroupRunner.Command> r : runners.keySet()) {
                askHoldings(r);
            }
        }
        tryFinishRecovery();
        return this;
    }

    private Behavior<Command> onCollectorIs(CollectorIs is) {
        if (is.collector().equals(collector)) {
            return this;
        }
        boolean replaced = collector != null;
        collector = is.collector();
        if (!recovered) {
            for (ActorRef<GroupRunner.Command> r : runners.keySet()) {
                askHoldings(r);
            }
            tryFinishRecovery();
        } else if (replaced) {
            // A new collector with an empty buffer: what runners hold is delivered to it again.
            getContext().getLog().warn("the collector was replaced; runners deliver what they hold to the new one");
            attachCollector();
            Map<ActorRef<GroupRunner.Command>, List<Long>> resend = new HashMap<>();
            acceptedUnacked
                    .values()
                    .forEach(f -> resend.computeIfAbsent(f.runner(), k -> new ArrayList<>())
                            .add(f.taskId()));
            resend.forEach((r, ids) -> r.tell(new GroupRunner.Resend(toArray(ids), collector)));
        }
        return this;
    }

    /** Re-attaches a restarted collector; runners deliver again what they hold of every open task. */
    private Behavior<Command> onCollectorRestarted(CollectorRestarted r) {
        if (!recovered) {
            return onCollectorIs(new CollectorIs(r.collector()));
        }
        collector = r.collector();
        incarnation++; // its batch ids must differ from those it handed out before it failed
        persist(List.of(), List.of(), () -> {});
        attachCollector();
        Map<ActorRef<GroupRunner.Command>, List<Long>> resend = new HashMap<>();
        java.util.stream.Stream.concat(ledger.values().stream(), acceptedUnacked.values().stream())
                .filter(f -> f.runner() != null)
                .forEach(f -> resend.computeIfAbsent(f.runner(), k -> new ArrayList<>())
                        .add(f.taskId()));
        resend.forEach((runner, ids) -> runner.tell(new GroupRunner.Resend(toArray(ids), collector)));
        return this;
    }

    private void askHoldings(ActorRef<GroupRunner.Command> r) {
        if (recovered
                || recoveredLedger == null
                || recoveredLedger.isFresh()
                || collector == null
                || !holdingsAsked.add(r)) {
            return;
        }
        getContext()
                .ask(
                        GroupRunner.Holdings.class,
                        r,
                        recoveryTimeout,
                        reply -> new GroupRunner.GetHoldings(collector, reply),
                        (h, error) -> new HoldingsReceived(r, h));
    }

    private Behavior<Command> onHoldings(HoldingsReceived h) {
        if (!recovered && h.holdings() != null) {
            holdings.put(h.runner(), h.holdings());
        }
        tryFinishRecovery();
        return this;
    }

    private void tryFinishRecovery() {
        if (recovered || recoveredLedger == null || collector == null) {
            return;
        }
        if (!recoveredLedger.isFresh() && (holdingsAsked.isEmpty() || holdings.size() < holdingsAsked.size())) {
            return; // wait for runners (or the deadline)
        }
        finishRecovery();
    }

    /** Re-creates the ledger from what was written and what runners hold, then starts admitting. */
    private void finishRecovery() {
        if (collector == null) {
            return;
        }
        recovered = true;
        timers.cancel(RecoveryDeadline.class);
        DurableState.Ledger l = recoveredLedger;
        DurableState.Cursor c = l.cursor();
        incarnation = l.isFresh() ? 0 : c.incarnation() + 1;
        nextTaskId = c.nextTaskId();
        trainTaken = c.trainTaken();
        if (l.isFresh()) {
            if (recoveredVersion > budget.version()) {
                budget.onVersion(recoveredVersion);
            }
            attachCollector();
            startEvalPass(budget.version());
            persist(List.of(), List.of(), () -> {});
            admit();
            return;
        }
        // What each runner holds, by task id.
        Map<Long, ActorRef<GroupRunner.Command>> runningOn = new HashMap<>();
        Map<Long, Integer> runningAttempt = new HashMap<>();
        Map<Long, ActorRef<GroupRunner.Command>> finishedOn = new HashMap<>();
        for (GroupRunner.Holdings h : holdings.values()) {
            for (GroupRunner.Held held : h.held()) {
                if (!l.open().containsKey(held.taskId())) {
                    // Done with in the previous incarnation (or never written): drop it.
                    if (held.finished()) {
                        h.runner().tell(new GroupRunner.Forget(List.of(held.taskId())));
                    } else {
                        h.runner()
                                .tell(new GroupRunner.CancelGroup(
                                        held.taskId(), held.attempt(), RejectReason.CANCELLED, "not in the ledger"));
                    }
                } else if (held.finished()) {
                    finishedOn.put(held.taskId(), h.runner());
                } else {
                    runningOn.put(held.taskId(), h.runner());
                    runningAttempt.put(held.taskId(), held.attempt());
                }
            }
        }
        long accepted = c.accepted();
        long running = 0;
        long lostAccepted = 0;
        List<InFlight> again = new ArrayList<>();
        Map<ActorRef<GroupRunner.Command>, List<Long>> resend = new HashMap<>();
        int evalPassVersion = -1;
        for (DurableState.OpenTask t : l.open().values()) {
            Map<String, Object> data = itemOf(t);
            if (data == null) {
                getContext()
                        .getLog()
                        .error(
                                "recovery: task {}: its item (index {}) is no longer in the source; dropped",
                                t.taskId(),
                                t.sourceIndex());
                continue;
            }
            if (t.isEval()) {
                evalPassVersion = Math.max(evalPassVersion, t.dispatchVersion());
            }
            ActorRef<GroupRunner.Command> fin = finishedOn.get(t.taskId());
            ActorRef<GroupRunner.Command> run = runningOn.get(t.taskId());
            if (t.accepted() && fin != null) {
                acceptedUnacked.put(t.taskId(), inFlight(t, t.attempt(), data, fin));
                resend.computeIfAbsent(fin, k -> new ArrayList<>()).add(t.taskId());
                continue;
            }
            if (t.accepted()) {
                lostAccepted++;
            }
            if (!t.isEval()) {
                running++;
            } else {
                evalInFlight++;
            }
            if (fin != null) {
                // Finished, the outcome never recorded here: the collector gets it again.
                InFlight f = inFlight(t, t.attempt(), data, fin);
                ledger.put(t.taskId(), f);
                resend.computeIfAbsent(fin, k -> new ArrayList<>()).add(t.taskId());
            } else if (run != null) {
                ledger.put(t.taskId(), inFlight(t, runningAttempt.get(t.taskId()), data, run));
            } else {
                InFlight f = inFlight(t, t.attempt(), data, null);
                ledger.put(t.taskId(), f);
                again.add(f);
            }
        }
        if (evalPassVersion >= 0) {
            evalVersion = evalPassVersion;
            getContext()
                    .getLog()
                    .warn(
                            "recovery: the evaluation pass at version {} goes on with its {} open group(s); its items not yet dispatched are not",
                            evalVersion,
                            evalInFlight);
        }
        budget.restore(recoveredVersion, accepted - lostAccepted, running);
        for (var e : ledger.values()) {
            RunnerState s = e.runner() == null ? null : runners.get(e.runner());
            if (s != null) {
                s.inFlight++;
                if (e.isEval()) {
                    s.evalInFlight++;
                }
            }
        }
        toRedispatch.addAll(again);
        getContext()
                .getLog()
                .warn(
                        "recovered: {} task(s) still running, {} outcome(s) delivered again, {} task(s) dispatched again ({} accepted group(s) lost with their node); budget {}",
                        ledger.size() - again.size(),
                        resend.values().stream().mapToInt(List::size).sum(),
                        again.size(),
                        lostAccepted,
                        budget);
        attachCollector();
        resend.forEach((r, ids) -> r.tell(new GroupRunner.Resend(toArray(ids), collector)));
        persist(List.of(), List.of(), () -> {});
        admit();
    }

    private InFlight inFlight(
            DurableState.OpenTask t, int attempt, Map<String, Object> data, ActorRef<GroupRunner.Command> runner) {
        return new InFlight(
                t.taskId(), attempt, data, t.isEval(), t.sourceIndex(), runner, t.dispatchVersion(), System.nanoTime());
    }

    private Map<String, Object> itemOf(DurableState.OpenTask t) {
        if (t.isEval()) {
            return t.sourceIndex() >= 0 && t.sourceIndex() < evalItems.size()
                    ? evalItems.get((int) t.sourceIndex())
                    : null;
        }
        return source.item(t.sourceIndex()).orElse(null);
    }

    private void attachCollector() {
        Set<Long> open = new HashSet<>(ledger.keySet());
        open.addAll(acceptedUnacked.keySet());
        collector.tell(new Collector.Attach(getContext().getSelf(), incarnation, nextTaskId, toArray(open)));
    }

    private static List<Long> toArray(java.util.Collection<Long> ids) {
        return List.copyOf(ids);
    }

    // ---- the durable ledger ----

    private DurableState.Cursor cursor() {
        return new DurableState.Cursor(nextTaskId, trainTaken, budget.accepted(), incarnation);
    }

    /** Writes the changes with the current cursor; runs {@code then} once written (or not). */
    private void persist(
            java.util.Collection<DurableState.OpenTask> put, java.util.Collection<Long> remove, Runnable then) {
        var stage = state.writeLedger(put, remove, cursor()).toCompletableFuture();
        if (stage.isDone() && !stage.isCompletedExceptionally()) {
            then.run();
        } else {
            getContext().pipeToSelf(stage, (ok, error) -> new Persisted(then, error));
        }
    }

    private Behavior<Command> onPersisted(Persisted p) {
        if (p.error() != null) {
            writeFailures++;
            getContext().getLog().warn("ledger write not confirmed ({}); going on", GroupRun.describe(p.error()));
        }
        p.then().run();
        return this;
    }

    // ---- runners ----

    private static final Duration RECHECK_RUNNERS_AFTER = Duration.ofSeconds(2);

    private Behavior<Command> onRunners(Runners listing) {
        listed = Set.copyOf(listing.runners());
        for (ActorRef<GroupRunner.Command> r : listing.runners()) {
            askHoldings(r);
            if (!runners.containsKey(r) && asked.add(r)) {
                getContext()
                        .ask(
                                GroupRunner.Info.class,
                                r,
                                Duration.ofSeconds(10),
                                GroupRunner.GetInfo::new,
                                (info, error) -> info != null ? new RunnerJoined(info) : new RunnerGone(r));
            }
        }
        Set<ActorRef<GroupRunner.Command>> known = new HashSet<>(runners.keySet());
        ledger.values().stream()
                .map(InFlight::runner)
                .filter(java.util.Objects::nonNull)
                .forEach(known::add);
        for (ActorRef<GroupRunner.Command> r : known) {
            if (!listing.runners().contains(r)) {
                onRunnerGone(r);
            }
        }
        return this;
    }

    private Behavior<Command> onRunnerJoined(RunnerJoined joined) {
        ActorRef<GroupRunner.Command> r = joined.info().runner();
        asked.remove(r);
        if (!runners.containsKey(r)) {
            RunnerState s = new RunnerState(joined.info());
            runners.put(r, s);
            for (InFlight f : ledger.values()) {
                if (r.equals(f.runner())) {
                    s.inFlight++;
                    if (f.isEval()) {
                        s.evalInFlight++;
                    }
                }
            }
            getContext().watchWith(r, new RunnerGone(r));
            getContext()
                    .getLog()
                    .info(
                            "runner on {} joined with capacity {}",
                            joined.info().node(),
                            joined.info().capacity());
        }
        admit();
        return this;
    }

    private Behavior<Command> onRunnerGone(ActorRef<GroupRunner.Command> runner) {
        asked.remove(runner);
        if (listed.contains(runner)) {
            // Lost here (its watch fired, or it did not answer) but still listed: it may be alive.
            // A node restarted on the same host and port is watched while the removal of its
            // previous incarnation is still going on, and that removal terminates the watch of
            // the new runner at once; no later listing would name it again, and it would never be
            // given a group. Ask it again shortly; a runner that is really gone does not answer,
            // and the Receptionist soon stops listing it.
            timers.startSingleTimer(RecheckRunners.class, new RecheckRunners(), RECHECK_RUNNERS_AFTER);
        }
        RunnerState gone = runners.remove(runner);
        List<InFlight> orphans = new ArrayList<>();
        for (InFlight f : ledger.values()) {
            if (runner.equals(f.runner()) && !toRedispatch.contains(f)) {
                orphans.add(f);
            }
        }
        if (gone == null && orphans.isEmpty()) {
            return this;
        }
        // Also a runner that never joined here: a successor may have learnt of its tasks from
        // its holdings before it was lost.
        getContext()
                .getLog()
                .warn(
                        "runner on {} is gone with {} task(s) in flight; dispatching them again",
                        gone != null ? gone.info.node() : runner.path().address(),
                        orphans.size());
        for (InFlight f : orphans) {
            toRedispatch.addLast(f);
        }
        admit();
        return this;
    }

    // ---- outcomes ----

    private Behavior<Command> onTaskFinished(TaskFinished done) {
        buffered = done.buffered();
        InFlight f = ledger.remove(done.taskId());
        if (f == null) {
            if (!acceptedUnacked.containsKey(done.taskId())) {
                getContext().getLog().warn("finished task {} is not in the ledger; ignoring", done.taskId());
            }
            return this;
        }
        release(f);
        toRedispatch.removeIf(r -> r.taskId() == done.taskId());
        if (f.attempt() != done.attempt() && f.runner() != null && runners.containsKey(f.runner())) {
            f.runner()
                    .tell(new GroupRunner.CancelGroup(
                            f.taskId(),
                            f.attempt(),
                            RejectReason.CANCELLED,
                            "attempt " + done.attempt() + " finished first"));
        }
        if (f.isEval()) {
            evalInFlight--;
            if (evalInFlight == 0 && evalPending.isEmpty()) {
                getContext().getLog().info("evaluation pass at version {} finished", evalVersion);
                collector.tell(new Collector.EvalPassFinished(evalVersion));
            }
        } else if (done.accepted()) {
            budget.onAccept();
        } else {
            budget.onReject();
        }
        if (done.accepted() && !f.isEval()) {
            acceptedUnacked.put(f.taskId(), f);
            persist(List.of(f.entry(true)), List.of(), () -> {});
        } else {
            ActorRef<GroupRunner.Command> holder = f.runner();
            persist(List.of(), List.of(f.taskId()), () -> forget(holder, List.of(f.taskId())));
        }
        admit();
        return this;
    }

    private Behavior<Command> onAcceptedDiscarded(AcceptedDiscarded d) {
        budget.onAcceptedDiscarded();
        buffered = d.buffered();
        InFlight f = acceptedUnacked.remove(d.taskId());
        ActorRef<GroupRunner.Command> holder = f == null ? null : f.runner();
        persist(List.of(), List.of(d.taskId()), () -> forget(holder, List.of(d.taskId())));
        admit();
        return this;
    }

    private Behavior<Command> onBatchConsumed(BatchConsumed consumed) {
        Map<ActorRef<GroupRunner.Command>, List<Long>> byRunner = new HashMap<>();
        List<Long> ids = new ArrayList<>();
        for (Long id : consumed.taskIds()) {
            ids.add(id);
            InFlight f = acceptedUnacked.remove(id);
            if (f == null && ledger.containsKey(id)) {
                // A predecessor's batch: this task was lost with its node and is running again;
                // the trainer has consumed it, so the new run is stopped and counted as accepted.
                f = ledger.remove(id);
                release(f);
                toRedispatch.removeIf(r -> r.taskId() == id);
                if (f.isEval()) {
                    evalInFlight--;
                } else {
                    budget.onAccept();
                }
                if (f.runner() != null) {
                    f.runner()
                            .tell(new GroupRunner.CancelGroup(
                                    id, f.attempt(), RejectReason.CANCELLED, "consumed by the trainer already"));
                }
            }
            if (f != null && f.runner() != null) {
                byRunner.computeIfAbsent(f.runner(), k -> new ArrayList<>()).add(id);
            }
        }
        persist(List.of(), ids, () -> {
            byRunner.forEach((r, l) -> forget(r, toArray(l)));
            consumed.replyTo().tell(new Collector.AckReply(consumed.batchId(), true));
        });
        return this;
    }

    private void forget(ActorRef<GroupRunner.Command> runner, List<Long> ids) {
        if (runner != null) {
            runner.tell(new GroupRunner.Forget(ids));
        }
    }

    private Behavior<Command> onResume(ResumeAdmission resume) {
        pausedBy.remove(resume.updateId());
        if (resume.version() > budget.version()) {
            budget.onVersion(resume.version());
            if (recovered && evalEvery > 0 && resume.version() % evalEvery == 0) {
                startEvalPass(resume.version());
            }
        }
        admit();
        return this;
    }

    private void startEvalPass(int version) {
        if (evalItems.isEmpty()) {
            return;
        }
        if (evalInFlight > 0 || !evalPending.isEmpty()) {
            getContext().getLog().warn("evaluation at version {} skipped: the previous pass is still running", version);
            return;
        }
        getContext().getLog().info("evaluation pass over {} items at version {}", evalItems.size(), version);
        evalVersion = version;
        for (int i = 0; i < evalItems.size(); i++) {
            evalPending.addLast(i);
        }
    }

    // ---- admission ----

    /** Dispatches re-dispatches first, then evaluation and training, as far as limits allow. */
    private void admit() {
        if (!recovered) {
            return;
        }
        List<DurableState.OpenTask> written = new ArrayList<>();
        List<Runnable> sends = new ArrayList<>();
        while (!toRedispatch.isEmpty()) {
            ActorRef<GroupRunner.Command> r = leastLoaded(true);
            if (r == null) {
                break;
            }
            InFlight old = toRedispatch.pollFirst();
            if (ledger.get(old.taskId()) != old) {
                continue;
            }
            redispatched++;
            InFlight f = dispatch(
                    old.taskId(),
                    old.attempt() + 1,
                    old.data(),
                    old.isEval(),
                    old.sourceIndex(),
                    r,
                    old.dispatchVersion());
            written.add(f.entry(false));
            sends.add(() -> send(f));
        }
        if (pausedBy.isEmpty()) {
            while (!evalPending.isEmpty() && evalInFlight < evalMaxConcurrent) {
                ActorRef<GroupRunner.Command> r = leastLoaded(true);
                if (r == null) {
                    break;
                }
                evalInFlight++;
                int index = evalPending.pollFirst();
                InFlight f = dispatch(nextTaskId++, 0, evalItems.get(index), true, index, r, evalVersion);
                written.add(f.entry(false));
                sends.add(() -> send(f));
            }
            while (!exhausted && budget.canAdmit() && buffered + budget.running() < queueSize) {
                ActorRef<GroupRunner.Command> r = leastLoaded(false);
                if (r == null) {
                    break;
                }
                Optional<Map<String, Object>> item = source.item(trainTaken);
                if (item.isEmpty()) {
                    exhausted = true;
                    getContext().getLog().info("training prompts exhausted after {} prompts", trainTaken);
                    break;
                }
                budget.onEnqueue();
                budget.onAdmit();
                InFlight f = dispatch(nextTaskId++, 0, item.get(), false, trainTaken++, r, budget.version());
                written.add(f.entry(false));
                sends.add(() -> send(f));
            }
        }
        if (!written.isEmpty()) {
            // Written before it is sent: a task on a lost node is always in the ledger.
            persist(written, List.of(), () -> sends.forEach(Runnable::run));
        }
    }

    /** Records the task as in flight on {@code runner}; {@link #send} tells the runner. */
    private InFlight dispatch(
            long taskId,
            int attempt,
            Map<String, Object> data,
            boolean isEval,
            long sourceIndex,
            ActorRef<GroupRunner.Command> runner,
            int dispatchVersion) {
        InFlight f =
                new InFlight(taskId, attempt, data, isEval, sourceIndex, runner, dispatchVersion, System.nanoTime());
        InFlight previous = ledger.put(taskId, f);
        if (previous != null) {
            release(previous);
        }
        RunnerState state = runners.get(runner);
        state.inFlight++;
        state.dispatched++;
        if (isEval) {
            state.evalInFlight++;
        }
        return f;
    }

    private void send(InFlight f) {
        if (ledger.get(f.taskId()) != f) {
            return; // finished or dispatched again while the write was on its way
        }
        if (!runners.containsKey(f.runner())) {
            toRedispatch.addLast(f);
            admit();
            return;
        }
        RunnerState on = runners.get(f.runner());
        TaskJournal.dispatched(
                f.taskId(), f.attempt(), f.isEval(), f.sourceIndex(), f.dispatchVersion(), on.info.node());
        f.runner()
                .tell(new GroupRunner.RunGroup(
                        f.taskId(), f.attempt(), f.data(), f.isEval(), f.dispatchVersion(), collector));
    }

    private void release(InFlight f) {
        RunnerState s = f.runner() == null ? null : runners.get(f.runner());
        if (s != null) {
            s.inFlight--;
            if (f.isEval()) {
                s.evalInFlight--;
            }
        }
    }

    /**
     * The runner with the lowest load relative to its capacity. With {@code overCapacity} false
     * (training admission) only runners whose training groups are below capacity qualify: evaluation
     * groups never take a training slot, so an evaluation pass cannot hold up training.
     */
    private ActorRef<GroupRunner.Command> leastLoaded(boolean overCapacity) {
        return leastLoaded(runners, overCapacity);
    }

    /**
     * {@link #leastLoaded(boolean)} over {@code runners}: among runners equally loaded, the one that
     * was given the fewest groups so far. Without that tie-break, groups that end faster than they
     * are admitted (every runner idle at each admission) would all go to the runner that joined
     * first, and the other nodes would idle.
     */
    static <K> K leastLoaded(Map<K, RunnerState> runners, boolean overCapacity) {
        K best = null;
        double bestLoad = Double.MAX_VALUE;
        long bestDispatched = Long.MAX_VALUE;
        for (var e : runners.entrySet()) {
            RunnerState s = e.getValue();
            int cap = Math.max(1, s.info.capacity());
            if (!overCapacity && s.inFlight - s.evalInFlight >= cap) {
                continue;
            }
            double load = (double) s.inFlight / cap;
            if (load < bestLoad || (load == bestLoad && s.dispatched < bestDispatched)) {
                bestLoad = load;
                bestDispatched = s.dispatched;
                best = e.getKey();
            }
        }
        return best;
    }

    private Behavior<Command> onGetStatus(GetStatus get) {
        Map<String, Integer> byNode = new LinkedHashMap<>();
        runners.values().forEach(s -> byNode.merge(s.info.node(), s.inFlight, Integer::sum));
        long now = System.nanoTime();
        long oldest = 0;
        for (InFlight f : ledger.values()) {
            oldest = Math.max(oldest, now - f.startedNanos());
        }
        get.replyTo()
                .tell(new Status(
                        budget.snapshot(),
                        ledger.size(),
                        evalInFlight,
                        !pausedBy.isEmpty(),
                        exhausted,
                        buffered,
                        byNode,
                        Duration.ofNanos(oldest),
                        redispatched));
        return this;
    }
}
