package org.rollout.gateway;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.rollout.api.TrainingBatch;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.RolloutStatus;

/**
 * An engine-side client whose answers a test sets: a batch to hand out once, a failure to throw, or
 * a pull that blocks until interrupted.
 */
final class FakeEngine implements RolloutClient {
    static final RolloutStatus STATUS = new RolloutStatus(3, 0, 6, 0, 2, 0, 0, 0, 60, Map.of(), Map.of());

    volatile TrainingBatch batch;
    volatile RuntimeException failure;
    volatile boolean blockPulls;
    volatile Duration lastWait;
    final AtomicInteger pulls = new AtomicInteger();
    final CountDownLatch pullStarted = new CountDownLatch(1);

    @Override
    public TrainingBatch nextBatch() throws InterruptedException {
        throw new AssertionError("the gateway pulls with a timeout");
    }

    @Override
    public Optional<TrainingBatch> nextBatch(Duration timeout) throws InterruptedException {
        pulls.incrementAndGet();
        lastWait = timeout;
        pullStarted.countDown();
        if (failure != null) {
            throw failure;
        }
        if (blockPulls) {
            new CountDownLatch(1).await(); // only interruption ends it
        }
        TrainingBatch b = batch;
        batch = null;
        return Optional.ofNullable(b);
    }

    /** The lease of the last pull that had one, and of the last renewal. */
    volatile org.rollout.trainer.BatchLease lastLease;

    volatile org.rollout.trainer.BatchLease lastRenewal;

    @Override
    public Optional<TrainingBatch> nextBatch(Duration timeout, org.rollout.trainer.BatchLease lease)
            throws InterruptedException {
        lastLease = lease;
        return nextBatch(timeout);
    }

    /** Renewals received, and the batch ids they answer (7 until a test changes it). */
    final AtomicInteger renewals = new AtomicInteger();

    volatile java.util.List<Long> renewedIds = java.util.List.of(7L);

    @Override
    public java.util.List<Long> renewLease(org.rollout.trainer.BatchLease lease) {
        lastRenewal = lease;
        renewals.incrementAndGet();
        return renewedIds;
    }

    /** The last acknowledgement: batch id and the task ids it came with. */
    volatile long lastAckBatch = -1;

    volatile java.util.List<Long> lastAckTaskIds;

    @Override
    public void acknowledge(TrainingBatch b) {
        if (failure != null) {
            throw failure;
        }
    }

    @Override
    public void acknowledge(long batchId, java.util.List<Long> taskIds) {
        if (failure != null) {
            throw failure;
        }
        lastAckBatch = batchId;
        lastAckTaskIds = taskIds;
    }

    @Override
    public PublishResult publishWeights(int version, Path weights) {
        if (failure != null) {
            throw failure;
        }
        return new PublishResult(version, Duration.ofMillis(3), 1, Map.of());
    }

    @Override
    public RolloutStatus status() {
        if (failure != null) {
            throw failure;
        }
        return STATUS;
    }

    @Override
    public void close() {}
}
