package org.rollout.cluster;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.Cancellable;
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
import org.rollout.config.StalenessPolicy;
import org.rollout.core.DumpResult;
import org.rollout.core.GroupMerger;
import org.rollout.core.GroupOptions;
import org.rollout.core.GroupOutcome;
import org.rollout.core.RepeatedWarnings;
import org.rollout.core.TrajectoryDumper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A group actor: the owner of one prompt group in flight at a time, a child of its node's {@link
 * GroupRunner}, which keeps its idle group actors in a pool and hands each dispatched task to one
 * of them. The group actor owns its slots, one per sample ({@link SlotLease}): each runs its
 * episode on a virtual thread of its own, and only the group cancels it. The slots record
 * their results in the group's shared state ({@link Run}); the slot whose episode returns last
 * merges, filters and dumps the group on its own thread (the merge and the dump may be slow: they
 * never run on a dispatcher thread) and reports the outcome to the group actor in one message,
 * {@link Concluded}; a slot that throws reports {@link SlotFailed} at once. The group actor reports
 * the outcome to the runner ({@link GroupRunner.Ended}), which delivers it to the {@link Collector}
 * and returns the group actor to its pool.
 *
 * <pre>
 *   RunGroup ─► GroupRunner ─ Start ─► group actor (pooled): episode_timeout timer, signals, the one outcome
 *                 │  ▲                   ▲
 *                 │  │                   └── Concluded (one per group) | SlotFailed ──┐
 *                 │  └──── Ended (one per group) ──┘                                  │ the last to return:
 *                 └─ builds G slot leases ─► virtual thread per slot: runEpisode ────────┘ format check → GroupMerger
 *                 │                                                                  → should_accept → dump
 *                 ▼
 *               outbox → Collector (accepted or rejected with a reason)
 * </pre>
 *
 * <p>The runner prepares a group ({@link #prepare}: builds its slots' episodes), tells
 * the idle group actor {@link Start}, then starts the episodes' threads, so that the episodes do not
 * wait for the group actor's turn and nothing a slot reports can reach the actor before the run
 * does. Every message about a group carries its {@link Run}; a group actor ignores one about a run
 * it no longer owns (a report that comes after the group ended).
 *
 * <p>Signals: the runner tells the group {@link Abandon} (the coordinator cancelled it) and, under
 * {@code staleness_policy = cancel}, {@link VersionChanged}; the group actor owns the run's {@code
 * episode_timeout} timer. A group ends exactly once: its actor reports one {@link
 * GroupRunner.Ended}, cancels each slot whose episode still runs (it interrupts the episode's
 * thread, and the engine then aborts the generation on the server), and goes back to idle.
 *
 * <p>Failure: when a slot throws, the group fails at once: its siblings are cancelled (their
 * generations aborted) and it is rejected as {@code failed} (or {@code contract} for a {@link
 * WorkflowContractException}). AReaL lets the siblings run on (§5.2); we do not waste the capacity.
 * A group not finished within {@code episode_timeout} is rejected as {@code timeout} the same way,
 * and under {@code staleness_policy = cancel} a training group whose dispatch version falls more
 * than η behind the current version as {@code stale}. A workflow that ignores interruption keeps its
 * thread (and its slot) until it returns, but its result goes nowhere. A group actor's supervision
 * is stop (applied by the runner where it spawns it): one that throws reports its group {@code
 * failed} as it stops ({@link PostStop}), cancels the group's slots and is not reused, so its task
 * still ends once and the node carries on.
 *
 * <p>Exactly once: a slot's result reaches the group only if its lease was not cancelled first
 * ({@link SlotLease}); results that come after the group ended are dropped, and only the slot that
 * records the last result concludes (the others see the count not yet at zero, or the group
 * failed or ended).
 *
 * <p>The group cache shared by the slots is released when the group ends, whatever the outcome, and
 * when its actor is stopped without one (the runner stopped: the coordinator re-dispatches the task).
 *
 * <p>Cost per group: G slot leases (an object each), G virtual threads and three
 * messages (Start, Concluded, Ended) besides the timer; no actor is spawned or stopped, and nothing
 * per slot is piped, watched or sent through an executor. Group actors run on their
 * runner's dispatcher ({@link GroupRunner#DISPATCHER}, one thread), so Start and Ended are queue
 * operations on a thread that is running anyway (benchmarks/RESULTS.md, section 1b).
 */
final class GroupRun extends AbstractBehavior<GroupRun.Command> {
    private static final Logger log = LoggerFactory.getLogger(GroupRun.class);
    /** A workflow that fails every group would log a stack trace per slot: a few per minute per kind. */
    private static final RepeatedWarnings SLOT_FAILURES = new RepeatedWarnings(5, Duration.ofSeconds(60));

    sealed interface Command {}

    /** Own {@code run} from now until it ends; from the runner, before the run's episodes start. */
    record Start(Run run) implements Command, NodeLocal {}

    /** Slot {@code slot}'s episode threw; from the slot's thread, the first of the group's slots to throw. */
    record SlotFailed(Run run, int slot, Throwable error) implements Command, NodeLocal {}

    /** Every slot returned: the group's outcome (or what concluding it threw: {@code error}); from the last slot's thread. */
    record Concluded(Run run, Collector.GroupFinished finished, Throwable error) implements Command, NodeLocal {}

    /** End {@code run} now as rejected for {@code reason} (from the runner: the coordinator cancelled it). */
    record Abandon(Run run, RejectReason reason, String detail) implements Command, NodeLocal {}

    /** The weight version moved on (from the runner, under {@code staleness_policy = cancel}). */
    record VersionChanged(int version) implements Command, NodeLocal {}

    /** {@code run}'s episode_timeout expired. */
    private record EpisodeTimeout(Run run) implements Command, NodeLocal {}

    private final NodeServices svc;
    private final ActorRef<GroupRunner.Command> runner;
    private final ActorRef<Command> self;
    /** The group this actor owns now; null while idle. */
    private Run current;

    /** The behaviour of a group actor on a node with {@code svc}, reporting to {@code runner}. */
    static Behavior<Command> create(NodeServices svc, ActorRef<GroupRunner.Command> runner) {
        return Behaviors.setup(ctx -> new GroupRun(ctx, svc, runner));
    }

    private GroupRun(ActorContext<Command> ctx, NodeServices svc, ActorRef<GroupRunner.Command> runner) {
        super(ctx);
        this.svc = svc;
        this.runner = runner;
        this.self = ctx.getSelf();
    }

    /**
     * Task {@code task}'s group, to be owned by the group actor {@code group}: its slots' episodes
     * built but not started ({@link Run#startEpisodes}); on the runner's thread.
     */
    static Run prepare(String name, GroupRunner.RunGroup task, NodeServices svc, ActorRef<Command> group) {
        return new Run(name, task, svc, group);
    }

    /**
     * One prompt group: its task, its slots' episodes and what they share. Built on the runner's
     * thread; then read and written by its group actor and its slots' threads as each field says.
     */
    static final class Run {
        final GroupRunner.RunGroup task;
        final String name;
        private final NodeServices svc;
        private final GroupOptions options;
        private final ActorRef<Command> group;
        private final GroupCache groupCache = GroupCache.create();
        private final ScalarStats workflowStats = new ScalarStats();
        private final Episode[] episodes;
        /** Written by the slot threads; read by the one that concludes (after the count's decrement). */
        private final EpisodeResult[] results;

        private final AtomicInteger remaining;
        private final AtomicBoolean failed = new AtomicBoolean();
        /** The group actor's. */
        private Cancellable timeout;
        /** Set when the group ended; the slot threads read it to drop what comes too late. */
        private volatile boolean ended;

        private Run(String name, GroupRunner.RunGroup task, NodeServices svc, ActorRef<Command> group) {
            this.name = name;
            this.task = task;
            this.svc = svc;
            this.group = group;
            this.options = task.isEval() ? svc.evalGroup() : svc.trainGroup();
            int g = options.groupSize();
            this.results = new EpisodeResult[g];
            this.remaining = new AtomicInteger(g);
            this.episodes = new Episode[g];
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
                episodes[slot] = new Episode(
                        slot, () -> WorkflowContext.callWith(wctx, () -> workflow.runEpisode(engine, data)));
            }
        }

        /** Starts the slots' episodes; on the runner's thread, once the group actor was told {@link Start}. */
        void startEpisodes() {
            for (Episode e : episodes) {
                e.start();
            }
        }

        /** Slot {@code slot}'s lease in this group: its episode, and what happens on its thread when it ends. */
        private final class Episode extends SlotLease {
            private final int slot;
            private final Callable<EpisodeResult> episode;

            Episode(int slot, Callable<EpisodeResult> episode) {
                super("slot-" + task.taskId() + "-" + slot);
                this.slot = slot;
                this.episode = episode;
            }

            @Override
            EpisodeResult episode() throws Exception {
                return episode.call();
            }

            /** On the slot's thread: records the result; the last slot concludes the group. */
            @Override
            void returned(EpisodeResult result, Throwable error) {
                if (error != null) {
                    if (!ended && failed.compareAndSet(false, true)) {
                        group.tell(new SlotFailed(Run.this, slot, error));
                    }
                    return;
                }
                if (ended || failed.get()) {
                    return;
                }
                results[slot] = result == null ? EpisodeResult.rejected(GroupMerger.RETURNED_NONE) : result;
                if (remaining.decrementAndGet() > 0 || ended) {
                    return;
                }
                // The last slot (the decrement publishes every slot's result to it). Its lease is
                // returned, so nothing interrupts it now; an interrupt seen here came from the
                // workflow itself: cleared, so that the dump's I/O is not cut short.
                Thread.interrupted();
                Command concluded;
                try {
                    concluded = new Concluded(Run.this, decide(List.of(results)), null);
                } catch (Throwable t) {
                    concluded = new Concluded(Run.this, null, t);
                }
                if (!ended) {
                    group.tell(concluded);
                }
            }
        }

        /**
         * The group ends (on its actor): later results are dropped, the timer is cancelled, every
         * slot whose episode still runs is cancelled ({@link SlotLease#interrupt}: the engine then
         * aborts its generation on the server), and the group cache is released (on a virtual
         * thread of its own when it holds values).
         */
        private void close() {
            ended = true;
            if (timeout != null) {
                timeout.cancel();
            }
            for (Episode e : episodes) {
                e.interrupt();
            }
            if (groupCache.size() == 0) {
                releaseCache();
            } else {
                // Closing the values is the workflow's code and may block (a sandbox, a
                // connection): not on the runner's dispatcher thread, which every group of the
                // node shares.
                Thread.ofVirtual().name("release-" + task.taskId()).start(this::releaseCache);
            }
        }

        private void releaseCache() {
            for (Exception e : groupCache.release()) {
                log.warn("task {}: {}", task.taskId(), e.getMessage());
            }
        }

        /**
         * The group's actor stopped before the group ended (its runner stopped, or the actor threw):
         * closes the group, interrupting its running episodes, and returns its outcome, {@code
         * failed}. Built without the engine
         * (what threw may be the engine): the dispatch version stands in for the completion version
         * of a group that completed nothing.
         */
        Collector.GroupFinished stopped() {
            close();
            log.debug("task {}: group stopped before reporting", task.taskId());
            return new Collector.GroupFinished(
                    task.taskId(),
                    task.attempt(),
                    task.isEval(),
                    task.dispatchVersion(),
                    task.dispatchVersion(),
                    new Collector.Rejected(RejectReason.FAILED, "the group's actor stopped before it ended"),
                    Map.of(),
                    workflowStats.totals(),
                    0);
        }

        /** How many slots' episodes are still running. */
        private int running() {
            int n = 0;
            for (Episode e : episodes) {
                n += e.running() ? 1 : 0;
            }
            return n;
        }

        /** Tokens generated by the slots that returned. */
        private long returnedTokens() {
            long tokens = 0;
            for (EpisodeResult r : results) {
                tokens += Trajectories.generatedTokens(r);
            }
            return tokens;
        }

        /** On the last slot's thread: format check, merge, should_accept, dump. */
        private Collector.GroupFinished decide(List<EpisodeResult> slotResults) {
            long tokens = slotResults.stream()
                    .mapToLong(Trajectories::generatedTokens)
                    .sum();
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
                    return finished(
                            new Collector.Rejected(RejectReason.RETURNED_NONE, dropped.reason()), metrics, tokens);
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
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Start.class, this::onStart)
                .onMessage(Concluded.class, this::onConcluded)
                .onMessage(SlotFailed.class, this::onSlotFailed)
                .onMessage(Abandon.class, a -> a.run() == current ? abandon(a.reason(), a.detail()) : this)
                .onMessage(VersionChanged.class, this::onVersionChanged)
                .onMessage(
                        EpisodeTimeout.class,
                        t -> t.run() == current
                                ? abandon(
                                        RejectReason.TIMEOUT,
                                        "not finished within episode_timeout=" + svc.episodeTimeout())
                                : this)
                .onSignal(PostStop.class, s -> onPostStop())
                .build();
    }

    private Behavior<Command> onStart(Start s) {
        if (current != null) {
            // The runner hands a group only to an idle actor: this is a bug, and the run is lost
            // unless it is ended here.
            log.error("task {}: group actor busy with task {}", s.run().task.taskId(), current.task.taskId());
            Run run = s.run();
            run.close();
            runner.tell(new GroupRunner.Ended(
                    run.name,
                    run.finished(new Collector.Rejected(RejectReason.FAILED, "group actor busy"), Map.of(), 0),
                    false));
            return this;
        }
        current = s.run();
        current.timeout = getContext().scheduleOnce(svc.episodeTimeout(), self, new EpisodeTimeout(current));
        return this;
    }

    private Behavior<Command> onConcluded(Concluded d) {
        if (d.run() != current) {
            return this;
        }
        if (d.error() != null) {
            log.error("task {}: concluding the group failed", current.task.taskId(), d.error());
            return end(current.finished(
                    new Collector.Rejected(RejectReason.FAILED, "concluding the group failed: " + describe(d.error())),
                    Map.of(),
                    0));
        }
        return end(d.finished());
    }

    /** A slot threw: the group is rejected and its siblings cancelled. */
    private Behavior<Command> onSlotFailed(SlotFailed f) {
        if (f.run() != current) {
            return this;
        }
        Throwable e = f.error();
        RejectReason reason = e instanceof WorkflowContractException ? RejectReason.CONTRACT : RejectReason.FAILED;
        String detail = "task " + current.task.taskId() + " slot " + f.slot() + " threw " + describe(e);
        if (!(e instanceof InterruptedException)) {
            SLOT_FAILURES.warn(
                    log,
                    RepeatedWarnings.kindOf(e),
                    () -> "{}; cancelling its {} sibling slot(s)",
                    detail,
                    current.running(),
                    e);
        }
        return abandon(reason, detail);
    }

    /** The weight version moved on: under the cancel policy a group left too far behind is rejected as stale. */
    private Behavior<Command> onVersionChanged(VersionChanged v) {
        if (current == null) {
            return this;
        }
        GroupRunner.RunGroup task = current.task;
        long behind = (long) v.version() - task.dispatchVersion();
        if (svc.stalenessPolicy() == StalenessPolicy.CANCEL && !task.isEval() && behind > svc.maxHeadOffpolicyness()) {
            return abandon(
                    RejectReason.STALE,
                    "dispatched at version " + task.dispatchVersion() + ", now " + v.version()
                            + ", beyond max_head_offpolicyness=" + svc.maxHeadOffpolicyness());
        }
        return this;
    }

    /** Ends the group as rejected; its slots still running are cancelled (their generations aborted). */
    private Behavior<Command> abandon(RejectReason reason, String detail) {
        return end(current.finished(new Collector.Rejected(reason, detail), Map.of(), current.returnedTokens()));
    }

    /** Reports the group's one outcome to the runner, cancels the slots still running, and goes idle. */
    private Behavior<Command> end(Collector.GroupFinished outcome) {
        Run run = current;
        current = null;
        run.close();
        runner.tell(new GroupRunner.Ended(run.name, outcome, true));
        return this;
    }

    /**
     * Stopped while owning a group: the runner stopped (node shutdown: the group ends without an
     * outcome, the coordinator re-dispatches its task; its slots' episodes
     * are interrupted), or this actor threw (supervision: stop) and the group is reported {@code failed};
     * a runner that is stopping drops the report. Either way this actor is not reused. (An actor
     * that stops while idle owns nothing; its runner watches it and stops handing it groups.)
     */
    private Behavior<Command> onPostStop() {
        Run run = current;
        if (run != null) {
            current = null;
            runner.tell(new GroupRunner.Ended(run.name, run.stopped(), false));
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
