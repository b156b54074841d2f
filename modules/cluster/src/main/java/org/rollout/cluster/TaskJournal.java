package org.rollout.cluster;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The audit trail of tasks: one line per dispatch (coordinator) and per outcome (collector), on
 * the logger {@value #LOGGER} at INFO, which the shipped logging configuration leaves off. Turn
 * it on ({@code <logger name="rollout.tasks" level="INFO"/>}) to answer "where did task 12 run,
 * and how did it end?", or to account for every task of a run across nodes, as the system tests
 * do: a task id that was dispatched must end in exactly one delivered batch or one rejection.
 *
 * <pre>
 *   dispatch task=12 attempt=0 eval=false index=11 version=3 node=node-2
 *   outcome task=12 attempt=0 eval=false accepted=true reason=-
 *   outcome task=13 attempt=1 eval=false accepted=false reason=failed
 *   discard task=14 reason=stale
 *   duplicate task=12 attempt=1
 *   superseded task=15 attempt=1
 * </pre>
 *
 * <p>Lines are written by whichever node hosts the singletons at the time; after a fail-over a
 * task may have an outcome line on two nodes (its held outcome was delivered again to the new
 * collector). Every line is one call of the logger: with a synchronous appender it is in the log
 * before the actor goes on, so a node killed with SIGKILL keeps what it wrote.
 */
final class TaskJournal {
    static final String LOGGER = "rollout.tasks";
    private static final Logger log = LoggerFactory.getLogger(LOGGER);

    private TaskJournal() {}

    /** The coordinator sent task {@code taskId}'s attempt to the runner on {@code node}. */
    static void dispatched(long taskId, int attempt, boolean isEval, long sourceIndex, int version, String node) {
        if (log.isInfoEnabled()) {
            log.info(
                    "dispatch task={} attempt={} eval={} index={} version={} node={}",
                    taskId,
                    attempt,
                    isEval,
                    sourceIndex,
                    version,
                    node);
        }
    }

    /** The collector took the first outcome of task {@code taskId}; {@code reason} is null when accepted. */
    static void outcome(long taskId, int attempt, boolean isEval, boolean accepted, String reason) {
        if (log.isInfoEnabled()) {
            log.info(
                    "outcome task={} attempt={} eval={} accepted={} reason={}",
                    taskId,
                    attempt,
                    isEval,
                    accepted,
                    reason == null ? "-" : reason);
        }
    }

    /** An accepted group was dropped before hand-out ({@code reason}, e.g. stale). */
    static void discarded(long taskId, String reason) {
        if (log.isInfoEnabled()) {
            log.info("discard task={} reason={}", taskId, reason);
        }
    }

    /**
     * The held outcome of a re-run of task {@code taskId} was dropped because a trainer
     * acknowledged a predecessor's batch that carried the task: the task ended delivered.
     */
    static void superseded(long taskId, int attempt) {
        if (log.isInfoEnabled()) {
            log.info("superseded task={} attempt={}", taskId, attempt);
        }
    }

    /** A later outcome of a task whose outcome was already taken was dropped. */
    static void duplicate(long taskId, int attempt) {
        if (log.isInfoEnabled()) {
            log.info("duplicate task={} attempt={}", taskId, attempt);
        }
    }
}
