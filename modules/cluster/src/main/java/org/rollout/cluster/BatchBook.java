package org.rollout.cluster;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.trainer.HeldBatch;

/**
 * The collector's book of accepted training groups from their acceptance to their batch's
 * acknowledgement: groups whose acceptance the coordinator has not yet written, the buffer,
 * batches of {@code consumer_batch_size} formed from it, batches whose hand-out the coordinator is
 * writing, batches handed out ({@link HandedOutBatches}) and those back for the next pull, and the
 * pulls waiting with their deadlines. A batch that goes back is handed out again as it was: the
 * same id and the same groups. Pure state: times are passed in, in nanoseconds of {@link
 * System#nanoTime}; what the collector is to carry out comes back as {@link Step}s, in order.
 *
 * @param <P> a puller (the collector's is a {@link Collector.PullBatch}, which it answers)
 */
final class BatchBook<P> {

    /** Something the collector carries out. */
    sealed interface Step<P> {}

    /**
     * {@code group} was dropped at hand-out as stale: dispatched more than η versions before
     * {@code version}; {@code backlog} groups are left.
     */
    record DroppedStale<P>(TrainingGroup group, int version, int backlog) implements Step<P> {}

    /** A new batch was formed from the buffer; {@code backlog} groups are left. */
    record Formed<P>(int backlog) implements Step<P> {}

    /** New batch {@code batch} leaves once the coordinator has written its hand-out ({@link #handOutRecorded}). */
    record MarkHandOut<P>(TrainingBatch batch) implements Step<P> {}

    /** {@code batch} goes to {@code puller} now. */
    record HandOut<P>(TrainingBatch batch, P puller) implements Step<P> {}

    private record Waiting<P>(P puller, String holder, long leaseMillis, long deadlineNanos) {}

    private record Marking<P>(TrainingBatch batch, Waiting<P> pull) {}

    private final int consumerBatchSize;
    private final long stalenessLimit;
    private boolean ledger;
    /** Accepted groups whose acceptance the coordinator has not yet written, in the order they were taken. */
    private final LinkedHashMap<Long, TrainingGroup> unrecorded = new LinkedHashMap<>();

    private final ArrayDeque<TrainingGroup> buffer = new ArrayDeque<>();
    private final HandedOutBatches outstanding;
    private final LinkedHashMap<Long, Marking<P>> marking = new LinkedHashMap<>();
    private final ArrayDeque<TrainingBatch> redeliveries = new ArrayDeque<>();
    private final ArrayDeque<Waiting<P>> waiting = new ArrayDeque<>();
    private long nextBatchId;
    private int version;
    private final int rank;

    /** The largest trainer rank a batch id can name (8 bits, {@link #attach}). */
    static final int MAX_RANK = 255;

    /**
     * @param stalenessLimit with {@code staleness_policy = cancel}, η: a buffered group whose
     *     dispatch version is more than this behind the version at hand-out is dropped as {@code
     *     stale}; {@link Long#MAX_VALUE} never drops
     */
    BatchBook(int consumerBatchSize, Duration ackTimeout, long stalenessLimit) {
        this(consumerBatchSize, ackTimeout, stalenessLimit, 0);
    }

    /**
     * As above, for the collector of trainer rank {@code rank} (0 to 255) of a run with one per
     * rank: its batch ids carry the rank in bits 24 to 31, so the run's collectors never hand out
     * one id twice.
     */
    BatchBook(int consumerBatchSize, Duration ackTimeout, long stalenessLimit, int rank) {
        if (rank < 0 || rank > MAX_RANK) {
            throw new IllegalArgumentException(
                    "batch book: trainer rank " + rank + " is outside [0, " + MAX_RANK + "]");
        }
        this.rank = rank;
        this.consumerBatchSize = consumerBatchSize;
        this.stalenessLimit = stalenessLimit;
        this.outstanding = new HandedOutBatches(ackTimeout);
    }

    /**
     * A coordinator with a ledger attached: from now on a group is batched once its acceptance is
     * written ({@link #acceptRecorded}), and a new batch leaves once its hand-out is ({@link
     * #handOutRecorded}). On the first attach, batch ids start at {@code incarnation << 32 | rank
     * << 24}.
     */
    void attach(long incarnation, boolean first) {
        ledger = true;
        if (first) {
            nextBatchId = (incarnation << 32) | ((long) rank << 24);
        }
    }

    /**
     * Task {@code taskId}'s group was accepted: buffered at once without a ledger, else once its
     * acceptance is written.
     */
    List<Step<P>> accept(long taskId, TrainingGroup group, long now) {
        if (!ledger) {
            buffer.addLast(group);
            return serve(now);
        }
        unrecorded.put(taskId, group);
        return List.of();
    }

    /** The acceptance of {@code taskId} is in the ledger: its group joins the buffer. */
    List<Step<P>> acceptRecorded(long taskId, long now) {
        TrainingGroup group = unrecorded.remove(taskId);
        if (group == null) {
            return List.of();
        }
        buffer.addLast(group);
        return serve(now);
    }

    /** Accepted groups not yet handed out: buffered, or waiting for their acceptance to be written. */
    int backlog() {
        return buffer.size() + unrecorded.size();
    }

    /**
     * {@code puller} asks at {@code now} for a batch, to be answered by {@code deadlineNanos};
     * {@code holder} names it, and {@code leaseMillis} above 0 is its lease.
     */
    List<Step<P>> pull(P puller, String holder, long leaseMillis, long deadlineNanos, long now) {
        waiting.addLast(new Waiting<>(puller, holder, leaseMillis, deadlineNanos));
        return serve(now);
    }

    /** The weight version is now {@code v}, if newer; true when it moved. */
    boolean advanceVersion(int v) {
        if (v <= version) {
            return false;
        }
        version = v;
        return true;
    }

    int version() {
        return version;
    }

    /**
     * Serves waiting pulls in arrival order: batches back for delivery first, then new ones. A new
     * batch leaves once the coordinator has written that its tasks are handed out: a successor must
     * know which accepted tasks a trainer may hold.
     */
    List<Step<P>> serve(long now) {
        List<Step<P>> steps = new ArrayList<>();
        while (!waiting.isEmpty()) {
            boolean fresh = redeliveries.isEmpty();
            TrainingBatch batch = nextBatch(steps);
            if (batch == null) {
                break;
            }
            Waiting<P> w = waiting.pollFirst();
            if (fresh && ledger) {
                marking.put(batch.batchId(), new Marking<>(batch, w));
                steps.add(new MarkHandOut<>(batch));
            } else {
                steps.add(handOut(batch, w, now));
            }
        }
        return steps;
    }

    /** The coordinator wrote the hand-out of batch {@code batchId}: it goes to the pull it was formed for. */
    List<Step<P>> handOutRecorded(long batchId, long now) {
        Marking<P> m = marking.remove(batchId);
        return m == null ? List.of() : List.of(handOut(m.batch(), m.pull(), now));
    }

    private HandOut<P> handOut(TrainingBatch batch, Waiting<P> w, long now) {
        outstanding.handOut(batch, w.holder(), Duration.ofMillis(Math.max(0, w.leaseMillis())), now);
        return new HandOut<>(batch, w.puller());
    }

    private TrainingBatch nextBatch(List<Step<P>> steps) {
        if (!redeliveries.isEmpty()) {
            return redeliveries.pollFirst();
        }
        dropStale(steps);
        if (buffer.size() < consumerBatchSize) {
            return null;
        }
        List<TrainingGroup> groups = new ArrayList<>(consumerBatchSize);
        for (int i = 0; i < consumerBatchSize; i++) {
            groups.add(buffer.pollFirst());
        }
        steps.add(new Formed<>(backlog()));
        return new TrainingBatch(nextBatchId++, groups, version);
    }

    /** Strict staleness: drops buffered groups dispatched more than η versions before now. */
    private void dropStale(List<Step<P>> steps) {
        if (stalenessLimit == Long.MAX_VALUE) {
            return;
        }
        for (Iterator<TrainingGroup> it = buffer.iterator(); it.hasNext(); ) {
            TrainingGroup g = it.next();
            if ((long) version - g.dispatchVersion() > stalenessLimit) {
                it.remove();
                steps.add(new DroppedStale<>(g, version, backlog()));
            }
        }
    }

    /**
     * A trainer acknowledged batch {@code batchId}: it is forgotten, whether handed out or back for
     * delivery. Returns it, or null when this book does not hold it.
     */
    TrainingBatch acknowledge(long batchId) {
        TrainingBatch batch = outstanding.remove(batchId);
        if (batch != null) {
            return batch;
        }
        for (Iterator<TrainingBatch> it = redeliveries.iterator(); it.hasNext(); ) {
            TrainingBatch b = it.next();
            if (b.batchId() == batchId) {
                it.remove();
                return b;
            }
        }
        return null;
    }

    /**
     * A predecessor's batch of {@code taskIds} was acknowledged: their groups, here again, are
     * taken out of the buffer and of those waiting for their acceptance to be written, so they are
     * not handed out twice. True when the backlog changed.
     */
    boolean retire(Set<Long> taskIds) {
        boolean unbuffered = buffer.removeIf(g -> taskIds.contains(g.taskId()));
        return unrecorded.keySet().removeAll(taskIds) || unbuffered;
    }

    /** The ids of the batches handed out that carry any of {@code taskIds}, in hand-out order. */
    List<Long> handedOutWithAnyOf(Set<Long> taskIds) {
        List<Long> ids = new ArrayList<>();
        for (TrainingBatch b : outstanding.batches()) {
            if (b.groups().stream().anyMatch(g -> taskIds.contains(g.taskId()))) {
                ids.add(b.batchId());
            }
        }
        return ids;
    }

    /**
     * Batch {@code batchId} never reached its trainer: it goes first to the next pull. False when
     * it is not handed out (acknowledged, or already back for delivery).
     */
    boolean release(long batchId) {
        TrainingBatch released = outstanding.remove(batchId);
        if (released == null) {
            return false;
        }
        outstanding.returned(batchId, "it did not reach its trainer");
        redeliveries.addFirst(released);
        return true;
    }

    /** Takes out the pulls whose deadline has passed at {@code now}: each gets an empty reply. */
    List<P> expirePulls(long now) {
        List<P> expired = new ArrayList<>();
        for (Iterator<Waiting<P>> it = waiting.iterator(); it.hasNext(); ) {
            Waiting<P> w = it.next();
            if (now - w.deadlineNanos() >= 0) {
                it.remove();
                expired.add(w.puller());
            }
        }
        return expired;
    }

    /**
     * The batches handed out and due at {@code now} (unacknowledged after {@code
     * batch_ack_timeout}, or their lease lapsed) go back, to be delivered again as they were.
     */
    List<HandedOutBatches.Due> returnDue(long now) {
        List<HandedOutBatches.Due> due = outstanding.takeDue(now);
        due.forEach(d -> redeliveries.addLast(d.batch()));
        return due;
    }

    /**
     * Renews, at {@code now}, for {@code leaseMillis}, the lease of every batch {@code holder}
     * pulled under a lease; their ids. A renewal without a lease ({@code leaseMillis} 0 or less)
     * renews nothing.
     */
    List<Long> renew(String holder, long leaseMillis, long now) {
        return leaseMillis > 0 ? outstanding.renew(holder, Duration.ofMillis(leaseMillis), now) : List.of();
    }

    /** The pullers waiting, in arrival order. */
    List<P> waitingPullers() {
        return waiting.stream().map(Waiting::puller).toList();
    }

    /** Every accepted group not yet acknowledged, by task id: unrecorded, buffered, in a batch. */
    Map<Long, TrainingGroup> groupsHeld() {
        Map<Long, TrainingGroup> held = new HashMap<>(unrecorded);
        buffer.forEach(g -> held.put(g.taskId(), g));
        outstanding.batches().forEach(b -> b.groups().forEach(g -> held.put(g.taskId(), g)));
        marking.values().forEach(m -> m.batch().groups().forEach(g -> held.put(g.taskId(), g)));
        redeliveries.forEach(b -> b.groups().forEach(g -> held.put(g.taskId(), g)));
        return held;
    }

    /** New batches whose hand-out the coordinator is writing, in the order they were formed. */
    Collection<TrainingBatch> marking() {
        return marking.values().stream().map(Marking::batch).toList();
    }

    /** Batches formed and not acknowledged: handed out, back for delivery, or being marked. */
    int unacknowledged() {
        return outstanding.size() + redeliveries.size() + marking.size();
    }

    /** The batches handed out and not acknowledged at {@code now}: those held by trainers, then those back for the next pull. */
    List<HeldBatch> heldBatches(long now) {
        List<HeldBatch> all = new ArrayList<>(outstanding.status(now));
        redeliveries.forEach(b -> all.add(outstanding.waiting(b)));
        return all;
    }
}
