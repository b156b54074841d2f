package org.rollout.gateway;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.rollout.api.TrainingBatch;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.RolloutStatus;

/** The engine-side client as the gateway calls it, recording what the engine handed out and heard. */
final class RecordingClient implements RolloutClient {
    final RolloutClient inner;
    final List<TrainingBatch> handedOut = new CopyOnWriteArrayList<>();
    final List<Long> acknowledged = new CopyOnWriteArrayList<>();
    final List<PublishResult> published = new CopyOnWriteArrayList<>();

    RecordingClient(RolloutClient inner) {
        this.inner = inner;
    }

    @Override
    public TrainingBatch nextBatch() throws InterruptedException {
        TrainingBatch b = inner.nextBatch();
        handedOut.add(b);
        return b;
    }

    @Override
    public Optional<TrainingBatch> nextBatch(Duration timeout) throws InterruptedException {
        Optional<TrainingBatch> b = inner.nextBatch(timeout);
        b.ifPresent(handedOut::add);
        return b;
    }

    @Override
    public void acknowledge(TrainingBatch batch) throws InterruptedException {
        acknowledged.add(batch.batchId());
        inner.acknowledge(batch);
    }

    @Override
    public PublishResult publishWeights(int version, Path weights) throws InterruptedException {
        PublishResult r = inner.publishWeights(version, weights);
        published.add(r);
        return r;
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
