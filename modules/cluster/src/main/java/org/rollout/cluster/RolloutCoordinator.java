package org.rollout.cluster;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
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
import org.apache.pekko.actor.typed.javadsl.StashBuffer;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.rollout.cluster.TaskLedger.Task;
import org.rollout.core.StalenessBudget;

/**
 * Admits prompt groups and keeps track of every task in flight.
 *
 * <pre>
 *   PromptSource ─► RolloutCoordinator ──RunGroup──► least-loaded GroupRunner ─► GroupRun ─► Collector
 *                     ▲  StalenessBudget (semantics §6.8)                                        │
 *                     └────────────────────────────── TaskFinished (accepted | rejected) ────────┘
 * </pre>
 *
 * <p>Admission: a training group is admitted only while the staleness budget's capacity is
 * positive, admission is not paused by a weight update, some runner has room, and the groups
 * running plus those the collector holds unbatched stay below {@code queue_size} (so memory stays
 * bounded even with a large η). One task is one
 * prompt, i.e. one whole group of {@code n_samples}: capacity, {@code consumer_batch_size} and
 * {@code max_concurrent_rollouts} all count groups (semantics §6.8).
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
 *
 * <p>The decisions are plain classes with table tests; this actor carries them out (ledger writes,
 * messages, timers): {@link TaskLedger} (tasks in flight, accepted, to dispatch again, and each
 * runner's load), {@link RecoveryPlan} (what a successor does with each task of its predecessor's
 * ledger), {@link EvaluationSchedule} (when evaluation passes run and which item goes next), and
 * core's {@link StalenessBudget} (admission).
 */
public final class RolloutCoordinator extends AbstractBehavior<RolloutCoordinator.Command> {

    public sealed interface Command {}

    /**
     * A task ended (from the collector, once per task id); {@code buffered} is the number of
     * accepted groups the collector holds unbatched after it.
     */
    public record TaskFinished(long taskId, int attempt, boolean isEval, boolean accepted, String reason, int buffered)
            implements Command, CborSerializable {}

    /**
     * The collector holds task {@code taskId}'s outcome (re-sent, or of a re-run) while a trainer
     * may still acknowledge the task from a predecessor's batch: a task that ran here no longer
     * runs, but keeps its place in the staleness bound ({@link StalenessBudget#onHold}).
     */
    public record OutcomeHeld(long taskId) implements Command, CborSerializable {}

    /**
     * The collector is about to hand out batch {@code batchId} with {@code taskIds}: their ledger
     * entries are marked possibly delivered, then {@code collector} is told {@link
     * Collector.HandOutRecorded}. A successor holds the outcomes of marked tasks until the batch's
     * fate is known; unmarked accepted tasks it hands out at once.
     */
    public record HandingOut(long batchId, List<Long> taskIds, ActorRef<Collector.Command> collector)
            implements Command, CborSerializable {
        public HandingOut {
            taskIds = List.copyOf(taskIds);
        }
    }

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

    record Runners(Set<ActorRef<GroupRunner.Command>> runners) implements Command, NodeLocal {}

    record RunnerJoined(GroupRunner.Info info) implements Command, NodeLocal {}

    record RunnerGone(ActorRef<GroupRunner.Command> runner) implements Command, NodeLocal {}

    record StateRead(DurableState.Ledger ledger, DurableState.VersionRecord version, Throwable error)
            implements Command, NodeLocal {}

    record HoldingsReceived(ActorRef<GroupRunner.Command> runner, GroupRunner.Holdings holdings)
            implements Command, NodeLocal {}

    record RecoveryDeadline() implements Command, NodeLocal {}

    /** Looks at the latest Receptionist listing again: a runner still listed but lost here is asked again. */
    record RecheckRunners() implements Command, NodeLocal {}

    /** A ledger write completed (or failed: {@code error}); {@code then} runs on the actor. */
    record Persisted(Runnable then, Throwable error) implements Command, NodeLocal {}

    private final StalenessBudget budget;
    private final PromptSource source;
    private final EvaluationSchedule eval;
    private final ActorRef<Collector.Command> collectorEntry;
    private ActorRef<Collector.Command> collector;
    /** Writes the ledger's changes with the cursor. */
    private final LedgerWriter ledger;

    private final Duration recoveryTimeout;
    private final TimerScheduler<Command> timers;
    private final StashBuffer<Command> stash;
    private final int queueSize;
    /** Tasks in flight, accepted and unacknowledged, to dispatch again; runners and their load. */
    private final TaskLedger<ActorRef<GroupRunner.Command>> tasks = new TaskLedger<>();

    private DurableState.Ledger recoveredLedger;
    private int recoveredVersion;
    private final Map<ActorRef<GroupRunner.Command>, GroupRunner.Holdings> holdings = new HashMap<>();
    private long incarnation;
    /** Runners listed, asked, joined and gone. */
    private final RunnerMembership runners;

    /** Tasks in flight whose outcome the collector holds ({@link OutcomeHeld}), counted as held. */
    private final Set<Long> held = new HashSet<>();

    /** What is admitted next, and the admission cursor; made when recovery ends. */
    private AdmissionPlanner<ActorRef<GroupRunner.Command>> planner;

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
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> Behaviors.withStash(STASH_CAPACITY, stash -> {
            // One logger for the coordinator's lines, also those its parts log on its context.
            ctx.setLoggerName(RolloutCoordinator.class);
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
                    stash,
                    budget,
                    source,
                    evalItems,
                    evalEvery,
                    evalMaxConcurrent,
                    queueSize,
                    collector,
                    state,
                    recoveryTimeout);
        })));
    }

    /** Messages that wait while a coordinator recovers: outcomes, acknowledgements, weight updates. */
    private static final int STASH_CAPACITY = 10_000;

    private RolloutCoordinator(
            ActorContext<Command> ctx,
            TimerScheduler<Command> timers,
            StashBuffer<Command> stash,
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
        this.stash = stash;
        this.ledger = new LedgerWriter(ctx, state, this::cursor);
        this.recoveryTimeout = recoveryTimeout;
        this.collectorEntry = collector;
        this.queueSize = Math.max(1, queueSize);
        this.budget = budget;
        this.source = source;
        this.eval = new EvaluationSchedule(evalItems, evalEvery, evalMaxConcurrent);
        this.runners =
                new RunnerMembership(ctx, timers, new RunnerDirectory<>(tasks), () -> this.collector, recoveryTimeout);
    }

    /**
     * Recovering: reads the ledger, learns the collector and what runners hold, then switches to
     * {@link Admitting}. Outcomes, acknowledgements, weight updates and status reads wait in the
     * stash until then (a weight update taken during recovery would be overwritten by the ledger's
     * older version; a status read would report the fresh budget's version 0).
     */
    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(StateRead.class, this::onStateRead)
                .onMessage(CollectorIs.class, is -> {
                    if (learnCollector(is)) {
                        askAllHoldings();
                    }
                    return tryFinishRecovery();
                })
                .onMessage(CollectorRestarted.class, r -> {
                    if (learnCollector(new CollectorIs(r.collector()))) {
                        askAllHoldings();
                    }
                    return tryFinishRecovery();
                })
                .onMessage(HoldingsReceived.class, this::onHoldings)
                .onMessage(RecoveryDeadline.class, d -> {
                    if (recoveredLedger == null) {
                        return Behaviors.same();
                    }
                    getContext()
                            .getLog()
                            .warn(
                                    "recovery: {} runner(s) did not say what they hold within {}; their tasks are dispatched again",
                                    runners.holdingsAsked() - holdings.size(),
                                    recoveryTimeout);
                    return finishRecovery();
                })
                .onMessage(Persisted.class, ledger::completed)
                .onMessage(Runners.class, listing -> {
                    runners.listing(listing.runners());
                    return Behaviors.same();
                })
                .onMessage(RunnerJoined.class, j -> {
                    runners.joined(j.info());
                    runners.askHoldings(j.info().runner());
                    return Behaviors.same();
                })
                .onMessage(RunnerGone.class, g -> {
                    runners.gone(g.runner());
                    return Behaviors.same();
                })
                .onMessage(RecheckRunners.class, r -> {
                    runners.recheck();
                    return Behaviors.same();
                })
                // A status read waits in the stash too: before recovery the budget is a fresh one
                // (version 0), and a trainer must never see the version go backwards.
                .onAnyMessage(m -> {
                    stash.stash(m);
                    return Behaviors.same();
                })
                .build();
    }

    /** Admitting: the coordinator at work, after recovery (or a fresh start). */
    private final class Admitting extends AbstractBehavior<Command> {
        Admitting() {
            super(RolloutCoordinator.this.getContext());
        }

        @Override
        public Receive<Command> createReceive() {
            return newReceiveBuilder()
                    .onMessage(CollectorIs.class, is -> {
                        if (learnCollector(is)) {
                            collectorReplaced();
                        }
                        return Behaviors.same();
                    })
                    .onMessage(CollectorRestarted.class, RolloutCoordinator.this::onCollectorRestarted)
                    .onMessage(Persisted.class, ledger::completed)
                    .onMessage(Runners.class, listing -> {
                        runners.listing(listing.runners());
                        admit();
                        return Behaviors.same();
                    })
                    .onMessage(RunnerJoined.class, j -> {
                        runners.joined(j.info());
                        admit();
                        return Behaviors.same();
                    })
                    .onMessage(RunnerGone.class, g -> {
                        runners.gone(g.runner());
                        admit();
                        return Behaviors.same();
                    })
                    .onMessage(RecheckRunners.class, r -> {
                        runners.recheck();
                        admit();
                        return Behaviors.same();
                    })
                    .onMessage(TaskFinished.class, RolloutCoordinator.this::onTaskFinished)
                    .onMessage(OutcomeHeld.class, RolloutCoordinator.this::onOutcomeHeld)
                    .onMessage(HandingOut.class, RolloutCoordinator.this::onHandingOut)
                    .onMessage(AcceptedDiscarded.class, RolloutCoordinator.this::onAcceptedDiscarded)
                    .onMessage(BatchConsumed.class, RolloutCoordinator.this::onBatchConsumed)
                    .onMessage(Backlog.class, b -> {
                        planner.buffered(b.buffered());
                        admit();
                        return Behaviors.same();
                    })
                    .onMessage(PauseAdmission.class, p -> {
                        planner.pause(p.updateId());
                        return Behaviors.same();
                    })
                    .onMessage(ResumeAdmission.class, RolloutCoordinator.this::onResume)
                    .onMessage(GetStatus.class, RolloutCoordinator.this::onGetStatus)
                    // A late answer from a runner asked during recovery, or its deadline: done with.
                    .onMessage(HoldingsReceived.class, h -> Behaviors.same())
                    .onMessage(RecoveryDeadline.class, d -> Behaviors.same())
                    .onMessage(StateRead.class, r -> Behaviors.same())
                    .build();
        }
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
            askAllHoldings();
        }
        return tryFinishRecovery();
    }

    /** Takes {@code is} as the collector; false when it is the one known already. */
    private boolean learnCollector(CollectorIs is) {
        if (is.collector().equals(collector)) {
            return false;
        }
        collector = is.collector();
        return true;
    }

    /**
     * A new collector with an empty buffer: what runners hold is delivered to it again; what the
     * old one handed out is marked in the ledger, and the new one holds it ({@link Collector.Attach}).
     */
    private void collectorReplaced() {
        getContext().getLog().warn("the collector was replaced; runners deliver what they hold to the new one");
        attachCollector();
        tasks.acceptedByRunner().forEach((r, ids) -> r.tell(new GroupRunner.Resend(ids, collector)));
    }

    /**
     * Asks every runner known so far, joined or only listed, once the ledger is known to be a
     * predecessor's and the collector is known: a runner listed before then is not asked then, and
     * its listing does not come again when it joins.
     */
    private void askAllHoldings() {
        if (recoveredLedger != null && !recoveredLedger.isFresh() && collector != null) {
            runners.askHoldings();
        }
    }

    /** Re-attaches a restarted collector; runners deliver again what they hold of every open task. */
    /**
     * The collector restarted after a failure (its supervisor): it lost its buffer and what it had
     * handed out. It gets new batch ids (a new incarnation), and runners deliver again everything
     * they hold for open tasks.
     */
    private Behavior<Command> onCollectorRestarted(CollectorRestarted r) {
        collector = r.collector();
        incarnation++; // its batch ids must differ from those it handed out before it failed
        ledger.write(List.of(), List.of(), () -> {});
        held.clear(); // what the failed collector held is delivered again
        budget.releaseHeld();
        attachCollector();
        tasks.openByRunner().forEach((runner, ids) -> runner.tell(new GroupRunner.Resend(ids, collector)));
        return Behaviors.same();
    }

    private Behavior<Command> onHoldings(HoldingsReceived h) {
        if (h.holdings() != null) {
            holdings.put(h.runner(), h.holdings());
        }
        return tryFinishRecovery();
    }

    /** Finishes recovery once the ledger, the collector and every asked runner's holdings are in. */
    private Behavior<Command> tryFinishRecovery() {
        if (recoveredLedger == null || collector == null) {
            return Behaviors.same();
        }
        if (!recoveredLedger.isFresh() && (runners.holdingsAsked() == 0 || holdings.size() < runners.holdingsAsked())) {
            return Behaviors.same(); // wait for runners (or the deadline)
        }
        return finishRecovery();
    }

    /** Re-creates the ledger from what was written and what runners hold, then starts admitting. */
    private Behavior<Command> finishRecovery() {
        if (collector == null) {
            return Behaviors.same();
        }
        timers.cancel(RecoveryDeadline.class);
        DurableState.Ledger l = recoveredLedger;
        DurableState.Cursor c = l.cursor();
        incarnation = l.isFresh() ? 0 : c.incarnation() + 1;
        planner = new AdmissionPlanner<>(
                tasks, budget, eval, source, queueSize, c.nextTaskId(), c.trainTaken(), System::nanoTime);
        if (l.isFresh()) {
            if (recoveredVersion > budget.version()) {
                budget.onVersion(recoveredVersion);
            }
            attachCollector();
            startEvalPass(budget.version());
            ledger.write(List.of(), List.of(), () -> {});
            return admitting();
        }
        Map<ActorRef<GroupRunner.Command>, List<GroupRunner.Held>> heldBy = new HashMap<>();
        holdings.values().forEach(h -> heldBy.put(h.runner(), h.held()));
        // Items re-read once, by index, for the tasks that stay open.
        Map<Long, Map<String, Object>> items = new HashMap<>();
        RecoveryPlan<ActorRef<GroupRunner.Command>> plan = RecoveryPlan.of(l, heldBy, t -> {
            Map<String, Object> data = itemOf(t);
            if (data != null) {
                items.put(t.taskId(), data);
            }
            return data != null;
        });
        plan.forget.forEach((r, ids) -> r.tell(new GroupRunner.Forget(ids)));
        plan.cancel.forEach(stray -> stray.runner()
                .tell(new GroupRunner.CancelGroup(
                        stray.taskId(), stray.attempt(), RejectReason.CANCELLED, "not in the ledger")));
        for (DurableState.OpenTask t : plan.unreadable) {
            getContext()
                    .getLog()
                    .error(
                            "recovery: task {}: its item (index {}) is no longer in the source; dropped",
                            t.taskId(),
                            t.sourceIndex());
        }
        List<Task<ActorRef<GroupRunner.Command>>> open = new ArrayList<>();
        List<Task<ActorRef<GroupRunner.Command>>> accepted = new ArrayList<>();
        List<Task<ActorRef<GroupRunner.Command>>> again = new ArrayList<>();
        for (RecoveryPlan.Accepted<ActorRef<GroupRunner.Command>> a : plan.acceptedUnacked) {
            DurableState.OpenTask t = a.task();
            accepted.add(task(t, t.attempt(), items.get(t.taskId()), a.runner(), t.possiblyDelivered()));
        }
        for (RecoveryPlan.Open<ActorRef<GroupRunner.Command>> o : plan.open) {
            DurableState.OpenTask t = o.task();
            Task<ActorRef<GroupRunner.Command>> f =
                    task(t, o.attempt(), items.get(t.taskId()), o.runner(), o.possiblyDelivered());
            open.add(f);
            if (o.again()) {
                again.add(f);
            }
        }
        tasks.restore(open, accepted, again);
        if (plan.evalPassVersion >= 0) {
            eval.resume(plan.evalPassVersion, plan.evalOpen);
            getContext()
                    .getLog()
                    .warn(
                            "recovery: the evaluation pass at version {} goes on with its {} open group(s); its items not yet dispatched are not",
                            eval.version(),
                            eval.inFlight());
        }
        budget.restore(recoveredVersion, plan.accepted, plan.running);
        getContext()
                .getLog()
                .warn(
                        "recovered: {} task(s) still running, {} outcome(s) delivered again, {} task(s) dispatched again ({} accepted group(s) lost with their node); budget {}",
                        open.size() - again.size(),
                        plan.resent(),
                        again.size(),
                        plan.lostAccepted,
                        budget);
        attachCollector();
        plan.resend.forEach((r, ids) -> r.tell(new GroupRunner.Resend(toArray(ids), collector)));
        // Unreadable tasks leave the ledger: no successor could run them either.
        ledger.write(
                List.of(),
                plan.unreadable.stream().map(DurableState.OpenTask::taskId).toList(),
                () -> {});
        return admitting();
    }

    /** Switches to admitting: what waited in the stash first (a weight update may pause admission). */
    private Behavior<Command> admitting() {
        Behavior<Command> next = stash.unstashAll(new Admitting());
        admit();
        return next;
    }

    private static Task<ActorRef<GroupRunner.Command>> task(
            DurableState.OpenTask t,
            int attempt,
            Map<String, Object> data,
            ActorRef<GroupRunner.Command> runner,
            boolean possiblyDelivered) {
        return new Task<>(
                t.taskId(),
                attempt,
                data,
                t.isEval(),
                t.sourceIndex(),
                runner,
                t.dispatchVersion(),
                System.nanoTime(),
                possiblyDelivered);
    }

    private Map<String, Object> itemOf(DurableState.OpenTask t) {
        if (t.isEval()) {
            return eval.item(t.sourceIndex());
        }
        return source.item(t.sourceIndex()).orElse(null);
    }

    private void attachCollector() {
        collector.tell(new Collector.Attach(
                getContext().getSelf(),
                incarnation,
                planner.nextTaskId(),
                List.copyOf(tasks.openTaskIds()),
                tasks.possiblyDelivered()));
    }

    private static List<Long> toArray(java.util.Collection<Long> ids) {
        return List.copyOf(ids);
    }

    private DurableState.Cursor cursor() {
        return new DurableState.Cursor(planner.nextTaskId(), planner.trainTaken(), budget.accepted(), incarnation);
    }

    // ---- outcomes ----

    private Behavior<Command> onTaskFinished(TaskFinished done) {
        planner.buffered(done.buffered());
        Task<ActorRef<GroupRunner.Command>> f = tasks.finish(done.taskId());
        if (f == null) {
            if (!tasks.isAcceptedUnacked(done.taskId())) {
                getContext().getLog().warn("finished task {} is not in the ledger; ignoring", done.taskId());
            }
            if (done.accepted() && !done.isEval()) {
                // Accepted already (a held outcome taken, an announcement repeated): in the ledger
                // as such, or done with. Either way the collector may hand it out.
                collector.tell(new Collector.AcceptRecorded(done.taskId()));
            }
            return Behaviors.same();
        }
        if (f.attempt() != done.attempt() && f.runner() != null && tasks.hasRunner(f.runner())) {
            f.runner()
                    .tell(new GroupRunner.CancelGroup(
                            f.taskId(),
                            f.attempt(),
                            RejectReason.CANCELLED,
                            "attempt " + done.attempt() + " finished first"));
        }
        boolean wasHeld = held.remove(f.taskId());
        if (f.isEval()) {
            evalGroupEnded();
        } else if (done.accepted()) {
            if (wasHeld) {
                budget.onHeldAccept();
            } else {
                budget.onAccept();
            }
        } else if (wasHeld) {
            budget.onHeldReject();
        } else {
            budget.onReject();
        }
        if (done.accepted() && !f.isEval()) {
            tasks.accepted(f);
            ActorRef<Collector.Command> to = collector;
            ledger.write(List.of(f.entry(true)), List.of(), () -> to.tell(new Collector.AcceptRecorded(f.taskId())));
        } else {
            ActorRef<GroupRunner.Command> holder = f.runner();
            ledger.write(List.of(), List.of(f.taskId()), () -> forget(holder, List.of(f.taskId())));
        }
        admit();
        return Behaviors.same();
    }

    /** Marks the tasks of a batch about to be handed out, then lets the collector send it. */
    private Behavior<Command> onHandingOut(HandingOut h) {
        List<DurableState.OpenTask> marked = tasks.handedOut(h.taskIds());
        if (marked.isEmpty()) {
            h.collector().tell(new Collector.HandOutRecorded(h.batchId()));
        } else {
            ledger.write(marked, List.of(), () -> h.collector().tell(new Collector.HandOutRecorded(h.batchId())));
        }
        return Behaviors.same();
    }

    private Behavior<Command> onOutcomeHeld(OutcomeHeld h) {
        if (tasks.isInFlightTraining(h.taskId()) && held.add(h.taskId())) {
            budget.onHold();
            admit();
        }
        return Behaviors.same();
    }

    private Behavior<Command> onAcceptedDiscarded(AcceptedDiscarded d) {
        budget.onAcceptedDiscarded();
        planner.buffered(d.buffered());
        Task<ActorRef<GroupRunner.Command>> f = tasks.discard(d.taskId());
        ActorRef<GroupRunner.Command> holder = f == null ? null : f.runner();
        ledger.write(List.of(), List.of(d.taskId()), () -> forget(holder, List.of(d.taskId())));
        admit();
        return Behaviors.same();
    }

    /**
     * The trainer consumed a batch: its tasks are delivered, whatever became of any re-run of
     * theirs. A task of a predecessor's batch may be open here again (its outcome was lost with the
     * predecessor's node): its re-run is stopped, or its re-run's outcome, which the collector
     * holds while such an acknowledgement may come, is dropped; either way it counts once, as
     * accepted. A task found nowhere was retired before (the same acknowledgement again).
     */
    private Behavior<Command> onBatchConsumed(BatchConsumed consumed) {
        TaskLedger.Consumed<ActorRef<GroupRunner.Command>> done = tasks.consume(consumed.taskIds());
        Map<ActorRef<GroupRunner.Command>, List<Long>> byRunner = new HashMap<>();
        for (Task<ActorRef<GroupRunner.Command>> f : done.retired()) {
            if (f.runner() != null) {
                byRunner.computeIfAbsent(f.runner(), k -> new ArrayList<>()).add(f.taskId());
            }
        }
        for (Task<ActorRef<GroupRunner.Command>> f : done.rerunsStopped()) {
            // A predecessor's batch: this task was lost with its node and is running again (or
            // its re-run ended and the collector holds the outcome); the trainer has consumed
            // it, so the new run is stopped and the task counted as accepted.
            if (f.isEval()) {
                evalGroupEnded();
            } else if (held.remove(f.taskId())) {
                budget.onHeldAccept();
            } else {
                budget.onAccept();
            }
            if (f.runner() != null) {
                f.runner()
                        .tell(new GroupRunner.CancelGroup(
                                f.taskId(), f.attempt(), RejectReason.CANCELLED, "consumed by the trainer already"));
                byRunner.computeIfAbsent(f.runner(), k -> new ArrayList<>()).add(f.taskId());
            }
        }
        ledger.write(List.of(), List.copyOf(consumed.taskIds()), () -> {
            byRunner.forEach(this::forget);
            consumed.replyTo().tell(new Collector.AckReply(consumed.batchId(), true));
        });
        return Behaviors.same();
    }

    private void forget(ActorRef<GroupRunner.Command> runner, List<Long> ids) {
        if (runner != null) {
            runner.tell(new GroupRunner.Forget(ids));
        }
    }

    private Behavior<Command> onResume(ResumeAdmission resume) {
        planner.resume(resume.updateId());
        if (resume.version() > budget.version()) {
            budget.onVersion(resume.version());
            if (eval.dueAt(resume.version())) {
                startEvalPass(resume.version());
            }
        }
        admit();
        return Behaviors.same();
    }

    private void startEvalPass(int version) {
        switch (eval.start(version)) {
            case STARTED -> {
                getContext().getLog().info("evaluation pass over {} items at version {}", eval.size(), version);
                collector.tell(new Collector.EvalPassStarted(version));
            }
            case SKIPPED ->
                getContext()
                        .getLog()
                        .warn("evaluation at version {} skipped: the previous pass is still running", version);
            case NO_ITEMS -> {}
        }
    }

    private void evalGroupEnded() {
        if (eval.finished()) {
            getContext().getLog().info("evaluation pass at version {} finished", eval.version());
            collector.tell(new Collector.EvalPassFinished(eval.version()));
        }
    }

    // ---- admission ----

    /** Dispatches re-dispatches first, then evaluation and training, as far as limits allow. */
    private void admit() {
        AdmissionPlanner.Admission<ActorRef<GroupRunner.Command>> admission = planner.admit();
        if (admission.promptsRanOut()) {
            getContext().getLog().info("training prompts exhausted after {} prompts", planner.trainTaken());
        }
        if (admission.dispatches().isEmpty()) {
            return;
        }
        List<DurableState.OpenTask> written = new ArrayList<>();
        for (AdmissionPlanner.Dispatch<ActorRef<GroupRunner.Command>> d : admission.dispatches()) {
            written.add(d.task().entry(false));
        }
        // Written before it is sent: a task on a lost node is always in the ledger.
        ledger.write(written, List.of(), () -> admission.dispatches().forEach(d -> send(d.task())));
    }

    private void send(Task<ActorRef<GroupRunner.Command>> f) {
        if (!tasks.isCurrent(f)) {
            return; // finished or dispatched again while the write was on its way
        }
        Optional<String> node = tasks.node(f.runner());
        if (node.isEmpty()) {
            tasks.redispatchLater(f);
            admit();
            return;
        }
        TaskJournal.dispatched(f.taskId(), f.attempt(), f.isEval(), f.sourceIndex(), f.dispatchVersion(), node.get());
        f.runner()
                .tell(new GroupRunner.RunGroup(
                        f.taskId(), f.attempt(), f.data(), f.isEval(), f.dispatchVersion(), collector));
    }

    private Behavior<Command> onGetStatus(GetStatus get) {
        get.replyTo()
                .tell(new Status(
                        budget.snapshot(),
                        tasks.inFlight(),
                        eval.inFlight(),
                        planner.paused(),
                        planner.exhausted(),
                        planner.buffered(),
                        tasks.inFlightByNode(),
                        Duration.ofNanos(tasks.oldestNanos(System.nanoTime())),
                        planner.redispatched()));
        return Behaviors.same();
    }
}
