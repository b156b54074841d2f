package org.rollout.cluster;

import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;

/**
 * The coordinator's evaluation passes carried out on {@link EvaluationSchedule}'s word: a pass
 * that starts or ends is logged and told to the collector, which writes its statistics when it
 * ends. The collector is passed in on each call: the coordinator learns a new one when it is
 * replaced.
 */
final class EvaluationPasses {
    private final EvaluationSchedule schedule;
    private final Logger log;

    EvaluationPasses(EvaluationSchedule schedule, Logger log) {
        this.schedule = schedule;
        this.log = log;
    }

    /** Starts a pass at {@code version}, unless one still runs (logged) or there is nothing to evaluate. */
    void start(int version, ActorRef<Collector.Command> collector) {
        switch (schedule.start(version)) {
            case STARTED -> {
                log.info("evaluation pass over {} items at version {}", schedule.size(), version);
                collector.tell(new Collector.EvalPassStarted(version));
            }
            case SKIPPED -> log.warn("evaluation at version {} skipped: the previous pass is still running", version);
            case NO_ITEMS -> {}
        }
    }

    /** The version moved to {@code version}: a pass starts when {@code eval_every} divides it. */
    void versionMoved(int version, ActorRef<Collector.Command> collector) {
        if (schedule.dueAt(version)) {
            start(version, collector);
        }
    }

    /**
     * A pass at {@code asked} is asked for while the version is {@code current}: it starts now
     * (true), after the pass that runs, or not at all when the version moved on.
     */
    boolean ask(int asked, int current, ActorRef<Collector.Command> collector) {
        if (asked != current || !schedule.ask(asked)) {
            return false;
        }
        start(asked, collector);
        return true;
    }

    /** An evaluation group ended; when that ends the pass, a pass asked for meanwhile starts. */
    void groupEnded(int current, ActorRef<Collector.Command> collector) {
        if (schedule.finished()) {
            log.info("evaluation pass at version {} finished", schedule.version());
            collector.tell(new Collector.EvalPassFinished(schedule.version()));
            schedule.askedAt(current).ifPresent(v -> start(v, collector));
        }
    }
}
