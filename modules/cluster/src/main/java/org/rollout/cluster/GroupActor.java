package org.rollout.cluster;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GroupCache;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingGroup;
import org.rollout.api.WorkflowContext;
import org.rollout.api.WorkflowContractException;
import org.rollout.core.DumpResult;
import org.rollout.core.GroupMerger;
import org.rollout.core.GroupOptions;
import org.rollout.core.GroupOutcome;
import org.rollout.core.TrajectoryDumper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One prompt group in flight: spawns a {@link SlotActor} per sample, waits for all of them, then
 * merges, filters, dumps and reports the group to the {@link Collector}.
 *
 * <pre>
 *   RunGroup ─► GroupActor ─spawns G─► SlotActor(0) … SlotActor(G-1)     each on a virtual thread
 *                   │ SlotDone × G
 *                   ▼
 *               [virtual thread] format check → GroupMerger → should_accept → dump
 *                   │
 *                   ▼
 *               GroupRunner.Finished (accepted or rejected with a reason), then stop
 *               (the runner keeps it until the coordinator is done with the task, and delivers it)
 * </pre>
 *
 * <p>Failure: when a slot throws, the group fails at once: every sibling slot is stopped (its
 * episode's thread is interrupted and its generation aborted on the server) and the group is
 * rejected as {@code failed} (or {@code contract} for a {@link WorkflowContractException}). AReaL
 * lets the siblings run on (§5.2); we do not waste the capacity. A group not finished within
 * {@code episode_timeout} is rejected as {@code timeout} the same way. Under {@code
 * staleness_policy = cancel} a training group whose dispatch version falls more than η behind the
 * current version is rejected as {@code stale}.
 *
 * <p>The group cache shared by the slots is released when this actor stops, whatever the outcome.
 * Exactly one {@code GroupFinished} is sent per actor, to its runner, which delivers it to the
 * collector ({@link GroupRunner}).
 *
 * <p>Messages: node-local. Slots and the runner on this node are the only senders, and the
 * messages carry episode results and exceptions that are never serialized ({@link NodeLocal}).
 */
final class GroupActor extends AbstractBehavior<GroupActor.Command> {
    /** For the blocking stage, which runs off the actor's thread and must not touch its context. */
    private static final Logger log = LoggerFactory.getLogger(GroupActor.class);

    sealed interface Command extends NodeLocal {}

    /** A slot's episode returned. */
    record SlotDone(int slot, EpisodeResult result) implements Command {}

    /** A slot's episode threw. */
    record SlotFailed(int slot, Throwable error) implements Command {}

    /** The weight version moved on. */
    record VersionChanged(int version) implements Command {}

    /** Stop the group and report it rejected. */
    record Cancel(RejectReason reason, String detail) implements Command {}

    private record TimedOut() implements Command {}

    private record Concluded(Collector.GroupFinished finished, Throwable error) implements Command {}

    private final GroupRunner.RunGroup task;
    private final NodeServices svc;
    private final GroupOptions options;
    private final ActorRef<GroupRunner.Command> runner;
    private final GroupCache groupCache = GroupCache.create();
    private final ScalarStats workflowStats = new ScalarStats();
    private final EpisodeResult[] results;
    private final List<ActorRef<SlotActor.Command>> slots = new ArrayList<>();
    private int remaining;
    private boolean reported;

    static Behavior<Command> create(GroupRunner.RunGroup task, NodeServices svc, ActorRef<GroupRunner.Command> runner) {
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> new GroupActor(ctx, timers, task, svc, runner)));
    }

    private GroupActor(
            ActorContext<Command> ctx,
            TimerScheduler<Command> timers,
            GroupRunner.RunGroup task,
            NodeServices svc,
            ActorRef<GroupRunner.Command> runner) {
        super(ctx);
        this.runner = runner;
        this.task = task;
        this.svc = svc;
        this.options = task.isEval() ? svc.evalGroup() : svc.trainGroup();
        int g = options.groupSize();
        this.results = new EpisodeResult[g];
        this.remaining = g;
        var workflow = task.isEval() ? svc.evalWorkflow() : svc.trainWorkflow();
        for (int slot = 0; slot < g; slot++) {
            WorkflowContext wctx = WorkflowContext.builder()
                    .isEval(task.isEval())
                    .taskId(task.taskId())
                    .sampleIdx(slot)
                    .groupSize(g)
                    .attempt(task.attempt())
                    .groupCache(groupCache)
                    .httpClient(svc.httpClient())
                    .stats(workflowStats)
                    .build();
            var engine = svc.engine();
            var data = task.data();
            slots.add(ctx.spawn(
                    SlotActor.create(
                            task.taskId(),
                            slot,
                            () -> WorkflowContext.callWith(wctx, () -> workflow.runEpisode(engine, data)),
                            ctx.getSelf()),
                    "slot-" + slot));
        }
        timers.startSingleTimer(new TimedOut(), svc.episodeTimeout());
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(SlotDone.class, this::onSlotDone)
                .onMessage(SlotFailed.class, this::onSlotFailed)
                .onMessage(VersionChanged.class, this::onVersionChanged)
                .onMessage(Cancel.class, c -> abandon(c.reason(), c.detail()))
                .onMessage(
                        TimedOut.class,
                        t -> abandon(
                                RejectReason.TIMEOUT, "not finished within episode_timeout=" + svc.episodeTimeout()))
                .onMessage(Concluded.class, this::onConcluded)
                .onSignal(PostStop.class, s -> onPostStop())
                .build();
    }

    private Behavior<Command> onSlotDone(SlotDone done) {
        if (reported || results[done.slot()] != null) {
            return this;
        }
        results[done.slot()] =
                done.result() == null ? EpisodeResult.rejected(GroupMerger.RETURNED_NONE) : done.result();
        if (--remaining == 0) {
            conclude();
        }
        return this;
    }

    private Behavior<Command> onSlotFailed(SlotFailed failed) {
        Throwable e = failed.error();
        RejectReason reason = e instanceof WorkflowContractException ? RejectReason.CONTRACT : RejectReason.FAILED;
        String detail = "task " + task.taskId() + " slot " + failed.slot() + " threw " + describe(e);
        if (!(e instanceof InterruptedException)) {
            getContext().getLog().warn("{}; cancelling its {} sibling slot(s)", detail, remaining - 1, e);
        }
        return abandon(reason, detail);
    }

    private Behavior<Command> onVersionChanged(VersionChanged v) {
        long behind = (long) v.version() - task.dispatchVersion();
        if (svc.stalenessPolicy() == StalenessPolicy.CANCEL && !task.isEval() && behind > svc.maxHeadOffpolicyness()) {
            return abandon(
                    RejectReason.STALE,
                    "dispatched at version " + task.dispatchVersion() + ", now " + v.version()
                            + ", beyond max_head_offpolicyness=" + svc.maxHeadOffpolicyness());
        }
        return this;
    }

    /** Stops every slot still running and reports the group rejected; the actor then stops. */
    private Behavior<Command> abandon(RejectReason reason, String detail) {
        if (reported) {
            return this;
        }
        for (ActorRef<SlotActor.Command> slot : slots) {
            getContext().stop(slot);
        }
        long tokens =
                Arrays.stream(results).mapToLong(Trajectories::generatedTokens).sum();
        report(finished(new Collector.Rejected(reason, detail), Map.of(), tokens));
        return Behaviors.stopped();
    }

    /** Runs the blocking part (merge, filter, dump) on a virtual thread and pipes the result back. */
    private void conclude() {
        List<EpisodeResult> slotResults = List.of(results);
        CompletableFuture<Collector.GroupFinished> f =
                CompletableFuture.supplyAsync(() -> decide(slotResults), svc.blocking());
        getContext().pipeToSelf(f, Concluded::new);
    }

    private Collector.GroupFinished decide(List<EpisodeResult> slotResults) {
        long tokens =
                slotResults.stream().mapToLong(Trajectories::generatedTokens).sum();
        try {
            if (svc.formatChecker() != null) {
                for (int slot = 0; slot < slotResults.size(); slot++) {
                    for (String warning : svc.formatChecker().check(task.taskId(), slot, slotResults.get(slot))) {
                        log.warn("trajectory format: {}", warning);
                    }
                }
            }
            GroupOutcome outcome = GroupMerger.merge(task.taskId(), slotResults, options);
            Map<String, Double> metrics = outcome.metrics().asMap();
            if (outcome instanceof GroupOutcome.Dropped dropped) {
                return finished(new Collector.Rejected(RejectReason.RETURNED_NONE, dropped.reason()), metrics, tokens);
            }
            GroupOutcome.Merged merged = (GroupOutcome.Merged) outcome;
            TensorDict rows = merged.rows();
            Collector.Outcome decision = accept(rows, merged);
            dump(rows);
            return finished(decision, metrics, tokens);
        } catch (WorkflowContractException e) {
            log.error("task {}: workflow contract broken: {}", task.taskId(), e.getMessage());
            return finished(new Collector.Rejected(RejectReason.CONTRACT, e.getMessage()), Map.of(), tokens);
        }
    }

    private Collector.Outcome accept(TensorDict rows, GroupOutcome.Merged merged) {
        if (!task.isEval()) {
            try {
                if (!svc.accept().accept(rows)) {
                    return new Collector.Rejected(RejectReason.REJECTED, "should_accept returned false");
                }
            } catch (Exception e) {
                return new Collector.Rejected(RejectReason.ACCEPT_ERROR, "should_accept threw " + describe(e));
            }
        }
        int[] range = Trajectories.generatedVersionRange(rows, task.dispatchVersion());
        // A server may report a newer version than this node's engine has heard of yet (the
        // broadcast is on its way): the group completed no earlier than its newest token.
        int completion = Math.max(svc.engine().version(), range[1]);
        return new Collector.Accepted(new TrainingGroup(
                task.taskId(),
                task.attempt(),
                rows,
                merged.slotIndices(),
                merged.slotRowCounts(),
                task.dispatchVersion(),
                range[0],
                range[1],
                completion));
    }

    private void dump(TensorDict rows) {
        TrajectoryDumper dumper = svc.dumper();
        if (dumper == null) {
            return;
        }
        if (dumper.dump(task.taskId(), task.isEval(), rows, svc.engine().version())
                instanceof DumpResult.Skipped skipped) {
            log.warn("task {}: trajectory not dumped: {}", task.taskId(), skipped.reason());
        }
    }

    private Collector.GroupFinished finished(Collector.Outcome outcome, Map<String, Double> metrics, long tokens) {
        return new Collector.GroupFinished(
                task.taskId(),
                task.attempt(),
                task.isEval(),
                task.dispatchVersion(),
                svc.engine().version(),
                outcome,
                metrics,
                workflowStats.totals(),
                tokens);
    }

    private Behavior<Command> onConcluded(Concluded c) {
        if (c.error() != null) {
            Throwable e = c.error().getCause() != null ? c.error().getCause() : c.error();
            getContext().getLog().error("task {}: concluding the group failed", task.taskId(), e);
            report(finished(
                    new Collector.Rejected(RejectReason.FAILED, "concluding the group failed: " + describe(e)),
                    Map.of(),
                    0));
        } else {
            report(c.finished());
        }
        return Behaviors.stopped();
    }

    private void report(Collector.GroupFinished finished) {
        if (!reported) {
            reported = true;
            runner.tell(new GroupRunner.Finished(finished));
        }
    }

    private Behavior<Command> onPostStop() {
        if (!reported) {
            // Stopped from outside (node shutdown): the coordinator re-dispatches or the run ends.
            getContext().getLog().debug("task {}: group stopped before reporting", task.taskId());
        }
        for (Exception e : groupCache.release()) {
            getContext().getLog().warn("task {}: {}", task.taskId(), e.getMessage());
        }
        return this;
    }

    /** The exception's class and message, the message cut at 500 characters (a log line, a rejection detail). */
    static String describe(Throwable e) {
        String m = e.getMessage();
        if (m != null && m.length() > 500) {
            m = m.substring(0, 500) + "… (" + m.length() + " characters)";
        }
        return e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }
}
