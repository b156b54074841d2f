package org.rollout.cluster;

import java.util.HashSet;
import java.util.Set;
import org.rollout.core.StalenessBudget;

/**
 * Counts each training task's outcome into the staleness budget once, knowing which outcomes the
 * collector holds ({@link RolloutCoordinator.OutcomeHeld}): a task whose outcome is held no longer
 * runs but keeps its place in the staleness bound ({@link StalenessBudget#onHold}), so when it ends
 * it leaves the held count instead of the running one. Pure; evaluation tasks are not counted.
 */
final class OutcomeAccounting {

    private final StalenessBudget budget;
    /** Training tasks in flight whose outcome the collector holds. */
    private final Set<Long> held = new HashSet<>();

    OutcomeAccounting(StalenessBudget budget) {
        this.budget = budget;
    }

    /**
     * The collector holds the outcome of training task {@code taskId}, in flight here: counted as
     * held once. False when it was counted so before.
     */
    boolean held(long taskId) {
        if (!held.add(taskId)) {
            return false;
        }
        budget.onHold();
        return true;
    }

    /** Task {@code taskId} ended, {@code accepted} or rejected; an evaluation task only leaves the held set. */
    void ended(long taskId, boolean isEval, boolean accepted) {
        boolean wasHeld = held.remove(taskId);
        if (isEval) {
            return;
        }
        if (accepted) {
            if (wasHeld) {
                budget.onHeldAccept();
            } else {
                budget.onAccept();
            }
        } else if (wasHeld) {
            budget.onHeldReject();
        } else {
            budget.onReject();
        }
    }

    /** A training task the trainer consumed from a predecessor's batch while it ran again: accepted. */
    void consumedWhileRerun(long taskId) {
        if (held.remove(taskId)) {
            budget.onHeldAccept();
        } else {
            budget.onAccept();
        }
    }

    /** The collector restarted: what it held is delivered again, so nothing counts as held. */
    void collectorRestarted() {
        held.clear();
        budget.releaseHeld();
    }
}
