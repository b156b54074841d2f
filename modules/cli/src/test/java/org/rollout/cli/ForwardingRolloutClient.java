package org.rollout.cli;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.rollout.api.TrainingBatch;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.RolloutStatus;

/** A client that passes every call to {@code inner}; tests override what they observe or change. */
class ForwardingRolloutClient implements RolloutClient {
    protected final RolloutClient inner;

    ForwardingRolloutClient(RolloutClient inner) {
        this.inner = inner;
    }

    @Override
    public TrainingBatch nextBatch() throws InterruptedException {
        return inner.nextBatch();
    }

    @Override
    public Optional<TrainingBatch> nextBatch(Duration timeout) throws InterruptedException {
        return inner.nextBatch(timeout);
    }

    @Override
    public void acknowledge(TrainingBatch batch) throws InterruptedException {
        inner.acknowledge(batch);
    }

    @Override
    public PublishResult publishWeights(int version, Path weights) throws InterruptedException {
        return inner.publishWeights(version, weights);
    }

    @Override
    public RolloutStatus status() throws InterruptedException {
        return inner.status();
    }

    @Override
    public void close() {
        inner.close();
    }
}
