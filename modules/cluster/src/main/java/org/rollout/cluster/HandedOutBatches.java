package org.rollout.cluster;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.rollout.api.TrainingBatch;
import org.rollout.trainer.HeldBatch;

/**
 * The collector's batches handed out and not yet acknowledged, each with its holder and the time
 * it goes back to the next pull: {@code batch_ack_timeout} after hand-out, or earlier when it was
 * pulled under a lease that lapses unrenewed. Pure state (times are passed in, in nanoseconds of
 * {@link System#nanoTime}); the collector owns one and is its only user.
 */
final class HandedOutBatches {

    /** A batch due to go back, and why, for the log. */
    record Due(TrainingBatch batch, String why) {}

    private record Held(TrainingBatch batch, String holder, long handedOut, long leaseNanos, long leaseUntil) {
        boolean leased() {
            return leaseNanos > 0;
        }
    }

    private final long ackTimeoutNanos;
    private final Duration ackTimeout;
    private final LinkedHashMap<Long, Held> held = new LinkedHashMap<>();
    /** Why each batch that went back waits for the next pull, until it is handed out or acknowledged. */
    private final Map<Long, String> returned = new HashMap<>();

    HandedOutBatches(Duration ackTimeout) {
        this.ackTimeout = ackTimeout;
        this.ackTimeoutNanos = ackTimeout.toNanos();
    }

    /**
     * {@code batch} is handed out at {@code now} to {@code holder} (a name for the status; blank
     * for an unnamed puller), under a lease of {@code lease} when it is above zero.
     */
    void handOut(TrainingBatch batch, String holder, Duration lease, long now) {
        long leaseNanos = lease == null || lease.isNegative() ? 0 : lease.toNanos();
        String name = holder == null || holder.isBlank() ? "an unnamed trainer" : holder;
        returned.remove(batch.batchId());
        held.put(batch.batchId(), new Held(batch, name, now, leaseNanos, now + leaseNanos));
    }

    /** Takes batch {@code batchId} out (acknowledged, released); null when it is not held. */
    TrainingBatch remove(long batchId) {
        returned.remove(batchId);
        Held h = held.remove(batchId);
        return h == null ? null : h.batch();
    }

    /**
     * Renews, at {@code now}, the lease of every batch {@code holder} pulled under a lease, for
     * {@code lease} from now; returns their ids in hand-out order.
     */
    List<Long> renew(String holder, Duration lease, long now) {
        List<Long> renewed = new ArrayList<>();
        for (Map.Entry<Long, Held> e : held.entrySet()) {
            Held h = e.getValue();
            if (h.leased() && h.holder().equals(holder)) {
                e.setValue(new Held(h.batch(), h.holder(), h.handedOut(), lease.toNanos(), now + lease.toNanos()));
                renewed.add(e.getKey());
            }
        }
        return renewed;
    }

    /** Takes out, in hand-out order, every batch due at {@code now}: its lease lapsed or it waited out the timeout. */
    List<Due> takeDue(long now) {
        List<Due> due = new ArrayList<>();
        for (Iterator<Held> it = held.values().iterator(); it.hasNext(); ) {
            Held h = it.next();
            if (h.leased() && now - h.leaseUntil() >= 0) {
                it.remove();
                returned.put(h.batch().batchId(), "the lease of " + h.holder() + " lapsed");
                due.add(new Due(
                        h.batch(),
                        "the lease of its holder " + h.holder() + " lapsed (not renewed for "
                                + Duration.ofNanos(h.leaseNanos()).toMillis() / 1000.0
                                + " s: the trainer is gone or stuck); it goes to the next pull"));
            } else if (now - h.handedOut() >= ackTimeoutNanos) {
                it.remove();
                returned.put(h.batch().batchId(), h.holder() + " did not acknowledge it within batch_ack_timeout");
                due.add(new Due(
                        h.batch(),
                        "not acknowledged by " + h.holder() + " within batch_ack_timeout=" + ackTimeout
                                + "; it will be delivered again"));
            }
        }
        return due;
    }

    /** Batch {@code batchId} went back to the next pull because {@code why} (for the status). */
    void returned(long batchId, String why) {
        returned.put(batchId, why);
    }

    /**
     * How the status shows {@code batch}, back and waiting for the next pull: held by nobody,
     * returning now, and why it went back.
     */
    HeldBatch waiting(TrainingBatch batch) {
        String why = returned.getOrDefault(batch.batchId(), "delivered again");
        return new HeldBatch(
                batch.batchId(), batch.size(), "nobody: waiting for the next pull (" + why + ")", false, 0);
    }

    /** The batches held, in hand-out order. */
    Collection<TrainingBatch> batches() {
        return held.values().stream().map(Held::batch).toList();
    }

    int size() {
        return held.size();
    }

    /** What the status shows: each held batch, its holder and the milliseconds until it goes back. */
    List<HeldBatch> status(long now) {
        List<HeldBatch> out = new ArrayList<>(held.size());
        for (Held h : held.values()) {
            long back = h.handedOut() + ackTimeoutNanos;
            if (h.leased()) {
                back = Math.min(back, h.leaseUntil());
            }
            out.add(new HeldBatch(
                    h.batch().batchId(),
                    h.batch().size(),
                    h.holder(),
                    h.leased(),
                    Math.max(0, (back - now) / 1_000_000)));
        }
        return out;
    }
}
