package org.rollout.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.gateway.TestRollout.await;

import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.cluster.LocalRollout;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.RolloutStatus;
import org.rollout.trainer.WeightPublishException;

/** A real engine (LocalRollout, scripted generations) behind the gateway, driven over HTTP on 127.0.0.1. */
class TrainerGatewayEndToEndTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);

    private static ClientConfig config(TrainerGateway g) {
        return ClientConfig.of(g.uri().toString())
                .withPollWait(Duration.ofSeconds(2))
                .withRetry(Duration.ofMillis(50), Duration.ofMillis(200), Duration.ofSeconds(5));
    }

    private static RolloutStatus status(RolloutClient c) {
        try {
            return c.status();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @Test
    void aRemoteTrainerPullsAcknowledgesPublishesAndReadsStatusAsALocalOneWould() throws Exception {
        TestRollout t = new TestRollout(5);
        try (LocalRollout rollout = t.start();
                RecordingClient engineSide = new RecordingClient(rollout.client());
                TrainerGateway gateway = TrainerGateway.start(GatewayConfig.defaults(), engineSide);
                RolloutClient remote = RolloutClient.connect(config(gateway))) {
            // With η = 0, admission stops at two accepted groups: a state that holds still.
            await(
                    "two accepted groups",
                    DEADLINE,
                    () -> status(rollout.client()).accepted() == 2
                            && status(rollout.client()).running() == 0);
            assertThat(remote.status()).isEqualTo(rollout.client().status());

            for (int step = 0; step < 3; step++) {
                TrainingBatch batch = remote.nextBatch();
                assertThat(engineSide.handedOut).hasSize(step + 1);
                assertThat(batch).isEqualTo(engineSide.handedOut.get(step));
                assertThat(batch.groups()).hasSize(t.consumerBatchSize);
                for (TrainingGroup g : batch.groups()) {
                    assertThat(g.rowCount()).isEqualTo(t.groupSize);
                    assertThat(g.headVersion()).isEqualTo(step);
                    assertThat(g.rows().keys())
                            .containsSubsequence(TensorDict.INPUT_IDS, TensorDict.LOGPROBS, TensorDict.VERSIONS);
                }
                remote.acknowledge(batch);
                assertThat(engineSide.acknowledged).endsWith(batch.batchId());
                PublishResult published = remote.publishWeights(step + 1, Path.of("/weights/v" + (step + 1)));
                assertThat(published).isEqualTo(engineSide.published.get(step));
                assertThat(published.version()).isEqualTo(step + 1);
            }
            assertThat(remote.status().version()).isEqualTo(3);
            assertThat(remote.status().unacknowledgedBatches()).isZero();
        }
    }

    @Test
    void aTrainerThatDisconnectsMidBatchGetsTheSameBatchAgainAfterTheAckTimeout() throws Exception {
        // One batch in all, of about 34 MB (8 rows of 250 000 tokens), acknowledged after 2 s or delivered again.
        TestRollout t = new TestRollout(250_000);
        t.maxNewTokens = 250_000;
        t.prompts = t.consumerBatchSize;
        t.ackTimeout = Duration.ofSeconds(2);
        try (LocalRollout rollout = t.start();
                RecordingClient engineSide = new RecordingClient(rollout.client());
                TrainerGateway gateway = TrainerGateway.start(GatewayConfig.defaults(), engineSide);
                HttpClient http = HttpClient.newBuilder()
                        .version(HttpClient.Version.HTTP_1_1)
                        .build();
                RolloutClient remote = RolloutClient.connect(config(gateway))) {
            HttpResponse<InputStream> first = http.send(
                    HttpRequest.newBuilder(URI.create(gateway.uri() + "/v1/batches/next?wait=30"))
                            .POST(HttpRequest.BodyPublishers.noBody())
                            .build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            assertThat(first.statusCode()).isEqualTo(200);
            long firstId = Long.parseLong(
                    first.headers().firstValue("X-Rollout-Batch-Id").orElseThrow());
            try (InputStream body = first.body()) {
                assertThat(body.readNBytes(100_000)).hasSize(100_000); // a small part, then the trainer "crashes"
            }

            TrainingBatch again = remote.nextBatch(DEADLINE).orElseThrow();
            assertThat(again.batchId()).isEqualTo(firstId);
            assertThat(engineSide.handedOut).hasSize(2);
            assertThat(again).isEqualTo(engineSide.handedOut.get(0));
            assertThat(again.groups().get(0).rows().tensor(TensorDict.INPUT_IDS).dim(1))
                    .isGreaterThanOrEqualTo(250_000);
            remote.acknowledge(again);
            assertThat(remote.status().unacknowledgedBatches()).isZero();
        }
    }

    @Test
    void aPublishThatDoesNotIncreaseTheVersionIsRefusedWithTheEnginesReason() throws Exception {
        TestRollout t = new TestRollout(5);
        try (LocalRollout rollout = t.start();
                TrainerGateway gateway = TrainerGateway.start(GatewayConfig.defaults(), rollout.client());
                RolloutClient remote = RolloutClient.connect(config(gateway))) {
            remote.publishWeights(2, Path.of("/weights/v2"));
            assertThatThrownBy(() -> remote.publishWeights(1, Path.of("/weights/v1")))
                    .isInstanceOfSatisfying(
                            WeightPublishException.class,
                            e -> assertThat(e.kind()).isEqualTo(WeightPublishException.Kind.REFUSED))
                    .hasMessage(
                            "version 1 is not newer than the current version 2; a publish must increase the version");
            assertThat(remote.status().version()).isEqualTo(2);
        }
    }

    @Test
    void weightsThatNoServerLoadedAreAFailureOfKindNotLoaded() throws Exception {
        TestRollout t = new TestRollout(5);
        t.publisher = (path, version) ->
                new PublishResult(version, Duration.ofMillis(1), 0, Map.of("127.0.0.1:30000", "HTTP 500: disk full"));
        try (LocalRollout rollout = t.start();
                TrainerGateway gateway = TrainerGateway.start(GatewayConfig.defaults(), rollout.client());
                RolloutClient remote = RolloutClient.connect(config(gateway))) {
            assertThatThrownBy(() -> remote.publishWeights(1, Path.of("/weights/v1")))
                    .isInstanceOfSatisfying(
                            WeightPublishException.class,
                            e -> assertThat(e.kind()).isEqualTo(WeightPublishException.Kind.NOT_LOADED))
                    .hasMessage("no server loaded /weights/v1 as version 1: {127.0.0.1:30000=HTTP 500: disk full}");
            assertThat(remote.status().version()).isZero();
        }
    }
}
