package org.rollout.workflows.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.TrainingBatch;
import org.rollout.modelserver.TinyLmWeights;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.RolloutStatus;
import org.rollout.trainer.WeightPublishException;

/** {@link DemoTraining}: the loop's order of calls, redeliveries, interruption and the initial weights. */
class DemoTrainingTest {
    private static final TinyLmWeights W0 = TinyLmWeights.seeded(2, 0.3, 0.9f);
    private static final int[] PROMPT = {257, 'h', 'i', '\n'};

    @TempDir
    Path dir;

    /** A client serving queued batches and recording every call. */
    private static final class FakeClient implements RolloutClient {
        final BlockingQueue<TrainingBatch> batches = new LinkedBlockingQueue<>();
        final List<String> calls = new ArrayList<>();
        volatile boolean refusePublish;

        @Override
        public TrainingBatch nextBatch() throws InterruptedException {
            TrainingBatch b = batches.take();
            record("next " + b.batchId());
            return b;
        }

        @Override
        public Optional<TrainingBatch> nextBatch(Duration timeout) throws InterruptedException {
            return Optional.ofNullable(batches.poll(timeout.toNanos(), TimeUnit.NANOSECONDS));
        }

        @Override
        public void acknowledge(TrainingBatch batch) {
            record("ack " + batch.batchId());
        }

        @Override
        public PublishResult publishWeights(int version, Path weights) {
            if (refusePublish) {
                throw new WeightPublishException("version " + version + " refused: the engine is at version 9");
            }
            record("publish " + version + " " + weights.getFileName());
            return new PublishResult(version, Duration.ZERO, 1, Map.of());
        }

        @Override
        public RolloutStatus status() {
            throw new AssertionError("not used");
        }

        @Override
        public void close() {}

        synchronized void record(String call) {
            calls.add(call);
        }

        synchronized List<String> calls() {
            return List.copyOf(calls);
        }
    }

    private static TrainingBatch batch(long id) {
        return Rows.batch(
                id,
                Rows.group(
                        id,
                        Rows.onPolicy(W0, PROMPT, new int[] {'a', 'b'}, 1.0),
                        Rows.onPolicy(W0, PROMPT, new int[] {'!'}, 0.0)));
    }

    private GrpoTrainer trainer() {
        return new GrpoTrainer(W0, new GrpoTrainer.Config(0.05, 0, 0.2, 1.0, dir));
    }

    @Test
    void eachStepPullsTrainsAcknowledgesPublishesThenReports() throws Exception {
        FakeClient client = new FakeClient();
        client.batches.add(batch(10));
        client.batches.add(batch(11));
        List<String> heard = new ArrayList<>();

        List<StepReport> reports = DemoTraining.run(client, trainer(), 2, r -> {
            heard.add("report v" + r.version());
            client.record("listener v" + r.version());
        });

        assertThat(client.calls())
                .containsExactly(
                        "next 10",
                        "ack 10",
                        "publish 1 v1.rlm",
                        "listener v1",
                        "next 11",
                        "ack 11",
                        "publish 2 v2.rlm",
                        "listener v2");
        assertThat(reports).extracting(StepReport::version).containsExactly(1, 2);
        assertThat(reports).extracting(StepReport::batchId).containsExactly(10L, 11L);
        assertThat(heard).containsExactly("report v1", "report v2");
    }

    @Test
    void aRedeliveredBatchIsAcknowledgedAgainButNotTrainedTwice() throws Exception {
        FakeClient client = new FakeClient();
        client.batches.add(batch(10));
        client.batches.add(batch(10));
        client.batches.add(batch(11));

        List<StepReport> reports = DemoTraining.run(client, trainer(), 2, r -> {});

        assertThat(client.calls())
                .containsExactly(
                        "next 10",
                        "ack 10",
                        "publish 1 v1.rlm",
                        "next 10",
                        "ack 10",
                        "next 11",
                        "ack 11",
                        "publish 2 v2.rlm");
        assertThat(reports).extracting(StepReport::batchId).containsExactly(10L, 11L);
    }

    @Test
    void interruptionWhileWaitingForABatchEndsTheRun() throws Exception {
        FakeClient client = new FakeClient();
        client.batches.add(batch(10));
        GrpoTrainer trainer = trainer();
        CompletableFuture<Throwable> ended = new CompletableFuture<>();
        CompletableFuture<Void> firstStep = new CompletableFuture<>();
        Thread t = Thread.ofVirtual().start(() -> {
            try {
                DemoTraining.run(client, trainer, 5, r -> firstStep.complete(null));
                ended.complete(null);
            } catch (Throwable e) {
                ended.complete(e);
            }
        });
        firstStep.get(10, TimeUnit.SECONDS);

        t.interrupt();

        assertThat(ended.get(10, TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);
        assertThat(trainer.version()).isEqualTo(1);
    }

    @Test
    void aRefusedPublishEndsTheRunWithTheEnginesReason() {
        FakeClient client = new FakeClient();
        client.batches.add(batch(10));
        client.refusePublish = true;

        assertThatThrownBy(() -> DemoTraining.run(client, trainer(), 1, r -> {}))
                .isInstanceOf(WeightPublishException.class)
                .hasMessage("version 1 refused: the engine is at version 9");
    }

    @Test
    void initialWeightsAreTheSeededDemoModelAsVersionZero() throws Exception {
        Path weightsDir = dir.resolve("run/weights");

        Path v0 = DemoTraining.initialWeights(4, weightsDir);

        DemoConfig d = DemoConfig.defaults();
        assertThat(v0).isEqualTo(weightsDir.resolve("v0.rlm"));
        assertThat(TinyLmWeights.read(v0)).isEqualTo(TinyLmWeights.seeded(4, d.initStd(), d.decay()));
        assertThat(TinyLmWeights.read(v0).decay()).isEqualTo(1.0f);
    }

    @Test
    void initialWeightsThatCannotBeWrittenNameThePath() throws Exception {
        Path notADirectory = java.nio.file.Files.writeString(dir.resolve("file"), "x");

        assertThatThrownBy(() -> DemoTraining.initialWeights(4, notADirectory))
                .isInstanceOf(org.rollout.modelserver.WeightFileException.class)
                .hasMessageContaining(notADirectory.resolve("v0.rlm").toString())
                .hasMessageContaining("cannot create the weights directory");
    }
}
