package org.rollout.cluster;

import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.ExtensibleBehavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Signal;
import org.apache.pekko.actor.typed.TypedActorContext;
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
import org.rollout.config.StalenessPolicy;
import org.rollout.core.DumpResult;
import org.rollout.core.GroupMerger;
import org.rollout.core.GroupOptions;
import org.rollout.core.GroupOutcome;
import org.rollout.core.TrajectoryDumper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The actor of one prompt group in flight, a child of its node's {@link GroupRunner}. Its children
 * are one slot actor per sample ({@link Slot}); each slot actor owns the virtual thread that runs
 * its episode and reports the result to the group as a message. When every slot is in, the group
 * merges, filters and dumps on a virtual thread of its own (the merge and the dump may be slow: they
 * never run on a dispatcher thread) and reports the outcome to the runner, which delivers it to the
 * {@link Collector}.
 *
 * <pre>
 *   RunGroup ─► GroupRunner ─spawns─► GroupRun ─spawns G─► slot actor ─owns─► virtual thread: runEpisode
 *                   ▲                   │  ▲                                         │
 *                   │                   │  └──────────── SlotReturned | SlotFailed ──┘
 *                   │                   └─ all in: merge thread (format check → GroupMerger → should_accept → dump) ─► Decided
 *                   └──────── Ended (one per group) ────┘
 *                   │
 *                   ▼
 *               outbox → Collector (accepted or rejected with a reason)
 * </pre>
 *
 * <p>Signals: the runner tells the group {@link Abandon} (the coordinator cancelled it) and, under
 * {@code staleness_policy = cancel}, {@link VersionChanged}; the group owns its {@code
 * episode_timeout} timer. A group ends exactly once: it reports one {@link GroupRunner.Ended} and
 * stops, which stops its slot actors; a slot actor stopped while its episode runs interrupts its
 * thread, and the engine then aborts the generation on the server.
 *
 * <p>Failure: when a slot throws, the group fails at once: its siblings are stopped (their
 * generations aborted) and it is rejected as {@code failed} (or {@code contract} for a {@link
 * WorkflowContractException}). AReaL lets the siblings run on (§5.2); we do not waste the capacity.
 * A group not finished within {@code episode_timeout} is rejected as {@code timeout} the same way,
 * and under {@code staleness_policy = cancel} a training group whose dispatch version falls more
 * than η behind the current version as {@code stale}. A workflow that ignores interruption keeps its
 * thread until it returns, but its result goes nowhere. The group's own supervision is stop (applied
 * by the runner where it spawns it): a group whose actor throws reports itself {@code failed} as it
 * stops ({@link PostStop}), so its task still ends once and the node carries on.
 *
 * <p>The group cache shared by the slots is released when the group ends, whatever the outcome, and
 * when the group is stopped without one (its runner stopped: the coordinator re-dispatches the task).
 *
 * <p>Cost: a group is G + 1 actors spawned and stopped and G + 2 messages besides its G + 1 virtual
 * threads; nothing per slot is piped, watched or sent through an executor. Against an engine that
 * answers at once that is what limits the pipeline (spawning and stopping the actors; see
 * benchmarks/RESULTS.md, section 1b); against model servers it does not show.
 */
final class GroupRun extends AbstractBehavior<GroupRun.Command> {
    private static final Logger log = LoggerFactory.getLogger(GroupRun.class);

    sealed interface Command {}

    /** Slot {@code slot}'s episode returned {@code result} (null when it returned none); from the slot's thread. */
    record SlotReturned(int slot, EpisodeResult result) implements Command, NodeLocal {}

    /** Slot {@code slot}'s episode threw; from the slot's thread. */
    record SlotFailed(int slot, Throwable error) implements Command, NodeLocal {}

    /** The merge thread's outcome (or what it threw: {@code error}). */
    record Decided(Collector.GroupFinished finished, Throwable error) implements Command, NodeLocal {}

    /** End the group now as rejected for {@code reason} (from the runner: the coordinator cancelled it). */
    record Abandon(RejectReason reason, String detail) implements Command, NodeLocal {}

    /** The weight version moved on (from the runner, under {@code staleness_policy = cancel}). */
    record VersionChanged(int version) implements Command, NodeLocal {}

    private enum EpisodeTimeout implements Command {
        INSTANCE
    }

    final GroupRunner.RunGroup task;
    final String name;
    private final NodeServices svc;
    private final GroupOptions options;
    private final ActorRef<GroupRunner.Command> runner;
    private final GroupCache groupCache = GroupCache.create();
    private final ScalarStats workflowStats = new ScalarStats();
    private final EpisodeResult[] results;
    private int remaining;
    /** Set when the group ended; the slot and merge threads read it to drop what comes too late. */
    private volatile boolean ended;

    /** The behaviour of task {@code task}'s group, reporting to {@code runner} as {@code name}. */
    static Behavior<Command> create(
            String name, GroupRunner.RunGroup task, NodeServices svc, ActorRef<GroupRunner.Command> runner) {
        return Behaviors.setup(
                ctx -> Behaviors.withTimers(timers -> new GroupRun(ctx, timers, name, task, svc, runner)));
    }

    private GroupRun(
            ActorContext<Command> ctx,
            TimerScheduler<Command> timers,
            String name,
            GroupRunner.RunGroup task,
            NodeServices svc,
            ActorRef<GroupRunner.Command> runner) {
        super(ctx);
        this.name = name;
        this.task = task;
        this.svc = svc;
        this.runner = runner;
        this.options = task.isEval() ? svc.evalGroup() : svc.trainGroup();
        int g = options.groupSize();
        this.results = new EpisodeResult[g];
        this.remaining = g;
        timers.startSingleTimer(EpisodeTimeout.INSTANCE, svc.episodeTimeout());
        var workflow = task.isEval() ? svc.evalWorkflow() : svc.trainWorkflow();
        var engine = svc.engine();
        var data = task.data();
        ActorRef<Command> self = ctx.getSelf();
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
            SlotThread t = new SlotThread(
                    this, self, slot, () -> WorkflowContext.callWith(wctx, () -> workflow.runEpisode(engine, data)));
            // Anonymous: a slot's name would cost a string and a check per spawn.
            ctx.spawnAnonymous(Behaviors.<Void>setup(c -> {
                t.thread.start();
                return new Slot(t);
            }));
        }
    }

    /**
     * A slot actor: it owns its episode's thread, started when the actor starts; it receives no
     * message, and when it stops (its group ended) while the episode runs it interrupts the thread.
     */
    private static final class Slot extends ExtensibleBehavior<Void> {
        private final SlotThread thread;

        Slot(SlotThread thread) {
            this.thread = thread;
        }

        @Override
        public Behavior<Void> receive(TypedActorContext<Void> ctx, Void msg) {
            return this;
        }

        @Override
        public Behavior<Void> receiveSignal(TypedActorContext<Void> ctx, Signal signal) {
            if (signal instanceof PostStop) {
                thread.stop();
            }
            return this;
        }
    }

    /** A slot's episode thread; its result goes to the group unless the group has ended. */
    private static final class SlotThread implements Runnable {
        final Thread thread;
        private final GroupRun run;
        private final ActorRef<Command> group;
        private final int slot;
        private final java.util.concurrent.Callable<EpisodeResult> episode;
        private volatile boolean returned;

        SlotThread(
                GroupRun run, ActorRef<Command> group, int slot, java.util.concurrent.Callable<EpisodeResult> episode) {
            this.run = run;
            this.group = group;
            this.slot = slot;
            this.episode = episode;
            this.thread = Thread.ofVirtual()
                    .name("slot-" + run.task.taskId() + "-" + slot)
                    .unstarted(this);
        }

        @Override
        public void run() {
            Command report;
            try {
                report = new SlotReturned(slot, episode.call());
            } catch (Throwable t) {
                report = new SlotFailed(slot, t);
            }
            returned = true;
            if (!run.ended) {
                group.tell(report);
            }
        }

        /** The slot actor stopped: an episode still running is interrupted (its generation aborted). */
        void stop() {
            if (!returned) {
                thread.interrupt();
            }
        }
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(SlotReturned.class, this::onSlotReturned)
                .onMessage(SlotFailed.class, this::onSlotFailed)
                .onMessage(Decided.class, this::onDecided)
                .onMessage(Abandon.class, a -> abandon(a.reason(), a.detail()))
                .onMessage(VersionChanged.class, this::onVersionChanged)
                .onMessageEquals(
                        EpisodeTimeout.INSTANCE,
                        () -> abandon(
                                RejectReason.TIMEOUT, "not finished within episode_timeout=" + svc.episodeTimeout()))
                .onSignal(PostStop.class, s -> onPostStop())
                .build();
    }

    private Behavior<Command> onSlotReturned(SlotReturned r) {
        if (ended) {
            return this;
        }
        results[r.slot()] = r.result() == null ? EpisodeResult.rejected(GroupMerger.RETURNED_NONE) : r.result();
        if (--remaining > 0) {
            return this;
        }
        List<EpisodeResult> all = List.of(results);
        ActorRef<Command> self = getContext().getSelf();
        Thread.ofVirtual().name("merge-" + task.taskId()).start(() -> {
            Command decided;
            try {
                decided = new Decided(decide(all), null);
            } catch (Throwable t) {
                decided = new Decided(null, t);
            }
            if (!ended) {
                self.tell(decided);
            }
        });
        return this;
    }

    /** A slot threw: the group is rejected and its siblings stopped. */
    private Behavior<Command> onSlotFailed(SlotFailed f) {
        if (ended) {
            return this;
        }
        Throwable e = f.error();
        RejectReason reason = e instanceof WorkflowContractException ? RejectReason.CONTRACT : RejectReason.FAILED;
        String detail = "task " + task.taskId() + " slot " + f.slot() + " threw " + describe(e);
        if (!(e instanceof InterruptedException)) {
            log.warn("{}; cancelling its {} sibling slot(s)", detail, running(), e);
        }
        return abandon(reason, detail);
    }

    private Behavior<Command> onDecided(Decided d) {
        if (ended) {
            return this;
        }
        if (d.error() != null) {
            log.error("task {}: concluding the group failed", task.taskId(), d.error());
            return end(finished(
                    new Collector.Rejected(RejectReason.FAILED, "concluding the group failed: " + describe(d.error())),
                    Map.of(),
                    0));
        }
        return end(d.finished());
    }

    /** The weight version moved on: under the cancel policy a group left too far behind is rejected as stale. */
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

    /** Ends the group as rejected; stopping it stops the slots still running (their generations aborted). */
    private Behavior<Command> abandon(RejectReason reason, String detail) {
        if (ended) {
            return this;
        }
        long tokens = 0;
        for (EpisodeResult r : results) {
            tokens += Trajectories.generatedTokens(r);
        }
        return end(finished(new Collector.Rejected(reason, detail), Map.of(), tokens));
    }

    /** Reports the group's one outcome to the runner and stops (which stops the slot actors). */
    private Behavior<Command> end(Collector.GroupFinished outcome) {
        ended = true;
        release();
        runner.tell(new GroupRunner.Ended(name, outcome));
        return Behaviors.stopped();
    }

    /**
     * Stopped without having ended: the runner stopped (node shutdown: the group ends without an
     * outcome, the coordinator re-dispatches its task), or this actor threw (supervision: stop) and
     * the group is reported {@code failed}; a runner that is stopping drops the report.
     */
    private Behavior<Command> onPostStop() {
        if (!ended) {
            ended = true;
            release();
            log.debug("task {}: group stopped before reporting", task.taskId());
            // Built without the engine (what threw may be the engine): the dispatch version stands
            // in for the completion version of a group that completed nothing.
            runner.tell(new GroupRunner.Ended(
                    name,
                    new Collector.GroupFinished(
                            task.taskId(),
                            task.attempt(),
                            task.isEval(),
                            task.dispatchVersion(),
                            task.dispatchVersion(),
                            new Collector.Rejected(RejectReason.FAILED, "the group's actor stopped before it ended"),
                            Map.of(),
                            workflowStats.totals(),
                            0)));
        }
        return this;
    }

    private void release() {
        for (Exception e : groupCache.release()) {
            log.warn("task {}: {}", task.taskId(), e.getMessage());
        }
    }

    /** How many slots have not reported. */
    private int running() {
        int n = 0;
        for (EpisodeResult r : results) {
            n += r == null ? 1 : 0;
        }
        return n - 1;
    }

    /** On the group's merge thread: format check, merge, should_accept, dump. */
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
