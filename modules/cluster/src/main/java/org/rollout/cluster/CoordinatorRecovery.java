package org.rollout.cluster;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.StashBuffer;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.rollout.cluster.RolloutCoordinator.CollectorIs;
import org.rollout.cluster.RolloutCoordinator.CollectorRestarted;
import org.rollout.cluster.RolloutCoordinator.Command;
import org.rollout.cluster.RolloutCoordinator.HoldingsReceived;
import org.rollout.cluster.RolloutCoordinator.Parts;
import org.rollout.cluster.RolloutCoordinator.RecheckRunners;
import org.rollout.cluster.RolloutCoordinator.RecoveryDeadline;
import org.rollout.cluster.RolloutCoordinator.RunnerGone;
import org.rollout.cluster.RolloutCoordinator.RunnerJoined;
import org.rollout.cluster.RolloutCoordinator.Runners;
import org.rollout.cluster.RolloutCoordinator.StateRead;
import org.rollout.cluster.TaskLedger.Task;
import org.rollout.core.StalenessBudget;

/**
 * The coordinator's first behaviour: reads the durable ledger, learns the collector and, when the
 * ledger is a predecessor's (its node was lost), what every runner runs and holds; then rebuilds
 * the tasks from the {@link RecoveryPlan} and becomes the admitting {@link RolloutCoordinator}.
 * Outcomes, acknowledgements, weight updates and status reads wait in the stash until then (a
 * weight update taken during recovery would be overwritten by the ledger's older version; a status
 * read would report the fresh budget's version 0). Runners are listed, asked and joined meanwhile.
 */
final class CoordinatorRecovery extends AbstractBehavior<Command> {

    private final StashBuffer<Command> stash;
    private final Parts parts;
    private final RunnerMembership runners;
    private ActorRef<Collector.Command> collector;
    private DurableState.Ledger recoveredLedger;
    private int recoveredVersion;
    private final Map<ActorRef<GroupRunner.Command>, GroupRunner.Holdings> holdings = new HashMap<>();

    /**
     * How many messages wait while a coordinator recovers (outcomes, holds, acknowledgements, weight
     * updates, status reads), sized for the run: each of the {@code maxConcurrentRollouts} groups in
     * flight can report its end and a hold, and each buffered group ({@code queueSize}) a hand-out
     * and an acknowledgement, plus room for the rest. With 160 000 groups in flight that is
     * about 650 000 entries, a few tens of megabytes for the seconds a recovery takes; a coordinator
     * that still overflows it fails and is restarted (it recovers from the ledger again).
     */
    static int stashCapacity(int maxConcurrentRollouts, int queueSize) {
        long need = 4L * maxConcurrentRollouts + 2L * Math.max(0, queueSize) + 10_000;
        return (int) Math.min(Integer.MAX_VALUE - 8, need);
    }

    /**
     * Subscribes to the runners' listing, introduces the coordinator to {@code collector} and reads
     * the ledger and the version; recovers from there.
     */
    static Behavior<Command> start(
            ActorContext<Command> ctx, StashBuffer<Command> stash, Parts parts, ActorRef<Collector.Command> collector) {
        ActorRef<Receptionist.Listing> listing = ctx.messageAdapter(
                Receptionist.Listing.class, l -> new Runners(l.getServiceInstances(GroupRunner.SERVICE_KEY)));
        ctx.getSystem().receptionist().tell(Receptionist.subscribe(GroupRunner.SERVICE_KEY, listing));
        collector.tell(new Collector.Introduce(ctx.getSelf()));
        readState(ctx, parts.state(), Duration.ZERO);
        return new CoordinatorRecovery(ctx, stash, parts);
    }

    /** How long a coordinator waits before it reads the ledger again after a read failed. */
    static final Duration REREAD_AFTER = Duration.ofSeconds(1);

    /** Reads the ledger and the version after {@code delay}; the result comes back as {@link StateRead}. */
    private static void readState(ActorContext<Command> ctx, DurableState state, Duration delay) {
        CompletableFuture<Void> wait = delay.isZero()
                ? CompletableFuture.completedFuture(null)
                : CompletableFuture.runAsync(
                        () -> {}, CompletableFuture.delayedExecutor(delay.toMillis(), TimeUnit.MILLISECONDS));
        ctx.pipeToSelf(
                wait.thenCompose(x -> state.readLedger()
                        .thenCombine(state.readVersion(), (l, v) -> new StateRead(l, v, null))
                        .toCompletableFuture()),
                (read, error) -> read != null ? read : new StateRead(null, null, error));
    }

    private CoordinatorRecovery(ActorContext<Command> ctx, StashBuffer<Command> stash, Parts parts) {
        super(ctx);
        this.stash = stash;
        this.parts = parts;
        this.runners = new RunnerMembership(
                ctx, parts.timers(), parts.runners(), () -> this.collector, parts.recoveryTimeout(), parts.share());
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(StateRead.class, this::onStateRead)
                .onMessage(CollectorIs.class, is -> onCollector(is.collector()))
                .onMessage(CollectorRestarted.class, r -> onCollector(r.collector()))
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
                                    parts.recoveryTimeout());
                    return finish();
                })
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

    private Behavior<Command> onStateRead(StateRead read) {
        StalenessBudget budget = parts.budget();
        if (read.error() != null) {
            // Never taken for a fresh start: a predecessor's open tasks would be lost, and task ids
            // handed out again. What arrives meanwhile waits in the stash (a coordinator whose stash
            // overflows fails and is restarted, and reads again).
            getContext()
                    .getLog()
                    .error(
                            "reading the durable ledger failed ({}); reading it again in {}",
                            GroupRun.describe(read.error()),
                            REREAD_AFTER);
            readState(getContext(), parts.state(), REREAD_AFTER);
            return Behaviors.same();
        }
        recoveredLedger = read.ledger();
        recoveredVersion = Math.max(budget.version(), read.version().version());
        if (!recoveredLedger.isFresh()) {
            getContext()
                    .getLog()
                    .warn(
                            "taking over a run: ledger holds {} open task(s), next task id {}, {} training prompt(s) taken, version {}; asking runners what they hold",
                            recoveredLedger.open().size(),
                            recoveredLedger.cursor().nextTaskId(),
                            recoveredLedger.cursor().trainTaken(),
                            recoveredVersion);
            parts.timers().startSingleTimer(RecoveryDeadline.class, new RecoveryDeadline(), parts.recoveryTimeout());
            askAllHoldings();
        }
        return tryFinish();
    }

    /** The collector announced itself (the same one again changes nothing). */
    private Behavior<Command> onCollector(ActorRef<Collector.Command> announced) {
        if (!announced.equals(collector)) {
            collector = announced;
            askAllHoldings();
        }
        return tryFinish();
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

    private Behavior<Command> onHoldings(HoldingsReceived h) {
        if (h.holdings() != null) {
            holdings.put(h.runner(), h.holdings());
        }
        return tryFinish();
    }

    /** Finishes recovery once the ledger, the collector and every asked runner's holdings are in. */
    private Behavior<Command> tryFinish() {
        if (recoveredLedger == null || collector == null) {
            return Behaviors.same();
        }
        if (!recoveredLedger.isFresh() && (runners.holdingsAsked() == 0 || holdings.size() < runners.holdingsAsked())) {
            return Behaviors.same(); // wait for runners (or the deadline)
        }
        return finish();
    }

    /** Re-creates the tasks from what was written and what runners hold, then starts admitting. */
    private Behavior<Command> finish() {
        if (collector == null) {
            return Behaviors.same();
        }
        parts.timers().cancel(RecoveryDeadline.class);
        StalenessBudget budget = parts.budget();
        DurableState.Ledger l = recoveredLedger;
        DurableState.Cursor c = l.cursor();
        if (l.isFresh()) {
            if (recoveredVersion > budget.version()) {
                budget.onVersion(recoveredVersion);
            }
            return new RolloutCoordinator(getContext(), parts, collector, 0, c.nextTaskId(), c.trainTaken())
                    .start(stash, true, Map.of(), List.of());
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
        parts.tasks().restore(open, accepted, again);
        EvaluationSchedule eval = parts.eval();
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
        // Unreadable tasks leave the ledger: no successor could run them either.
        List<Long> dropped =
                plan.unreadable.stream().map(DurableState.OpenTask::taskId).toList();
        return new RolloutCoordinator(
                        getContext(), parts, collector, c.incarnation() + 1, c.nextTaskId(), c.trainTaken())
                .start(stash, false, plan.resend, dropped);
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
            return parts.eval().item(t.sourceIndex());
        }
        return parts.source().item(t.sourceIndex()).orElse(null);
    }
}
