package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.ConfigFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.TrainingBatch;
import org.rollout.cluster.LocalRollout;
import org.rollout.config.RolloutConfig;
import org.rollout.config.RolloutSettings;
import org.rollout.gateway.GatewayConfig;
import org.rollout.gateway.TrainerGateway;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.testing.SamePort;
import org.rollout.trainer.WeightPublishException;
import org.rollout.workflows.demo.DemoConfig;
import org.rollout.workflows.demo.DemoTraining;

/**
 * The gateway's {@code GET /health} in front of a running engine with two real model servers: ok
 * while they serve, 503 naming the servers when both are down, ok again once one is back; 503
 * naming the coordinator once the engine behind the gateway has stopped.
 */
class GatewayHealthEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static final Duration DEADLINE = Duration.ofSeconds(60);

    private record Answer(int status, String body) {}

    private static Answer health(URI gateway) throws Exception {
        HttpResponse<String> r = HTTP.send(
                HttpRequest.newBuilder(gateway.resolve("/health"))
                        .timeout(Duration.ofSeconds(10))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        return new Answer(r.statusCode(), r.body());
    }

    /** Polls /health until {@code until} holds, failing with the last answer at the deadline. */
    private static Answer awaitHealth(URI gateway, Predicate<Answer> until, String what) {
        java.util.concurrent.atomic.AtomicReference<Answer> last = new java.util.concurrent.atomic.AtomicReference<>();
        org.awaitility.Awaitility.await(what)
                .atMost(DEADLINE)
                .pollInterval(Duration.ofMillis(100))
                .untilAsserted(() -> {
                    last.set(health(gateway));
                    assertThat(last.get()).as("%s; last answer", what).matches(until);
                });
        return last.get();
    }

    private static ModelServer server(int port, Path weights) throws Exception {
        return ModelServer.start(ModelServerConfig.defaults().withPort(port).withWeightsPath(weights));
    }

    @Test
    void degradedWhileNoServerIsInRotationAndWhenTheCoordinatorIsGone(@TempDir Path dir) throws Exception {
        Path v0 = DemoTraining.initialWeights(DemoConfig.defaults(), dir.resolve("weights"));
        ModelServer a = server(0, v0);
        ModelServer b = server(0, v0);
        int portA = a.port();
        List<AutoCloseable> toClose = new ArrayList<>();
        AtomicBoolean training = new AtomicBoolean(true);
        Thread trainer = null;
        ModelServer back = null;
        try {
            RolloutSettings settings = RolloutConfig.load(
                    null,
                    List.of(
                            "rollout.fileroot=" + dir,
                            "rollout.trial_name=health",
                            "rollout.servers=127.0.0.1:" + portA + ",127.0.0.1:" + b.port(),
                            "rollout.health_check_interval=0.2",
                            "rollout.request_retries=2",
                            "rollout.retry_backoff_initial=0.05",
                            "rollout.retry_backoff_max=0.2",
                            "gconfig.n_samples=2",
                            "gconfig.max_new_tokens=8",
                            "rollout.consumer_batch_size=2"),
                    LocalCommand.profile("demo"));
            RemoteInferenceEngine engine = new RemoteInferenceEngine(settings.inferenceConfig());
            toClose.add(engine);
            engine.initialize();
            NodeAssembly assembly = new NodeAssembly(settings, true, false, toClose).prepare();
            LocalRollout rollout = LocalRollout.start(
                    assembly.spec(engine, dir.resolve("stats.jsonl")),
                    ConfigFactory.parseString("pekko.loglevel = WARNING\npekko.coordinated-shutdown.exit-jvm = off")
                            .withFallback(settings.config())
                            .withFallback(ConfigFactory.load()));
            toClose.add(rollout);
            NodeObservability observability =
                    new NodeObservability("health", engine, rollout.stats(), rollout.client());
            toClose.add(observability);
            TrainerGateway gateway = TrainerGateway.start(
                    GatewayConfig.defaults().withPort(0), rollout.client(), observability.gatewayExtras());
            toClose.add(gateway);
            URI uri = gateway.uri();
            // A trainer that keeps the engine generating: pull, acknowledge, publish the next version.
            trainer = Thread.ofVirtual().start(() -> {
                int version = 0;
                while (training.get()) {
                    try {
                        Optional<TrainingBatch> batch = rollout.client().nextBatch(Duration.ofMillis(200));
                        if (batch.isPresent()) {
                            rollout.client().acknowledge(batch.get());
                            rollout.client().publishWeights(version + 1, v0);
                            version++;
                        }
                    } catch (WeightPublishException e) {
                        // No server loaded it (both down): the version stays; try again with the next batch.
                    } catch (InterruptedException e) {
                        return;
                    } catch (RuntimeException e) {
                        if (!training.get()) {
                            return;
                        }
                    }
                }
            });

            Answer ok = awaitHealth(uri, h -> h.status() == 200, "ok while both servers serve");
            assertThat(ok.body()).isEqualTo("{\"status\":\"ok\"}");

            a.close();
            b.close();
            Answer down = awaitHealth(uri, h -> h.status() == 503, "degraded once both servers are down");
            JsonNode body = JSON.readTree(down.body());
            assertThat(body.path("status").asText()).isEqualTo("degraded");
            assertThat(body.path("problems")).hasSize(1);
            assertThat(body.path("problems").get(0).path("check").asText()).isEqualTo("model_servers");
            assertThat(body.path("problems").get(0).path("message").asText())
                    .contains("no model server in rotation", "127.0.0.1:" + portA, "127.0.0.1:" + b.port());

            back = SamePort.restart(DEADLINE, () -> server(portA, v0));
            awaitHealth(uri, h -> h.status() == 200, "ok again once one server is back");

            training.set(false);
            trainer.join(Duration.ofSeconds(10));
            rollout.close();
            Answer gone = awaitHealth(uri, h -> h.status() == 503, "degraded once the coordinator is gone");
            JsonNode problems = JSON.readTree(gone.body()).path("problems");
            assertThat(problems)
                    .anySatisfy(p -> assertThat(p.path("check").asText()).isEqualTo("coordinator"));
        } finally {
            training.set(false);
            if (trainer != null) {
                trainer.interrupt();
            }
            for (int i = toClose.size() - 1; i >= 0; i--) {
                toClose.get(i).close();
            }
            if (back != null) {
                back.close();
            }
            a.close();
            b.close();
        }
    }
}
