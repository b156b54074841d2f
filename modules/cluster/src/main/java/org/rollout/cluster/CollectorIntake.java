package org.rollout.cluster;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.rollout.api.TrainingGroup;
import org.rollout.cluster.Collector.Accepted;
import org.rollout.cluster.Collector.GroupFinished;
import org.rollout.cluster.Collector.Rejected;

/**
 * The collector's intake: which outcome of a task is its task's end. The first outcome of a task
 * wins; a later one (another attempt of a re-dispatched task) is a duplicate. Before a coordinator
 * attached, outcomes wait (it says which of its predecessor's tasks are still wanted); after a
 * take-over, the outcome of a task a trainer may still acknowledge from a predecessor's batch is
 * held until that acknowledgement drops it or {@code batch_ack_timeout} has passed. Pure state:
 * times are passed in, in nanoseconds of {@link System#nanoTime}; the collector owns one, carries
 * out what it decides (the journal, the log, the coordinator) and is its only user.
 */
final class CollectorIntake {

    /** What becomes of an outcome. */
    enum Verdict {
        /** No coordinator attached yet: kept, and decided again when one does ({@link #attach}). */
        EARLY,
        /** Of a task below the first new id that is not open: a predecessor was done with it. */
        DONE_BY_PREDECESSOR,
        /** Its task's outcome was taken already: a late duplicate. */
        DUPLICATE,
        /**
         * A trainer may still acknowledge the task from a predecessor's batch: its outcome re-sent
         * by the runner that held it, or its re-run's, is held. That acknowledgement drops it (the
         * task is delivered: {@link #deliveredByPredecessor}), and when none came within {@code
         * batch_ack_timeout} it is taken as any other ({@link #releaseDue}).
         */
        HELD,
        /** The task's outcome. */
        TAKEN
    }

    /** The verdict on {@code finished}. */
    record Decision(Verdict verdict, GroupFinished finished) {
        boolean accepted() {
            return finished.outcome() instanceof Accepted;
        }

        /** A taken training group: it goes to the buffer. */
        boolean buffered() {
            return verdict == Verdict.TAKEN && accepted() && !finished.isEval();
        }

        /** The rejection's reason as the wire names it, or null when the outcome is an acceptance. */
        String rejectReason() {
            return finished.outcome() instanceof Rejected r ? r.reason().wireName() : null;
        }
    }

    /**
     * How long a taken rejection or evaluation result is remembered for {@link #reannounce}: a
     * restarted coordinator re-attaches within seconds, and one that still counts such a task open
     * learnt it from a ledger write made right after the outcome was taken. Kept for the whole run
     * they grew with every rejection.
     */
    static final Duration UNBUFFERED_KEPT = Duration.ofMinutes(10);

    private final Duration ackTimeout;
    private boolean attached;
    private final List<GroupFinished> early = new ArrayList<>();
    private long firstNewTaskId;
    private Set<Long> wantedOld = new HashSet<>();
    /** Tasks a trainer may hold in a predecessor's batch. */
    private Set<Long> possiblyDelivered = new HashSet<>();
    /** Until when an outcome of a possibly delivered task is held. */
    private long holdUntilNanos;
    /** Outcomes held while the acknowledgement of a predecessor's batch may still come. */
    private final LinkedHashMap<Long, GroupFinished> held = new LinkedHashMap<>();
    /** Tasks whose outcome was taken: a late one of theirs is a duplicate. */
    private final TakenIds taken;
    /** Tasks whose taken outcome was a rejection or an evaluation result, with when. */
    private final LinkedHashMap<Long, Long> unbufferedTaken = new LinkedHashMap<>();

    private long duplicates;

    /**
     * @param awaitAttach outcomes wait until a coordinator attaches; false for a collector used on
     *     its own
     */
    CollectorIntake(Duration ackTimeout, boolean awaitAttach) {
        this(ackTimeout, awaitAttach, RankShare.ALONE);
    }

    /** As above, for trainer rank {@code share}'s collector, which takes the rank's task ids. */
    CollectorIntake(Duration ackTimeout, boolean awaitAttach, RankShare share) {
        this.ackTimeout = ackTimeout;
        this.attached = !awaitAttach;
        this.taken = new TakenIds(share);
    }

    boolean attached() {
        return attached;
    }

    /**
     * A coordinator attached at {@code now}: of the tasks below {@code firstNewTaskId} only those
     * in {@code open} are still wanted, and an outcome of one in {@code possiblyDelivered} is held
     * for up to {@code batch_ack_timeout}. {@code first} when no coordinator was attached before
     * (on a re-attach, what was taken stays taken). Returns the outcomes that came before, to be
     * decided again, in arrival order.
     */
    List<GroupFinished> attach(
            long firstNewTaskId, Collection<Long> open, Collection<Long> possiblyDelivered, boolean first, long now) {
        attached = true;
        this.firstNewTaskId = firstNewTaskId;
        wantedOld = new HashSet<>(open);
        this.possiblyDelivered = new HashSet<>(possiblyDelivered);
        holdUntilNanos = now + ackTimeout.toNanos();
        if (first) {
            // Below the first new id, only the predecessor's open tasks are still wanted: outcomes
            // of the others are dropped before the duplicate check, so they count as taken.
            long lowestOpen = open.stream().mapToLong(Long::longValue).min().orElse(firstNewTaskId);
            taken.takenBelow(Math.min(lowestOpen, firstNewTaskId));
        }
        List<GroupFinished> before = List.copyOf(early);
        early.clear();
        return before;
    }

    /** Decides, at {@code now}, what becomes of {@code g}, and remembers it. */
    Decision decide(GroupFinished g, long now) {
        if (!attached) {
            early.add(g);
            return new Decision(Verdict.EARLY, g);
        }
        if (g.taskId() < firstNewTaskId && !wantedOld.contains(g.taskId())) {
            duplicates++;
            return new Decision(Verdict.DONE_BY_PREDECESSOR, g);
        }
        if (!taken.add(g.taskId())) {
            duplicates++;
            return new Decision(Verdict.DUPLICATE, g);
        }
        if (!g.isEval() && possiblyDelivered.contains(g.taskId()) && now - holdUntilNanos < 0) {
            // Taken now, an acceptance would be handed out again in a new batch (delivered
            // twice), and a rejection would count a task the trainer trained on as rejected.
            held.put(g.taskId(), g);
            return new Decision(Verdict.HELD, g);
        }
        noteTaken(g, now);
        return new Decision(Verdict.TAKEN, g);
    }

    /**
     * At {@code now}, once {@code batch_ack_timeout} has passed since the take-over with no
     * acknowledgement of their tasks, the held outcomes are taken: returns them, in arrival order.
     */
    List<Decision> releaseDue(long now) {
        if (held.isEmpty() || now - holdUntilNanos < 0) {
            return List.of();
        }
        List<Decision> released = new ArrayList<>(held.size());
        for (GroupFinished g : held.values()) {
            noteTaken(g, now);
            released.add(new Decision(Verdict.TAKEN, g));
        }
        held.clear();
        return released;
    }

    private void noteTaken(GroupFinished g, long now) {
        if (g.isEval() || !(g.outcome() instanceof Accepted)) {
            unbufferedTaken.put(g.taskId(), now);
            var oldest = unbufferedTaken.entrySet().iterator();
            while (oldest.hasNext() && now - oldest.next().getValue() > UNBUFFERED_KEPT.toNanos()) {
                oldest.remove();
            }
        }
    }

    /**
     * A predecessor's batch of {@code taskIds} was acknowledged: the tasks are delivered, so a
     * later outcome of theirs is a duplicate. Returns the outcomes held for them, now dropped (not
     * their tasks' end).
     */
    List<GroupFinished> deliveredByPredecessor(Collection<Long> taskIds) {
        taken.addAll(taskIds);
        wantedOld.removeAll(taskIds);
        possiblyDelivered.removeAll(taskIds);
        List<GroupFinished> superseded = new ArrayList<>();
        for (Long id : taskIds) {
            GroupFinished g = held.remove(id);
            if (g != null) {
                superseded.add(g);
            }
        }
        return superseded;
    }

    /**
     * A new coordinator incarnation attached while the collector lived on, counting {@code open}
     * tasks open: of those whose outcome was taken, an accepted one the collector still holds
     * ({@code holding}, by task id) is to be announced again (returned, in {@code open}'s order); a
     * rejected or evaluation one taken within {@link #UNBUFFERED_KEPT} is forgotten, so that its
     * runner's delivering it again is taken instead of dropped as a duplicate. One accepted and
     * handed out is left alone: the trainer's acknowledgement retires it.
     */
    List<TrainingGroup> reannounce(Collection<Long> open, Map<Long, TrainingGroup> holding) {
        List<TrainingGroup> again = new ArrayList<>();
        for (Long id : open) {
            if (!taken.contains(id)) {
                continue;
            }
            TrainingGroup g = holding.get(id);
            if (g != null) {
                again.add(g);
            } else if (unbufferedTaken.remove(id) != null) {
                taken.remove(id);
            }
        }
        return again;
    }

    /** The tasks whose outcome is held, in arrival order. */
    List<Long> heldTasks() {
        return List.copyOf(held.keySet());
    }

    int heldCount() {
        return held.size();
    }

    /** Outcomes dropped: late duplicates and those of tasks a predecessor was done with. */
    long duplicates() {
        return duplicates;
    }
}
