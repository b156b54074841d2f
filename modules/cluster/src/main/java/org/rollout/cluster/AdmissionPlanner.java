package org.rollout.cluster;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.LongSupplier;
import org.rollout.cluster.TaskLedger.Task;
import org.rollout.core.StalenessBudget;

/**
 * Which tasks go to which runner now: tasks of a lost runner again first (attempt + 1, to any
 * runner, over capacity if need be), then evaluation groups (beside training ones, over capacity,
 * no staleness bound), then new training groups while the staleness budget has capacity, admission
 * is not paused by a weight update, the groups running plus those the collector holds unbatched stay
 * below {@code queue_size}, some runner has a training place, and the source has prompts. Each
 * group goes to the least-loaded runner ({@link TaskLedger#leastLoaded}).
 *
 * <p>Pure: {@link #admit} records its decisions in the ledger, the budget and the evaluation
 * schedule and returns them; the coordinator writes them to the durable ledger and tells the
 * runners. It also keeps the admission cursor (the next task id, the training prompts taken).
 *
 * @param <R> how a runner is named (its actor ref in the coordinator; anything in tests)
 */
final class AdmissionPlanner<R> {

    /** Why training admission stopped. */
    enum Halt {
        /** A weight update is under way: nothing new is admitted, only tasks of lost runners again. */
        PAUSED,
        /** The training prompts ran out (now or before). */
        PROMPTS_EXHAUSTED,
        /** The staleness budget (or {@code max_concurrent_rollouts}) allows no more groups now. */
        BUDGET_EXHAUSTED,
        /** Groups running plus groups the collector holds unbatched reached {@code queue_size}. */
        QUEUE_FULL,
        /** No runner has a training place. */
        NO_CAPACITY
    }

    /** One decision: run {@code task} (its runner, attempt and version) there; {@code again}: a lost runner's. */
    record Dispatch<R>(Task<R> task, boolean again) {}

    /**
     * What one round of admission decided: the dispatches in order, why training admission stopped,
     * and whether the training prompts ran out in this round.
     */
    record Admission<R>(List<Dispatch<R>> dispatches, Halt halt, boolean promptsRanOut) {}

    private final TaskLedger<R> tasks;
    private final StalenessBudget budget;
    private final EvaluationSchedule eval;
    private final PromptSource source;
    private final int queueSize;
    private final LongSupplier clock;

    private final Set<Long> pausedBy = new HashSet<>();
    private long nextTaskId;
    /** Between one new task id and the next: the trainer ranks, each taking its own ids. */
    private final int idStep;

    private long trainTaken;
    private boolean exhausted;
    private long redispatched;
    private int buffered;

    /**
     * @param tasks the tasks and runners, with their loads
     * @param budget the staleness budget
     * @param eval the evaluation passes
     * @param source training prompts, by index
     * @param queueSize groups running plus groups the collector holds unbatched, at most (at least 1)
     * @param nextTaskId the id of the next new task
     * @param trainTaken training prompts taken so far: the index of the next one
     * @param clock when a task starts, in nanoseconds
     */
    AdmissionPlanner(
            TaskLedger<R> tasks,
            StalenessBudget budget,
            EvaluationSchedule eval,
            PromptSource source,
            int queueSize,
            long nextTaskId,
            long trainTaken,
            LongSupplier clock) {
        this(tasks, budget, eval, source, queueSize, nextTaskId, trainTaken, clock, RankShare.ALONE);
    }

    /**
     * As above, for trainer rank {@code share}: new task ids are the rank's own, the first at or
     * after {@code nextTaskId}, then every {@code share.ranks()}-th.
     */
    AdmissionPlanner(
            TaskLedger<R> tasks,
            StalenessBudget budget,
            EvaluationSchedule eval,
            PromptSource source,
            int queueSize,
            long nextTaskId,
            long trainTaken,
            LongSupplier clock,
            RankShare share) {
        this.tasks = tasks;
        this.budget = budget;
        this.eval = eval;
        this.source = source;
        this.queueSize = Math.max(1, queueSize);
        this.nextTaskId = share.firstIdFrom(nextTaskId);
        this.idStep = share.ranks();
        this.trainTaken = trainTaken;
        this.clock = clock;
    }

    /** Decides what runs now; the dispatches are recorded in the ledger as in flight. */
    Admission<R> admit() {
        List<Dispatch<R>> out = new ArrayList<>();
        while (tasks.hasRedispatches()) {
            R r = tasks.leastLoaded(true);
            if (r == null) {
                break;
            }
            Optional<Task<R>> next = tasks.nextToRedispatch();
            if (next.isEmpty()) {
                break;
            }
            Task<R> old = next.get();
            redispatched++;
            out.add(new Dispatch<>(
                    dispatch(
                            old.taskId(),
                            old.attempt() + 1,
                            old.data(),
                            old.isEval(),
                            old.sourceIndex(),
                            r,
                            old.dispatchVersion(),
                            old.possiblyDelivered()),
                    true));
        }
        if (!pausedBy.isEmpty()) {
            return new Admission<>(out, Halt.PAUSED, false);
        }
        for (var next = eval.next(); next.isPresent(); next = eval.next()) {
            R r = tasks.leastLoaded(true);
            int index = next.getAsInt();
            if (r == null) {
                eval.putBack(index);
                break;
            }
            out.add(new Dispatch<>(
                    dispatch(newTaskId(), 0, eval.item(index), true, index, r, eval.version(), false), false));
        }
        while (true) {
            Halt halt = trainingHalt();
            if (halt != null) {
                return new Admission<>(out, halt, false);
            }
            R r = tasks.leastLoaded(false);
            if (r == null) {
                return new Admission<>(out, Halt.NO_CAPACITY, false);
            }
            Optional<Map<String, Object>> item = source.item(trainTaken);
            if (item.isEmpty()) {
                exhausted = true;
                return new Admission<>(out, Halt.PROMPTS_EXHAUSTED, true);
            }
            budget.onEnqueue();
            budget.onAdmit();
            out.add(new Dispatch<>(
                    dispatch(newTaskId(), 0, item.get(), false, trainTaken++, r, budget.version(), false), false));
        }
    }

    /** The next new task's id. */
    private long newTaskId() {
        long id = nextTaskId;
        nextTaskId += idStep;
        return id;
    }

    /** Why no training group may start now, before looking at runners; null when one may. */
    private Halt trainingHalt() {
        if (exhausted) {
            return Halt.PROMPTS_EXHAUSTED;
        }
        if (!budget.canAdmit()) {
            return Halt.BUDGET_EXHAUSTED;
        }
        if (buffered + budget.running() >= queueSize) {
            return Halt.QUEUE_FULL;
        }
        return null;
    }

    private Task<R> dispatch(
            long taskId,
            int attempt,
            Map<String, Object> data,
            boolean isEval,
            long sourceIndex,
            R runner,
            int dispatchVersion,
            boolean possiblyDelivered) {
        return tasks.dispatch(new Task<>(
                taskId,
                attempt,
                data,
                isEval,
                sourceIndex,
                runner,
                dispatchVersion,
                clock.getAsLong(),
                possiblyDelivered));
    }

    /** Weight update {@code updateId} began: nothing new is admitted until it ends. */
    void pause(long updateId) {
        pausedBy.add(updateId);
    }

    /** Weight update {@code updateId} ended. */
    void resume(long updateId) {
        pausedBy.remove(updateId);
    }

    boolean paused() {
        return !pausedBy.isEmpty();
    }

    /** The collector holds {@code buffered} accepted groups unbatched. */
    void buffered(int buffered) {
        this.buffered = buffered;
    }

    int buffered() {
        return buffered;
    }

    /** Whether the training prompts ran out. */
    boolean exhausted() {
        return exhausted;
    }

    /** Tasks dispatched again after their runner was lost, so far. */
    long redispatched() {
        return redispatched;
    }

    long nextTaskId() {
        return nextTaskId;
    }

    long trainTaken() {
        return trainTaken;
    }
}
