package org.rollout.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.gateway.TestRollout.await;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.cluster.LocalRollout;
import org.rollout.cluster.LocalRolloutClient;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.RolloutClient;

/**
 * A trainer of two data-parallel ranks ({@code rollout.train_data_parallel_size = 2}) behind one
 * gateway, over HTTP on 127.0.0.1: each rank's client pulls with {@code rank=r} and gets that
 * rank's batches, acknowledges them (the gateway finds the rank in the batch id) and reads that
 * rank's status; a rank outside the run is refused naming the parameter.
 */
class TrainerRanksGatewayTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);

    private static ClientConfig config(TrainerGateway g, int rank) {
        return ClientConfig.of(g.uri().toString())
                .withPollWait(Duration.ofSeconds(2))
                .withRetry(Duration.ofMillis(50), Duration.ofMillis(200), Duration.ofSeconds(5))
                .withRank(rank);
    }

    @Test
    void eachRanksClientPullsAcknowledgesAndReadsTheStatusOfItsOwnRank() throws Exception {
        TestRollout t = new TestRollout(5);
        t.consumerBatchSize = 4;
        t.maxConcurrent = 8;
        try (LocalRollout rollout = LocalRollout.start(t.spec().withTrainerRanks(2), TestRollout.PEKKO);
                TrainerGateway gateway = TrainerGateway.start(
                        GatewayConfig.defaults(), List.of(rollout.client(0), rollout.client(1)), GatewayExtras.NONE);
                RolloutClient rank0 = RolloutClient.connect(config(gateway, 0));
                RolloutClient rank1 = RolloutClient.connect(config(gateway, 1))) {
            List<RolloutClient> ranks = List.of(rank0, rank1);
            Set<Long> delivered = new HashSet<>();
            for (int step = 0; step < 3; step++) {
                for (int r = 0; r < 2; r++) {
                    TrainingBatch batch = ranks.get(r).nextBatch(DEADLINE).orElseThrow();
                    assertThat(batch.groups()).hasSize(2);
                    for (TrainingGroup g : batch.groups()) {
                        assertThat(delivered.add(g.taskId())).isTrue();
                        assertThat(g.taskId() % 2).isEqualTo((long) r);
                        assertThat(g.headVersion()).isEqualTo(step);
                    }
                    ranks.get(r).acknowledge(batch);
                }
                rank1.publishWeights(step + 1, Path.of("/weights/v" + (step + 1)));
            }
            // Each rank's status over HTTP is that rank's, and nothing is left unacknowledged.
            for (int r = 0; r < 2; r++) {
                LocalRolloutClient engine = rollout.client(r);
                RolloutClient remote = ranks.get(r);
                await("rank " + r + " at rest", DEADLINE, () -> {
                    try {
                        return remote.status().equals(engine.status());
                    } catch (InterruptedException e) {
                        throw new AssertionError(e);
                    }
                });
                assertThat(remote.status().version()).isEqualTo(3);
                assertThat(remote.status().unacknowledgedBatches()).isZero();
                // The statistics its collector wrote: versions 0 to 2 (a publish writes the one before it).
                assertThat(remote.stats(0).lines()).isNotEmpty();
            }
            assertThat(delivered).hasSize(12);
        }
    }

    @Test
    void aRankTheRunDoesNotHaveIsRefusedNamingTheParameter() throws Exception {
        TestRollout t = new TestRollout(5);
        t.consumerBatchSize = 4;
        try (LocalRollout rollout = LocalRollout.start(t.spec().withTrainerRanks(2), TestRollout.PEKKO);
                TrainerGateway gateway = TrainerGateway.start(
                        GatewayConfig.defaults(), List.of(rollout.client(0), rollout.client(1)), GatewayExtras.NONE);
                HttpClient http = HttpClient.newHttpClient()) {
            List<String> bodies = new ArrayList<>();
            for (String path : List.of("/v1/batches/next?wait=0&rank=2", "/v1/status?rank=x", "/v1/stats?rank=-1")) {
                HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(gateway.uri() + path));
                HttpResponse<String> resp = http.send(
                        path.contains("batches")
                                ? b.POST(HttpRequest.BodyPublishers.noBody()).build()
                                : b.GET().build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(resp.statusCode()).as(path).isEqualTo(400);
                bodies.add(resp.body());
            }
            assertThat(bodies)
                    .allSatisfy(body -> assertThat(body)
                            .contains("bad_request")
                            .contains("'rank'")
                            .contains("from 0 to 1")
                            .contains("train_data_parallel_size = 2"));
        }
    }
}
