package org.rollout.cluster;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.cluster.Collector.Ack;
import org.rollout.cluster.Collector.GroupFinished;

/**
 * The collector's take-over rules: what a coordinator's attaching asks of the collector, and what
 * becomes of a trainer's acknowledgement, which may be of a batch this collector never handed out
 * (a predecessor's, on a node that was lost) and may come before any coordinator attached. Pure
 * state over the collector's {@link CollectorIntake} and {@link BatchBook}, which it consults and
 * updates; the collector carries out what it decides (the coordinator, the journal, the log, the
 * replies) and is its only user.
 *
 * @param <P> a puller of the book
 */
final class TakeOverRules<P> {

    /**
     * What a coordinator's attaching asks of the collector, in this order. On a re-attach (a new
     * coordinator incarnation while this collector lived on: the coordinator was restarted), an
     * outcome whose {@code TaskFinished} may have been lost with the failed incarnation is announced
     * again ({@code announceAgain}; the rejected ones are forgotten instead, to be taken again); the
     * new incarnation learns again which tasks' outcomes are held ({@code held}: it counts them as
     * running, in the staleness bound, but does not run them); and the hand-outs the failed
     * incarnation was writing are asked of the new one ({@code marking}). Then, on any attach, the
     * outcomes that came before it are decided ({@code early}, in arrival order, through {@link
     * CollectorIntake#decide}), and after them the acknowledgements that waited for it ({@code
     * acks}, in arrival order, through {@link #acknowledge}).
     */
    record Attached(
            boolean first,
            List<TrainingGroup> announceAgain,
            List<Long> held,
            List<TrainingBatch> marking,
            List<GroupFinished> early,
            List<Ack> acks) {}

    /** What becomes of an acknowledgement. */
    sealed interface AckDecision {}

    /**
     * Of a batch this collector does not hold, with task ids, before a coordinator attached (a
     * successor whose coordinator is still recovering): only the coordinator can retire the tasks,
     * so it waits, to be decided again once one attaches ({@link Attached#acks}). Answering
     * "unknown" now would have the batch's tasks delivered again.
     */
    record Waits() implements AckDecision {}

    /**
     * Answered now: {@code known} when this collector held the batch and has no coordinator to
     * retire its tasks (it is used on its own); false when it does not hold the batch (never handed
     * out, or acknowledged already) and the trainer named no tasks, or named them to a collector
     * used on its own.
     */
    record Answered(boolean known) implements AckDecision {}

    /** Of a batch this collector held, now forgotten: the coordinator retires {@code taskIds} and answers. */
    record Consumed(List<Long> taskIds) implements AckDecision {}

    /**
     * Of a batch this collector does not hold, with task ids, once a coordinator attached: handed
     * out by a predecessor. Its groups may be here again (delivered again by their runners): they
     * were taken out of the book so they are not handed out twice ({@code backlogChanged} when the
     * backlog shrank), and an outcome of theirs that arrives later is a duplicate. The outcomes
     * held for them ({@code superseded}) are dropped: delivered after all, the held outcome is not
     * the task's end. {@code heldAgainBy} are the batches handed out that hold some of them again
     * (a warning: the trainer gets them twice). The coordinator retires {@code taskIds} and answers.
     */
    record PredecessorsBatch(
            List<Long> taskIds, boolean backlogChanged, List<GroupFinished> superseded, List<Long> heldAgainBy)
            implements AckDecision {}

    private final CollectorIntake intake;
    private final BatchBook<P> book;
    /** A coordinator attached (a collector used on its own never has one). */
    private boolean coordinator;
    /** Acknowledgements that wait for a coordinator to attach, in arrival order. */
    private final List<Ack> early = new ArrayList<>();

    TakeOverRules(CollectorIntake intake, BatchBook<P> book) {
        this.intake = intake;
        this.book = book;
    }

    /**
     * Coordinator incarnation {@code incarnation} attached at {@code now} ({@link Collector.Attach}):
     * the intake and the book learn it, and the attach's follow-up comes back.
     */
    Attached attach(long incarnation, long firstNewTaskId, List<Long> open, List<Long> possiblyDelivered, long now) {
        boolean first = !coordinator;
        coordinator = true;
        List<GroupFinished> before = intake.attach(firstNewTaskId, open, possiblyDelivered, first, now);
        book.attach(incarnation, first);
        List<Ack> acks = List.copyOf(early);
        early.clear();
        if (first) {
            return new Attached(true, List.of(), List.of(), List.of(), before, acks);
        }
        return new Attached(
                false,
                intake.reannounce(open, book.groupsHeld()),
                intake.heldTasks(),
                List.copyOf(book.marking()),
                before,
                acks);
    }

    /**
     * A trainer acknowledged {@code ack}'s batch: forgotten by the book if it held it, and what else
     * becomes of the acknowledgement.
     */
    AckDecision acknowledge(Ack ack) {
        TrainingBatch batch = book.acknowledge(ack.batchId());
        if (batch != null) {
            return coordinator
                    ? new Consumed(
                            batch.groups().stream().map(TrainingGroup::taskId).toList())
                    : new Answered(true);
        }
        if (ack.taskIds().isEmpty()) {
            return new Answered(false);
        }
        if (coordinator) {
            Set<Long> ids = new HashSet<>(ack.taskIds());
            boolean backlogChanged = book.retire(ids);
            List<GroupFinished> superseded = intake.deliveredByPredecessor(ack.taskIds());
            return new PredecessorsBatch(ack.taskIds(), backlogChanged, superseded, book.handedOutWithAnyOf(ids));
        }
        if (!intake.attached()) {
            early.add(ack);
            return new Waits();
        }
        return new Answered(false);
    }
}
