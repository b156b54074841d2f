package org.rollout.cluster;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;

/**
 * What a coordinator that takes over a run does with each task, decided from the ledger its
 * predecessor wrote and what the surviving runners say they hold. Pure: no actor, no I/O; the
 * coordinator carries the plan out ({@link RolloutCoordinator}).
 *
 * <pre>
 *   ledger (open tasks, cursor) ─┐
 *                                ├─► RecoveryPlan.of ─► keep running │ deliver again │ run again
 *   holdings (runner → held)  ───┘                      forget │ cancel │ budget to restore
 * </pre>
 *
 * <p>Per open task of the ledger, in task-id order:
 *
 * <ul>
 *   <li>accepted, and some runner holds its outcome: still accepted and not acknowledged; the
 *       outcome is re-sent to the new collector ({@link #resend});
 *   <li>some runner still runs it: left where it is, with the attempt that runs;
 *   <li>some runner holds its outcome, never recorded as accepted: open, the outcome re-sent;
 *   <li>nobody has it (it died with the node): run again, attempt + 1 ({@link Open#again}).
 * </ul>
 *
 * <p>A task that a batch carried was marked in the ledger before the batch left ({@link
 * Open#possiblyDelivered}, {@link DurableState.OpenTask#possiblyDelivered}): it may be in a
 * trainer's hands, so whatever becomes of it here (its outcome re-sent, or run again) is held by
 * the new collector until that batch's fate is known. The mark stays with the task until it ends.
 * An accepted task without the mark was never handed out: its outcome is delivered at once. What a runner holds that the ledger does not have was done with before the loss: a held
 * outcome is forgotten, a running group cancelled. A task whose item is no longer in its source is
 * dropped (reported in {@link #unreadable}).
 *
 * <p>The staleness budget restores to the accepted count written with the cursor, less the accepted
 * tasks that run again (they count as running once more), with every open task that is not
 * accepted as running.
 *
 * @param <R> how a runner is named (its actor ref in the coordinator; anything in tests)
 */
final class RecoveryPlan<R> {

    /** A task that stays open: running where it is, outcome re-sent, or run again ({@code runner} null). */
    record Open<R>(DurableState.OpenTask task, int attempt, R runner, boolean possiblyDelivered) {
        /** Nobody runs or holds it: it is dispatched again. */
        boolean again() {
            return runner == null;
        }
    }

    /** An accepted, unacknowledged task whose outcome {@code runner} holds. */
    record Accepted<R>(DurableState.OpenTask task, R runner) {}

    /** A group that {@code runner} runs and the ledger does not have: it is cancelled. */
    record Stray<R>(R runner, long taskId, int attempt) {}

    final List<Open<R>> open = new ArrayList<>();
    final List<Accepted<R>> acceptedUnacked = new ArrayList<>();
    /** Held outcomes to deliver again to the new collector, per runner. */
    final Map<R, List<Long>> resend = new LinkedHashMap<>();
    /** Held outcomes of tasks the ledger no longer has, per runner. */
    final Map<R, List<Long>> forget = new LinkedHashMap<>();

    final List<Stray<R>> cancel = new ArrayList<>();
    final List<DurableState.OpenTask> unreadable = new ArrayList<>();
    /** Accepted groups whose outcome died with the node. */
    long lostAccepted;
    /** The staleness budget's {@code accepted} and {@code running} to restore. */
    long accepted;

    long running;
    /** Evaluation tasks that stay open, and the version of their pass (−1: none). */
    int evalOpen;

    int evalPassVersion = -1;

    private RecoveryPlan() {}

    /**
     * @param ledger what the predecessor wrote (not fresh)
     * @param holdings what each runner that answered holds
     * @param readable whether a task's item can still be read from its source
     */
    static <R> RecoveryPlan<R> of(
            DurableState.Ledger ledger,
            Map<R, ? extends Collection<GroupRunner.Held>> holdings,
            Predicate<DurableState.OpenTask> readable) {
        RecoveryPlan<R> plan = new RecoveryPlan<>();
        Map<Long, R> runningOn = new LinkedHashMap<>();
        Map<Long, Integer> runningAttempt = new LinkedHashMap<>();
        Map<Long, R> finishedOn = new LinkedHashMap<>();
        holdings.forEach((runner, held) -> {
            for (GroupRunner.Held h : held) {
                if (!ledger.open().containsKey(h.taskId())) {
                    // Done with before the loss (or never written): drop it.
                    if (h.finished()) {
                        plan.forget
                                .computeIfAbsent(runner, k -> new ArrayList<>())
                                .add(h.taskId());
                    } else {
                        plan.cancel.add(new Stray<>(runner, h.taskId(), h.attempt()));
                    }
                } else if (h.finished()) {
                    finishedOn.put(h.taskId(), runner);
                } else {
                    runningOn.put(h.taskId(), runner);
                    runningAttempt.put(h.taskId(), h.attempt());
                }
            }
        });
        for (DurableState.OpenTask t : new TreeMap<>(ledger.open()).values()) {
            if (!readable.test(t)) {
                plan.unreadable.add(t);
                continue;
            }
            if (t.isEval()) {
                plan.evalPassVersion = Math.max(plan.evalPassVersion, t.dispatchVersion());
            }
            R fin = finishedOn.get(t.taskId());
            R run = runningOn.get(t.taskId());
            if (t.accepted() && fin != null) {
                plan.acceptedUnacked.add(new Accepted<>(t, fin));
                plan.resend.computeIfAbsent(fin, k -> new ArrayList<>()).add(t.taskId());
                continue;
            }
            // Marked when a batch carried it (TaskLedger.handedOut), before the batch left.
            boolean possiblyDelivered = t.possiblyDelivered();
            if (t.accepted()) {
                plan.lostAccepted++;
            }
            if (t.isEval()) {
                plan.evalOpen++;
            } else {
                plan.running++;
            }
            if (fin != null) {
                plan.open.add(new Open<>(t, t.attempt(), fin, possiblyDelivered));
                plan.resend.computeIfAbsent(fin, k -> new ArrayList<>()).add(t.taskId());
            } else if (run != null) {
                plan.open.add(new Open<>(t, runningAttempt.get(t.taskId()), run, possiblyDelivered));
            } else {
                plan.open.add(new Open<>(t, t.attempt(), null, possiblyDelivered));
            }
        }
        plan.accepted = ledger.cursor().accepted() - plan.lostAccepted;
        return plan;
    }

    /** Tasks dispatched again. */
    long again() {
        return open.stream().filter(Open::again).count();
    }

    /** Outcomes delivered again. */
    int resent() {
        return resend.values().stream().mapToInt(List::size).sum();
    }
}
