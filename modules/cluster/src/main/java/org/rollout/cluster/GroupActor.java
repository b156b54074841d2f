package org.rollout.cluster;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
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
 * One prompt group in flight: runs a slot per sample on its own virtual thread, and the slot that
 * returns last merges, filters and dumps the group on that same thread before the group reports to
 * its runner, which delivers it to the {@link Collector}.
 *
 * <pre>
 *   RunGroup ─► GroupActor ─starts G─► slot thread 0 … slot thread G-1     runEpisode each
 *                   ▲                        │ the last to return, on its own thread:
 *                   │                        │ format check → GroupMerger → should_accept → dump
 *                   └──── Concluded ─────────┘ (one message per group; SlotFailed at the first throw)
 *                   │
 *                   ▼
 *               GroupRunner.Finished (accepted or rejected with a reason), then stop
 *               (the runner keeps it until the coordinator is done with the task, and delivers it)
 * </pre>
 *
 * <p>The slots are plain virtual threads owned by this actor, not actors: a group costs one actor,
 * G thread starts and one message back, whatever G is (benchmarks/RESULTS.md, section 1).
 *
 * <p>Failure: when a slot throws, the group fails at once: every sibling slot still running is
 * interrupted (the engine then aborts its generation on the server) and the group is rejected as
 * {@code failed} (or {@code contract} for a {@link WorkflowContractException}). AReaL lets the
 * siblings run on (§5.2); we do not waste the capacity. A group not finished within {@code
 * episode_timeout} is cancelled by its runner (one timer per runner) and rejected as {@code
 * timeout} the same way. Under {@code staleness_policy = cancel} a training group whose dispatch
 * version falls more than η behind the current version is rejected as {@code stale}. A workflow
 * that ignores interruption keeps its thread until it returns, but its result goes nowhere.
 *
 * <p>The group cache shared by the slots is released when this actor stops, whatever the outcome.
 * Exactly one {@code GroupFinished} is sent per actor, to its runner, which delivers it to the
 * collector ({@link GroupRunner}).
 *
 * <p>Messages: node-local. Slot threads and the runner on this node are the only senders, and the
 * messages carry episode results and exceptions that are never serialized ({@link NodeLocal}).
 */
final class GroupActor extends AbstractBehavior<GroupActor.Command> {
    /** For the blocking stage, which runs off the actor's thread and must not touch its context. */
    private static final Logger log = LoggerFactory.getLogger(GroupActor.class);

    sealed interface Command extends NodeLocal {}

    /** A slot's episode threw (the first slot to throw; the others are then interrupted). */
    private record SlotFailed(int slot, Throwable error) implements Command {}

    /** The weight version moved on. */
    record VersionChanged(int version) implements Command {}

    /** Stop the group and report it rejected. */
    record Cancel(RejectReason reason, String detail) implements Command {}

    /** Every slot returned; the last one concluded the group on its thread (or that failed: error). */
    private record Concluded(Collector.GroupFinished finished, Throwable error) implements Command {}

    private final GroupRunner.RunGroup task;
    private final NodeServices svc;
    private final GroupOptions options;
    private final ActorRef<GroupRunner.Command> runner;
    private final GroupCache groupCache = GroupCache.create();
    private final ScalarStats workflowStats = new ScalarStats();
    private final Slots slots;
    private boolean reported;

    static Behavior<Command> create(GroupRunner.RunGroup task, NodeServices svc, ActorRef<GroupRunner.Command> runner) {
        return Behaviors.setup(ctx -> new GroupActor(ctx, task, svc, runner));
    }

    private GroupActor(
            ActorContext<Command> ctx,
            GroupRunner.RunGroup task,
            NodeServices svc,
            ActorRef<GroupRunner.Command> runner) {
        super(ctx);
        this.runner = runner;
        this.task = task;
        this.svc = svc;
        this.options = task.isEval() ? svc.evalGroup() : svc.trainGroup();
        int g = options.groupSize();
        this.slots = new Slots(g, ctx.getSelf());
        var workflow = task.isEval() ? svc.evalWorkflow() : svc.trainWorkflow();
        var engine = svc.engine();
        var data = task.data();
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
            int index = slot;
            slots.start(
                    slot,
                    Thread.ofVirtual()
                            .name("slot-" + task.taskId() + "-" + slot)
                            .unstarted(() -> slots.run(
                                    index,
                                    () -> WorkflowContext.callWith(wctx, () -> workflow.runEpisode(engine, data)),
                                    this::decide)));
        }
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(SlotFailed.class, this::onSlotFailed)
                .onMessage(VersionChanged.class, this::onVersionChanged)
                .onMessage(Cancel.class, c -> abandon(c.reason(), c.detail()))
                .onMessage(Concluded.class, this::onConcluded)
                .onSignal(PostStop.class, s -> onPostStop())
                .build();
    }

    private Behavior<Command> onSlotFailed(SlotFailed failed) {
        Throwable e = failed.error();
        RejectReason reason = e instanceof WorkflowContractException ? RejectReason.CONTRACT : RejectReason.FAILED;
        String detail = "task " + task.taskId() + " slot " + failed.slot() + " threw " + describe(e);
        if (!(e instanceof InterruptedException)) {
            getContext().getLog().warn("{}; cancelling its {} sibling slot(s)", detail, slots.running(), e);
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

    /** Interrupts every slot still running and reports the group rejected; the actor then stops. */
    private Behavior<Command> abandon(RejectReason reason, String detail) {
        if (reported) {
            return this;
        }
        EpisodeResult[] returned = slots.close();
        long tokens =
                Arrays.stream(returned).mapToLong(Trajectories::generatedTokens).sum();
        report(finished(new Collector.Rejected(reason, detail), Map.of(), tokens));
        return Behaviors.stopped();
    }

    /**
     * The slots of one group: their threads and results, shared between the slot threads and the
     * actor, without locks (a monitor that a slot thread waits on can cost milliseconds to hand
     * over). A slot thread marks its episode returned, then (unless the group was closed or a
     * sibling failed) records its result; the one that records the last result concludes the group.
     * The actor closes the slots when it abandons the group: later results are dropped and only
     * slots whose episode has not returned are interrupted. Both sides write their flag before
     * reading the other's (volatile), so either the actor sees a slot returned and leaves it alone,
     * or the slot sees the group closed and drops its result: the thread that concludes is never
     * interrupted mid-dump.
     */
    private static final class Slots {
        private static final int RUNNING = 0;
        private static final int RETURNED = 1;

        private final Thread[] threads;
        private final EpisodeResult[] results;
        private final AtomicIntegerArray state;
        private final AtomicInteger remaining;
        private final AtomicBoolean failed = new AtomicBoolean();
        private final ActorRef<Command> group;
        private volatile boolean closed;

        Slots(int g, ActorRef<Command> group) {
            this.threads = new Thread[g];
            this.results = new EpisodeResult[g];
            this.state = new AtomicIntegerArray(g);
            this.remaining = new AtomicInteger(g);
            this.group = group;
        }

        /** Starts {@code thread} as slot {@code slot}; called by the actor while it is being set up. */
        void start(int slot, Thread thread) {
            threads[slot] = thread;
            thread.start();
        }

        /** On slot {@code slot}'s thread: runs the episode, records it, and concludes when it is the last. */
        void run(
                int slot,
                Callable<EpisodeResult> episode,
                Function<List<EpisodeResult>, Collector.GroupFinished> conclude) {
            EpisodeResult result;
            try {
                result = episode.call();
            } catch (Throwable t) {
                state.set(slot, RETURNED);
                if (!closed && failed.compareAndSet(false, true)) {
                    group.tell(new SlotFailed(slot, t));
                }
                return;
            }
            state.set(slot, RETURNED);
            if (closed || failed.get()) {
                return;
            }
            results[slot] = result == null ? EpisodeResult.rejected(GroupMerger.RETURNED_NONE) : result;
            if (remaining.decrementAndGet() > 0) {
                return;
            }
            if (closed) {
                return;
            }
            // The last slot (the decrement publishes every slot's result to it). An interrupt seen
            // now came before this episode returned: clear it so the dump's I/O is not cut short.
            Thread.interrupted();
            Collector.GroupFinished finished;
            try {
                finished = conclude.apply(List.of(results));
            } catch (Throwable t) {
                group.tell(new Concluded(null, t));
                return;
            }
            group.tell(new Concluded(finished, null));
        }

        /** How many slots' episodes are still running. */
        int running() {
            int n = 0;
            for (int i = 0; i < state.length(); i++) {
                n += state.get(i) == RUNNING ? 1 : 0;
            }
            return n;
        }

        /**
         * Drops every later result and interrupts the slots whose episode is still running (the
         * engine aborts their generation); returns the results recorded so far (null for the others).
         */
        EpisodeResult[] close() {
            closed = true;
            for (int i = 0; i < threads.length; i++) {
                if (state.get(i) == RUNNING && threads[i] != null) {
                    threads[i].interrupt();
                }
            }
            return results.clone();
        }
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
            Throwable e = c.error();
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
            slots.close();
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
