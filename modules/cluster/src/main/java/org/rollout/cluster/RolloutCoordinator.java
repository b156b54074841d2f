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
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.rollout.core.StalenessBudget;

/**
 * Admits prompt groups and keeps track of every task in flight.
 *
 * <pre>
 *   PromptSource ─► RolloutCoordinator ──RunGroup──► least-loaded GroupRunner ─► GroupActor ─► Collector
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

    private record InFlight(
            long taskId,
            int attempt,
            java.util.Map<String, Object> data,
            boolean isEval,
            ActorRef<GroupRunner.Command> runner,
            int dispatchVersion,
            long startedNanos) {}

    private static final class RunnerState {
        final GroupRunner.Info info;
        int inFlight;
        int evalInFlight;

        RunnerState(GroupRunner.Info info) {
            this.info = info;
        }
    }

    private final StalenessBudget budget;
    private final PromptSource source;
    private final List<Map<String, Object>> evalItems;
    private final int evalEvery;
    private final int evalMaxConcurrent;
    private final ActorRef<Collector.Command> collector;
    private final int queueSize;
    private final Map<ActorRef<GroupRunner.Command>, RunnerState> runners = new LinkedHashMap<>();
    private final Set<ActorRef<GroupRunner.Command>> asked = new HashSet<>();
    private final Map<Long, InFlight> ledger = new HashMap<>();
    private final ArrayDeque<InFlight> toRedispatch = new ArrayDeque<>();
    private final ArrayDeque<Map<String, Object>> evalPending = new ArrayDeque<>();
    private final Set<Long> pausedBy = new HashSet<>();
    private long nextTaskId;
    private int evalInFlight;
    private int evalVersion;
    private boolean exhausted;
    private long redispatched;
    private int buffered;

    /**
     * @param budget the staleness budget, already at the initial version
     * @param source training prompts
     * @param evalItems one evaluation pass (empty for none)
     * @param evalEvery start a pass when the version is a multiple of this (0: only at start)
     * @param evalMaxConcurrent eval groups in flight at most
     * @param queueSize accepted groups the collector may hold unbatched before admission waits
     */
    public static Behavior<Command> create(
            StalenessBudget budget,
            PromptSource source,
            List<Map<String, Object>> evalItems,
            int evalEvery,
            int evalMaxConcurrent,
            int queueSize,
            ActorRef<Collector.Command> collector) {
        return Behaviors.setup(ctx -> {
            ActorRef<Receptionist.Listing> listing = ctx.messageAdapter(
                    Receptionist.Listing.class, l -> new Runners(l.getServiceInstances(GroupRunner.SERVICE_KEY)));
            ctx.getSystem().receptionist().tell(Receptionist.subscribe(GroupRunner.SERVICE_KEY, listing));
            return new RolloutCoordinator(
                    ctx, budget, source, evalItems, evalEvery, evalMaxConcurrent, queueSize, collector);
        });
    }

    private RolloutCoordinator(
            ActorContext<Command> ctx,
            StalenessBudget budget,
            PromptSource source,
            List<Map<String, Object>> evalItems,
            int evalEvery,
            int evalMaxConcurrent,
            int queueSize,
            ActorRef<Collector.Command> collector) {
        super(ctx);
        this.queueSize = Math.max(1, queueSize);
        this.budget = budget;
        this.source = source;
        this.evalItems = List.copyOf(evalItems);
        this.evalEvery = evalEvery;
        this.evalMaxConcurrent = Math.max(1, evalMaxConcurrent);
        this.collector = collector;
        startEvalPass(budget.version());
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Runners.class, this::onRunners)
                .onMessage(RunnerJoined.class, this::onRunnerJoined)
                .onMessage(RunnerGone.class, g -> onRunnerGone(g.runner()))
                .onMessage(TaskFinished.class, this::onTaskFinished)
                .onMessage(AcceptedDiscarded.class, d -> {
                    budget.onAcceptedDiscarded();
                    buffered = d.buffered();
                    admit();
                    return this;
                })
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

    private Behavior<Command> onRunners(Runners listing) {
        for (ActorRef<GroupRunner.Command> r : listing.runners()) {
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
        for (ActorRef<GroupRunner.Command> r : List.copyOf(runners.keySet())) {
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
            runners.put(r, new RunnerState(joined.info()));
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
        RunnerState gone = runners.remove(runner);
        if (gone == null) {
            return this;
        }
        List<InFlight> orphans = new ArrayList<>();
        for (InFlight f : ledger.values()) {
            if (f.runner().equals(runner)) {
                orphans.add(f);
            }
        }
        getContext()
                .getLog()
                .warn(
                        "runner on {} is gone with {} task(s) in flight; dispatching them again",
                        gone.info.node(),
                        orphans.size());
        for (InFlight f : orphans) {
            toRedispatch.addLast(f);
        }
        admit();
        return this;
    }

    private Behavior<Command> onTaskFinished(TaskFinished done) {
        buffered = done.buffered();
        InFlight f = ledger.remove(done.taskId());
        if (f == null) {
            getContext().getLog().warn("finished task {} is not in the ledger; ignoring", done.taskId());
            return this;
        }
        release(f);
        toRedispatch.removeIf(r -> r.taskId() == done.taskId());
        if (f.attempt() != done.attempt() && runners.containsKey(f.runner())) {
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
        admit();
        return this;
    }

    private Behavior<Command> onResume(ResumeAdmission resume) {
        pausedBy.remove(resume.updateId());
        if (resume.version() > budget.version()) {
            budget.onVersion(resume.version());
            if (evalEvery > 0 && resume.version() % evalEvery == 0) {
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
        evalPending.addAll(evalItems);
    }

    /** Dispatches re-dispatches first, then evaluation and training, as far as limits allow. */
    private void admit() {
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
            dispatch(old.taskId(), old.attempt() + 1, old.data(), old.isEval(), r, old.dispatchVersion());
        }
        if (!pausedBy.isEmpty()) {
            return;
        }
        while (!evalPending.isEmpty() && evalInFlight < evalMaxConcurrent) {
            ActorRef<GroupRunner.Command> r = leastLoaded(true);
            if (r == null) {
                break;
            }
            evalInFlight++;
            dispatch(nextTaskId++, 0, evalPending.pollFirst(), true, r, evalVersion);
        }
        while (!exhausted && budget.canAdmit() && buffered + budget.running() < queueSize) {
            ActorRef<GroupRunner.Command> r = leastLoaded(false);
            if (r == null) {
                return;
            }
            Optional<Map<String, Object>> item = source.next();
            if (item.isEmpty()) {
                exhausted = true;
                getContext().getLog().info("training prompts exhausted after {} tasks", nextTaskId);
                return;
            }
            budget.onEnqueue();
            budget.onAdmit();
            dispatch(nextTaskId++, 0, item.get(), false, r, budget.version());
        }
    }

    private void dispatch(
            long taskId,
            int attempt,
            Map<String, Object> data,
            boolean isEval,
            ActorRef<GroupRunner.Command> runner,
            int dispatchVersion) {
        InFlight f = new InFlight(taskId, attempt, data, isEval, runner, dispatchVersion, System.nanoTime());
        InFlight previous = ledger.put(taskId, f);
        if (previous != null) {
            release(previous);
        }
        RunnerState state = runners.get(runner);
        state.inFlight++;
        if (isEval) {
            state.evalInFlight++;
        }
        runner.tell(new GroupRunner.RunGroup(taskId, attempt, data, isEval, dispatchVersion, collector));
    }

    private void release(InFlight f) {
        RunnerState s = runners.get(f.runner());
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
        ActorRef<GroupRunner.Command> best = null;
        double bestLoad = Double.MAX_VALUE;
        for (var e : runners.entrySet()) {
            RunnerState s = e.getValue();
            int cap = Math.max(1, s.info.capacity());
            if (!overCapacity && s.inFlight - s.evalInFlight >= cap) {
                continue;
            }
            double load = (double) s.inFlight / cap;
            if (load < bestLoad) {
                bestLoad = load;
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
