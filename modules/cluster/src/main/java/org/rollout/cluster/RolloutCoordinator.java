package org.rollout.cluster;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
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
 * and whenever the version reaches a multiple of {@code eval_every} (or on {@link EvaluateNow}). Eval
 * groups run beside training ones with their own concurrency limit and no staleness bound; they never
 * wait for, nor hold up, training admission. A pass due while the previous one still runs is skipped.
 *
 * <p>Failure and durability: a lost runner's tasks are dispatched again (same task id, attempt + 1;
 * the collector keeps the first outcome, the coordinator cancels the other attempts). A task is
 * written to the ledger ({@link DurableState}) before it is dispatched, marked when accepted, and
 * removed when rejected or acknowledged (the acknowledgement is answered once the removal is
 * written); a successor on another node recovers from it ({@link CoordinatorRecovery}). Batch ids
 * embed the incarnation: an acknowledgement of a predecessor's batch is never taken for a new one.
 *
 * <p>The decisions are plain classes with table tests; the actor carries them out (ledger writes,
 * messages, timers): {@link AdmissionPlanner} (what is dispatched where next, and why admission
 * stops), {@link RunnerDirectory} (runners listed, asked, joined and gone), {@link TaskLedger}
 * (tasks in flight, accepted, to dispatch again, and each runner's load), {@link RecoveryPlan}
 * (what a successor does with each task of its predecessor's ledger), {@link EvaluationSchedule}
 * (when evaluation passes run and which item goes next; {@link EvaluationPasses} carries them out),
 * {@link OutcomeAccounting} (each outcome
 * counted into the budget once), and core's {@link StalenessBudget}.
 *
 * <p>Behaviours: the coordinator starts as {@link CoordinatorRecovery} (reads the ledger, asks
 * runners what they hold, rebuilds the tasks; everything else waits in the stash) and goes on as
 * this one, admitting. Both write through a {@link LedgerWriter} and have a {@link
 * RunnerMembership} carry out the directory's steps.
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

    /**
     * A weight update ended; {@code version} is the version now current. When {@code replyTo} is
     * set, the coordinator answers it with the version it now admits at, once it took this one in:
     * the weight version answers a publish only after that, so that no status read that begins
     * after a publish returned can show the version before it.
     */
    public record ResumeAdmission(long updateId, int version, ActorRef<Integer> replyTo)
            implements Command, CborSerializable {
        public ResumeAdmission(long updateId, int version) {
            this(updateId, version, null);
        }
    }

    /**
     * Starts an evaluation pass at {@code version} now, whether or not {@code eval_every} divides
     * it (a local run's final weights): ignored unless {@code version} is the current version and
     * no pass runs.
     */
    public record EvaluateNow(int version) implements Command, CborSerializable {}

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

    /**
     * What both of the coordinator's behaviours work with: its settings and timers, the tasks and
     * the runners ({@link CoordinatorRecovery} fills them in, the coordinator goes on with them).
     */
    record Parts(
            TimerScheduler<Command> timers,
            StalenessBudget budget,
            PromptSource source,
            EvaluationSchedule eval,
            int queueSize,
            DurableState state,
            Duration recoveryTimeout,
            TaskLedger<ActorRef<GroupRunner.Command>> tasks,
            RunnerDirectory<ActorRef<GroupRunner.Command>> runners,
            RankShare share) {}

    private final StalenessBudget budget;
    private final EvaluationSchedule eval;
    private final EvaluationPasses passes;
    private ActorRef<Collector.Command> collector;
    /** Writes the ledger's changes with the cursor. */
    private final LedgerWriter ledger;
    /** Tasks in flight, accepted and unacknowledged, to dispatch again; runners and their load. */
    private final TaskLedger<ActorRef<GroupRunner.Command>> tasks;
    /** Runners listed, asked, joined and gone. */
    private final RunnerMembership runners;
    /** What is admitted next, and the admission cursor. */
    private final AdmissionPlanner<ActorRef<GroupRunner.Command>> planner;
    /** Outcomes counted into the budget, and the tasks whose outcome the collector holds. */
    private final OutcomeAccounting outcomes;

    private long incarnation;
    /** Which trainer rank's tasks this coordinator admits. */
    private final RankShare share;

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
     * @param share the trainer rank whose coordinator this is ({@link RankShare#ALONE} with one):
     *     {@code budget}, {@code source} and {@code queueSize} are the rank's share already; it
     *     admits the rank's task ids, asks runners only about them, and takes its share of each
     *     runner's capacity
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
            Duration recoveryTimeout,
            RankShare share) {
        int stashCapacity = CoordinatorRecovery.stashCapacity(budget.maxConcurrentRollouts(), queueSize);
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> Behaviors.withStash(stashCapacity, stash -> {
            // One logger for the coordinator's lines, also those its parts log on its context.
            ctx.setLoggerName(RolloutCoordinator.class);
            TaskLedger<ActorRef<GroupRunner.Command>> tasks = new TaskLedger<>();
            Parts parts = new Parts(
                    timers,
                    budget,
                    source,
                    new EvaluationSchedule(evalItems, evalEvery, evalMaxConcurrent),
                    Math.max(1, queueSize),
                    state,
                    recoveryTimeout,
                    tasks,
                    new RunnerDirectory<>(tasks),
                    share);
            return CoordinatorRecovery.start(ctx, stash, parts, collector);
        })));
    }

    /**
     * The coordinator after recovery (or a fresh start), with the tasks and runners {@link
     * CoordinatorRecovery} found, batch ids of {@code incarnation} and the admission cursor.
     */
    RolloutCoordinator(
            ActorContext<Command> ctx,
            Parts parts,
            ActorRef<Collector.Command> collector,
            long incarnation,
            long nextTaskId,
            long trainTaken) {
        super(ctx);
        this.budget = parts.budget();
        this.eval = parts.eval();
        this.passes = new EvaluationPasses(eval, getContext().getLog());
        this.collector = collector;
        this.incarnation = incarnation;
        this.tasks = parts.tasks();
        this.outcomes = new OutcomeAccounting(budget);
        this.ledger = new LedgerWriter(ctx, parts.state(), this::cursor);
        this.runners = new RunnerMembership(
                ctx, parts.timers(), parts.runners(), () -> this.collector, parts.recoveryTimeout(), parts.share());
        this.planner = new AdmissionPlanner<>(
                tasks,
                budget,
                eval,
                parts.source(),
                parts.queueSize(),
                nextTaskId,
                trainTaken,
                System::nanoTime,
                parts.share());
        this.share = parts.share();
    }

    /**
     * Starts admitting: attaches the collector; on a fresh run starts the first evaluation pass, after
     * a take-over has runners deliver again the outcomes in {@code resend}; writes the cursor (and
     * removes {@code dropped}); then takes what waited in the stash (a weight update may pause
     * admission) and admits.
     */
    Behavior<Command> start(
            StashBuffer<Command> stash,
            boolean fresh,
            Map<ActorRef<GroupRunner.Command>, List<Long>> resend,
            List<Long> dropped) {
        attachCollector();
        if (fresh) {
            passes.start(budget.version(), collector);
        }
        resend.forEach(this::resend);
        ledger.write(List.of(), dropped, () -> {});
        Behavior<Command> next = stash.unstashAll(this);
        admit();
        return next;
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
                .onMessage(CollectorRestarted.class, this::onCollectorRestarted)
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
                .onMessage(TaskFinished.class, this::onTaskFinished)
                .onMessage(OutcomeHeld.class, this::onOutcomeHeld)
                .onMessage(HandingOut.class, this::onHandingOut)
                .onMessage(AcceptedDiscarded.class, this::onAcceptedDiscarded)
                .onMessage(BatchConsumed.class, this::onBatchConsumed)
                .onMessage(Backlog.class, b -> {
                    planner.buffered(b.buffered());
                    admit();
                    return Behaviors.same();
                })
                .onMessage(PauseAdmission.class, p -> {
                    planner.pause(p.updateId());
                    return Behaviors.same();
                })
                .onMessage(ResumeAdmission.class, this::onResume)
                .onMessage(EvaluateNow.class, this::onEvaluateNow)
                .onMessage(GetStatus.class, this::onGetStatus)
                // A late answer from a runner asked during recovery, or its deadline: done with.
                .onMessage(HoldingsReceived.class, h -> Behaviors.same())
                .onMessage(RecoveryDeadline.class, d -> Behaviors.same())
                .onMessage(StateRead.class, r -> Behaviors.same())
                .build();
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
        tasks.acceptedByRunner().forEach(this::resend);
    }

    /**
     * The collector restarted after a failure (its supervisor): it lost its buffer and what it had
     * handed out. It gets new batch ids (a new incarnation), and runners deliver again everything
     * they hold for open tasks.
     */
    private Behavior<Command> onCollectorRestarted(CollectorRestarted r) {
        collector = r.collector();
        incarnation++; // its batch ids must differ from those it handed out before it failed
        ledger.write(List.of(), List.of(), () -> {});
        outcomes.collectorRestarted(); // what the failed collector held is delivered again
        attachCollector();
        tasks.openByRunner().forEach(this::resend);
        return Behaviors.same();
    }

    /** Has {@code runner} deliver the outcomes of {@code ids} again, to the collector. */
    private void resend(ActorRef<GroupRunner.Command> runner, List<Long> ids) {
        runner.tell(new GroupRunner.Resend(ids, collector, share.rank(), share.ranks()));
    }

    private void attachCollector() {
        collector.tell(new Collector.Attach(
                getContext().getSelf(),
                incarnation,
                planner.nextTaskId(),
                List.copyOf(tasks.openTaskIds()),
                tasks.possiblyDelivered()));
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
        outcomes.ended(f.taskId(), f.isEval(), done.accepted());
        if (f.isEval()) {
            passes.groupEnded(budget.version(), collector);
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
        if (tasks.isInFlightTraining(h.taskId()) && outcomes.held(h.taskId())) {
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
                passes.groupEnded(budget.version(), collector);
            } else {
                outcomes.consumedWhileRerun(f.taskId());
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
            passes.versionMoved(resume.version(), collector);
        }
        if (resume.replyTo() != null) {
            resume.replyTo().tell(budget.version());
        }
        admit();
        return Behaviors.same();
    }

    private Behavior<Command> onEvaluateNow(EvaluateNow now) {
        if (passes.ask(now.version(), budget.version(), collector)) {
            admit();
        }
        return Behaviors.same();
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
                        f.taskId(),
                        f.attempt(),
                        f.data(),
                        f.isEval(),
                        f.dispatchVersion(),
                        collector,
                        share.rank(),
                        share.ranks()));
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
