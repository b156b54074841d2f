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
 * One prompt group in flight, owned by its node's {@link GroupRunner}: a slot per sample on its own
 * virtual thread, and the slot that returns last merges, filters and dumps the group on that same
 * thread, then hands the outcome to the runner, which delivers it to the {@link Collector}.
 *
 * <pre>
 *   RunGroup ─► GroupRunner ─starts─► GroupRun ─G virtual threads─► runEpisode × G
 *                   ▲                                   │ the last to return, on its own thread:
 *                   │                                   │ format check → GroupMerger → should_accept → dump
 *                   └────────── Concluded ──────────────┘ (one message per group; SlotFailed at the first throw)
 *                   │
 *                   ▼
 *               outbox → Collector (accepted or rejected with a reason)
 * </pre>
 *
 * <p>Why not an actor per group (or per slot): a group is short-lived work whose only inputs after
 * its start are its slots' outcomes and a few rare signals (cancel, version change, timeout), all of
 * which the runner receives anyway. Spawning, watching and stopping an actor per group and one per
 * slot cost more than the work of a small group (benchmarks/RESULTS.md, section 1); as a plain object
 * confined to the runner's thread, a group costs G thread starts and one message back.
 *
 * <p>Threading: every method but the slot threads' {@link Slots#run} is called on the runner's
 * thread. The slot threads share only {@link Slots}, which needs no lock.
 *
 * <p>Failure: when a slot throws, the group fails at once: every sibling slot still running is
 * interrupted (the engine then aborts its generation on the server) and the group is rejected as
 * {@code failed} (or {@code contract} for a {@link WorkflowContractException}). AReaL lets the
 * siblings run on (§5.2); we do not waste the capacity. A group not finished within {@code
 * episode_timeout} is abandoned by its runner (one timer per runner) as {@code timeout} the same
 * way. Under {@code staleness_policy = cancel} a training group whose dispatch version falls more
 * than η behind the current version is rejected as {@code stale}. A workflow that ignores
 * interruption keeps its thread until it returns, but its result goes nowhere.
 *
 * <p>Exactly one outcome per group: every method that ends the group returns it once and null
 * afterwards. The group cache shared by the slots is released when the group ends, whatever the
 * outcome, and when the runner stops.
 */
final class GroupRun {
    private static final Logger log = LoggerFactory.getLogger(GroupRun.class);

    final GroupRunner.RunGroup task;
    final String name;
    private final NodeServices svc;
    private final GroupOptions options;
    private final GroupCache groupCache = GroupCache.create();
    private final ScalarStats workflowStats = new ScalarStats();
    private final Slots slots;
    private boolean ended;

    private GroupRun(String name, GroupRunner.RunGroup task, NodeServices svc, ActorRef<GroupRunner.Command> runner) {
        this.name = name;
        this.task = task;
        this.svc = svc;
        this.options = task.isEval() ? svc.evalGroup() : svc.trainGroup();
        this.slots = new Slots(options.groupSize(), runner);
    }

    /** Starts the group's slots; their outcome comes back to {@code runner}. */
    static GroupRun start(
            String name, GroupRunner.RunGroup task, NodeServices svc, ActorRef<GroupRunner.Command> runner) {
        GroupRun run = new GroupRun(name, task, svc, runner);
        run.startSlots();
        return run;
    }

    private void startSlots() {
        int g = options.groupSize();
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
                    this,
                    slot,
                    Thread.ofVirtual()
                            .name("slot-" + task.taskId() + "-" + slot)
                            .unstarted(() -> slots.run(
                                    index,
                                    () -> WorkflowContext.callWith(wctx, () -> workflow.runEpisode(engine, data)),
                                    this::decide)));
        }
    }

    /** A slot threw: the group is rejected and its siblings interrupted. */
    Collector.GroupFinished onSlotFailed(int slot, Throwable e) {
        if (ended) {
            return null;
        }
        RejectReason reason = e instanceof WorkflowContractException ? RejectReason.CONTRACT : RejectReason.FAILED;
        String detail = "task " + task.taskId() + " slot " + slot + " threw " + describe(e);
        if (!(e instanceof InterruptedException)) {
            log.warn("{}; cancelling its {} sibling slot(s)", detail, slots.running(), e);
        }
        return abandon(reason, detail);
    }

    /** The weight version moved on: under the cancel policy a group left too far behind is rejected as stale. */
    Collector.GroupFinished onVersionChanged(int version) {
        long behind = (long) version - task.dispatchVersion();
        if (svc.stalenessPolicy() == StalenessPolicy.CANCEL && !task.isEval() && behind > svc.maxHeadOffpolicyness()) {
            return abandon(
                    RejectReason.STALE,
                    "dispatched at version " + task.dispatchVersion() + ", now " + version
                            + ", beyond max_head_offpolicyness=" + svc.maxHeadOffpolicyness());
        }
        return null;
    }

    /** Interrupts every slot still running and returns the group's rejection (null when it already ended). */
    Collector.GroupFinished abandon(RejectReason reason, String detail) {
        if (ended) {
            return null;
        }
        EpisodeResult[] returned = slots.close();
        long tokens =
                Arrays.stream(returned).mapToLong(Trajectories::generatedTokens).sum();
        return end(finished(new Collector.Rejected(reason, detail), Map.of(), tokens));
    }

    /** The last slot concluded the group (or concluding it threw): its outcome, null when it already ended. */
    Collector.GroupFinished onConcluded(Collector.GroupFinished finished, Throwable error) {
        if (ended) {
            return null;
        }
        if (error != null) {
            log.error("task {}: concluding the group failed", task.taskId(), error);
            return end(finished(
                    new Collector.Rejected(RejectReason.FAILED, "concluding the group failed: " + describe(error)),
                    Map.of(),
                    0));
        }
        return end(finished);
    }

    /** The runner is stopping (node shutdown): the group ends without an outcome; the coordinator re-dispatches. */
    void stop() {
        if (!ended) {
            log.debug("task {}: group stopped before reporting", task.taskId());
            slots.close();
            end(null);
        }
    }

    private Collector.GroupFinished end(Collector.GroupFinished outcome) {
        ended = true;
        for (Exception e : groupCache.release()) {
            log.warn("task {}: {}", task.taskId(), e.getMessage());
        }
        return outcome;
    }

    /**
     * The slots of one group: their threads and results, shared between the slot threads and the
     * runner, without locks (a monitor that a slot thread waits on can cost milliseconds to hand
     * over). A slot thread marks its episode returned, then (unless the group was closed or a
     * sibling failed) records its result; the one that records the last result concludes the group.
     * The runner closes the slots when it abandons the group: later results are dropped and only
     * slots whose episode has not returned are interrupted. Both sides write their flag before
     * reading the other's (volatile), so either the runner sees a slot returned and leaves it alone,
     * or the slot sees the group closed and drops its result: the thread that concludes is never
     * interrupted mid-dump.
     */
    static final class Slots {
        private static final int RUNNING = 0;
        private static final int RETURNED = 1;

        private final Thread[] threads;
        private final EpisodeResult[] results;
        private final AtomicIntegerArray state;
        private final AtomicInteger remaining;
        private final AtomicBoolean failed = new AtomicBoolean();
        private final ActorRef<GroupRunner.Command> runner;
        private GroupRun run;
        private volatile boolean closed;

        Slots(int g, ActorRef<GroupRunner.Command> runner) {
            this.threads = new Thread[g];
            this.results = new EpisodeResult[g];
            this.state = new AtomicIntegerArray(g);
            this.remaining = new AtomicInteger(g);
            this.runner = runner;
        }

        /** Starts {@code thread} as slot {@code slot}; called on the runner's thread while {@code run} is set up. */
        void start(GroupRun run, int slot, Thread thread) {
            this.run = run;
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
                    runner.tell(new GroupRunner.SlotFailed(run, slot, t));
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
                runner.tell(new GroupRunner.Concluded(run, null, t));
                return;
            }
            runner.tell(new GroupRunner.Concluded(run, finished, null));
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

    /** On the last slot's thread: format check, merge, should_accept, dump. */
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

    /** The exception's class and message, the message cut at 500 characters (a log line, a rejection detail). */
    static String describe(Throwable e) {
        String m = e.getMessage();
        if (m != null && m.length() > 500) {
            m = m.substring(0, 500) + "… (" + m.length() + " characters)";
        }
        return e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }
}
