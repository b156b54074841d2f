package org.rollout.trainer;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Keeps a client's {@link BatchLease} alive while it holds batches: from a daemon thread of its
 * own, every third of the lease, it renews the lease as long as some pulled batch is not yet
 * acknowledged, so a long training step does not lose its batch, and a trainer that dies stops
 * renewing with it. A batch the engine no longer holds for this client (the lease lapsed, or a new
 * collector does not know it) is named once in the log and no longer renewed.
 */
final class LeaseKeeper implements AutoCloseable {
    private static final System.Logger log = System.getLogger(LeaseKeeper.class.getName());

    /** One renewal: the ids of the batches the engine now holds for the lease's holder. */
    @FunctionalInterface
    interface Renewal {
        List<Long> renew(BatchLease lease) throws Exception;
    }

    private final BatchLease lease;
    private final Renewal renewal;
    private final Set<Long> held = ConcurrentHashMap.newKeySet();
    private final ScheduledExecutorService thread;
    private long failuresInARow;

    LeaseKeeper(BatchLease lease, Renewal renewal) {
        this.lease = lease;
        this.renewal = renewal;
        this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "rollout-client-lease");
            t.setDaemon(true);
            return t;
        });
        long every = Math.max(1, lease.duration().toMillis() / 3);
        thread.scheduleWithFixedDelay(this::renewNow, every, every, TimeUnit.MILLISECONDS);
    }

    BatchLease lease() {
        return lease;
    }

    /** Batch {@code batchId} was pulled under the lease: it is renewed until {@link #done}. */
    void holding(long batchId) {
        held.add(batchId);
    }

    /** Batch {@code batchId} was acknowledged (or given back): no more renewals for it. */
    void done(long batchId) {
        held.remove(batchId);
    }

    /** The batches renewed for now. */
    Set<Long> held() {
        return Set.copyOf(held);
    }

    /** One renewal round, now (the thread's task; tests call it directly). */
    void renewNow() {
        if (held.isEmpty()) {
            return;
        }
        Set<Long> before = new HashSet<>(held);
        List<Long> kept;
        try {
            kept = renewal.renew(lease);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        } catch (Exception e) {
            failuresInARow++;
            if (failuresInARow == 1 || failuresInARow % 10 == 0) {
                log.log(
                        System.Logger.Level.WARNING,
                        "renewing the lease of {0} on batches {1} failed ({2} in a row): {3}; they go back to"
                                + " other trainers {4} s after the last renewal",
                        lease.holder(),
                        before,
                        failuresInARow,
                        e.toString(),
                        lease.duration().toSeconds());
            }
            return;
        }
        failuresInARow = 0;
        before.removeAll(kept);
        for (long lost : before) {
            if (held.remove(lost)) {
                log.log(
                        System.Logger.Level.WARNING,
                        "batch {0} is no longer held for {1} (its lease lapsed, or the engine''s collector"
                                + " moved and does not know it): it may be delivered to another trainer; its"
                                + " acknowledgement still retires its tasks",
                        lost,
                        lease.holder());
            }
        }
    }

    @Override
    public void close() {
        thread.shutdownNow();
    }
}
