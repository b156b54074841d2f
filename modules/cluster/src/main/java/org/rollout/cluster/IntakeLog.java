package org.rollout.cluster;

import org.rollout.api.TrainingGroup;
import org.slf4j.Logger;

/**
 * What the collector says of the outcomes it drops, holds or rejects: one line in its log naming
 * the task and attempt, and the task journal's record where there is one. The decisions are made
 * elsewhere ({@link CollectorIntake}, {@link BatchBook}, {@link TakeOverRules}); this only tells them.
 */
final class IntakeLog {

    private IntakeLog() {}

    /** A predecessor was done with the task already: the outcome is dropped. */
    static void doneByPredecessor(Logger log, Collector.GroupFinished g) {
        TaskJournal.duplicate(g.taskId(), g.attempt());
        log.info("task {} attempt {}: a predecessor was already done with it; dropped", g.taskId(), g.attempt());
    }

    /** Another outcome of the task was taken first: this one is dropped. */
    static void duplicate(Logger log, Collector.GroupFinished g) {
        TaskJournal.duplicate(g.taskId(), g.attempt());
        log.info("task {} attempt {}: late duplicate dropped", g.taskId(), g.attempt());
    }

    /** The outcome is held until a predecessor's batch is acknowledged or {@code ackTimeout} passes. */
    static void held(Logger log, CollectorIntake.Decision d, Object ackTimeout) {
        Collector.GroupFinished g = d.finished();
        log.info(
                "task {} attempt {}: {}, held for up to {}: it was accepted before the fail-over and a trainer may"
                        + " still acknowledge it",
                g.taskId(),
                g.attempt(),
                d.accepted() ? "accepted" : "rejected as " + d.rejectReason(),
                ackTimeout);
    }

    /** Says why a group was rejected, naming its task, as loudly as {@link OutcomeTally#loudness} says. */
    static void rejected(Logger log, Collector.GroupFinished g, Collector.Rejected r) {
        log.atLevel(OutcomeTally.loudness(r.reason()))
                .log(
                        "task {} attempt {}: rejected as {}: {}",
                        g.taskId(),
                        g.attempt(),
                        r.reason().wireName(),
                        OutcomeTally.shortened(r.detail()));
    }

    /** An accepted group grew too stale while it waited, and is dropped at hand-out. */
    static void droppedStale(Logger log, TrainingGroup g, int version, long stalenessLimit) {
        TaskJournal.discarded(g.taskId(), RejectReason.STALE.wireName());
        log.info(
                "task {}: dispatched at version {}, dropped at hand-out at version {} (max_head_offpolicyness={})",
                g.taskId(),
                g.dispatchVersion(),
                version,
                stalenessLimit);
    }

    /** A predecessor's batch {@code batchId} was acknowledged: what it meant for the outcomes held. */
    static void predecessorsBatch(Logger log, long batchId, TakeOverRules.PredecessorsBatch p) {
        for (Collector.GroupFinished held : p.superseded()) {
            TaskJournal.superseded(held.taskId(), held.attempt());
            log.info(
                    "task {} attempt {}: its held outcome is dropped; batch {} of a predecessor delivered the task",
                    held.taskId(),
                    held.attempt(),
                    batchId);
        }
        for (long heldBy : p.heldAgainBy()) {
            log.warn(
                    "batch {} (of a predecessor) acknowledged while batch {} holds some of its tasks again",
                    batchId,
                    heldBy);
        }
    }
}
