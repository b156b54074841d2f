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
import java.util.function.BooleanSupplier;
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
import org.rollout.trainer.WeightPublishException;
import org.rollout.workflows.demo.DemoConfig;
import org.rollout.workflows.demo.DemoTraining;

/**
 * {@code /v1/servers} on a node's gateway, in front of a running engine, a trainer publishing a
 * version per batch and real model servers: a server added through the gateway is loaded with the
 * current weights and serves; a drained one leaves the list and gets no more requests; bad requests
 * are refused naming the field; the routes need the token.
 */
class ServersRouteEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static final Duration DEADLINE = Duration.ofSeconds(60);
    private static final String TOKEN = "servers-route-token";

    private record Answer(int status, JsonNode body) {}

    private static Answer call(URI gateway, String method, String path, String body, boolean withToken)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(gateway.resolve(path))
                .timeout(Duration.ofSeconds(10))
                .method(
                        method,
                        body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (withToken) {
            b.header("Authorization", "Bearer " + TOKEN);
        }
        HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return new Answer(r.statusCode(), r.body().isEmpty() ? null : JSON.readTree(r.body()));
    }

    private static Answer call(URI gateway, String method, String path, String body) throws Exception {
        return call(gateway, method, path, body, true);
    }

    private static JsonNode listed(URI gateway, String address) throws Exception {
        for (JsonNode s : call(gateway, "GET", "/v1/servers", null).body().path("servers")) {
            if (s.path("address").asText().equals(address)) {
                return s;
            }
        }
        return null;
    }

    private static void await(String what, BooleanSupplier condition) {
        org.awaitility.Awaitility.await(what)
                .atMost(DEADLINE)
                .pollInterval(Duration.ofMillis(50))
                .until(condition::getAsBoolean);
    }

    private interface Check {
        boolean holds() throws Exception;
    }

    private static BooleanSupplier unchecked(Check c) {
        return () -> {
            try {
                return c.holds();
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        };
    }

    @Test
    void serversAreAddedAndDrainedThroughTheGatewayWhileTheEngineRuns(@TempDir Path dir) throws Exception {
        Path v0 = DemoTraining.initialWeights(DemoConfig.defaults(), dir.resolve("weights"));
        ModelServer a = ModelServer.start(ModelServerConfig.defaults().withWeightsPath(v0));
        ModelServer b = ModelServer.start(ModelServerConfig.defaults().withWeightsPath(v0));
        String addressA = "127.0.0.1:" + a.port();
        String addressB = "127.0.0.1:" + b.port();
        List<AutoCloseable> toClose = new ArrayList<>();
        AtomicBoolean training = new AtomicBoolean(true);
        Thread trainer = null;
        try {
            RolloutSettings settings = RolloutConfig.load(
                    null,
                    List.of(
                            "rollout.fileroot=" + dir,
                            "rollout.trial_name=servers",
                            "rollout.servers=" + addressA,
                            "rollout.health_check_interval=0.1",
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
                    new NodeObservability("servers", engine, rollout.stats(), rollout.client());
            toClose.add(observability);
            TrainerGateway gateway = TrainerGateway.start(
                    GatewayConfig.defaults().withPort(0).withToken(TOKEN),
                    rollout.client(),
                    observability.gatewayExtras());
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
                        // Not loaded anywhere: the version stays; the next batch tries again.
                    } catch (InterruptedException e) {
                        return;
                    } catch (RuntimeException e) {
                        if (!training.get()) {
                            return;
                        }
                    }
                }
            });

            assertThat(call(uri, "GET", "/v1/servers", null, false).status()).isEqualTo(401);
            JsonNode first = listed(uri, addressA);
            assertThat(first.path("state").asText()).isEqualTo("active");
            assertThat(first.path("in_rotation").asBoolean()).isTrue();

            Answer noField = call(uri, "POST", "/v1/servers", "{}");
            assertThat(noField.status()).isEqualTo(400);
            assertThat(noField.body().path("error").path("message").asText()).contains("field 'address'");
            Answer notAnAddress = call(uri, "POST", "/v1/servers", "{\"address\":\"nowhere\"}");
            assertThat(notAnAddress.status()).isEqualTo(400);
            assertThat(notAnAddress.body().path("error").path("message").asText())
                    .contains("field 'address'", "'nowhere' is not host:port");
            Answer extra = call(uri, "POST", "/v1/servers", "{\"address\":\"" + addressB + "\",\"weight\":2}");
            assertThat(extra.status()).isEqualTo(400);
            assertThat(extra.body().path("error").path("message").asText()).contains("unknown field(s) [weight]");
            assertThat(call(uri, "PUT", "/v1/servers", "{}").status()).isEqualTo(405);

            // Versions move on before B joins: B, launched with version 0, must be loaded first.
            await("the trainer to publish version 2", () -> engine.version() >= 2);
            Answer added = call(uri, "POST", "/v1/servers", "{\"address\":\"" + addressB + "\"}");
            assertThat(added.status()).isEqualTo(201);
            assertThat(added.body().path("added").asBoolean()).isTrue();
            assertThat(call(uri, "POST", "/v1/servers", "{\"address\":\"" + addressB + "\"}")
                            .body()
                            .path("added")
                            .asBoolean())
                    .isFalse();
            await(
                    "B in rotation",
                    unchecked(() -> listed(uri, addressB).path("in_rotation").asBoolean()));
            assertThat(b.weightVersion())
                    .as("B was loaded with the engine's weights")
                    .isGreaterThanOrEqualTo(2);
            await("B serving", () -> b.stats().requestsTotal() > 0);
            JsonNode bListed = listed(uri, addressB);
            assertThat(bListed.path("state").asText()).isEqualTo("active");
            assertThat(bListed.path("version").asInt()).isGreaterThanOrEqualTo(2);

            Answer drained = call(uri, "DELETE", "/v1/servers/" + addressA + "?hand_over_after=30", null);
            assertThat(drained.status()).isEqualTo(202);
            assertThat(drained.body().path("draining").asBoolean()).isTrue();
            await("A to leave the list", unchecked(() -> listed(uri, addressA) == null));
            long sentToA = a.stats().requestsTotal();
            long sentToB = b.stats().requestsTotal();
            await("B to serve 10 more segments", () -> b.stats().requestsTotal() >= sentToB + 10);
            assertThat(a.stats().requestsTotal())
                    .as("nothing more for the drained A")
                    .isEqualTo(sentToA);

            Answer last = call(uri, "DELETE", "/v1/servers/" + addressB, null);
            assertThat(last.status()).isEqualTo(409);
            assertThat(last.body().path("error").path("message").asText()).contains("only server that is not draining");
            Answer unknown = call(uri, "DELETE", "/v1/servers/" + addressA, null);
            assertThat(unknown.status()).isEqualTo(404);
            assertThat(unknown.body().path("error").path("message").asText()).contains(addressA);
            Answer badQuery = call(uri, "DELETE", "/v1/servers/" + addressB + "?hand_over_after=soon", null);
            assertThat(badQuery.status()).isEqualTo(400);
            assertThat(badQuery.body().path("error").path("message").asText()).contains("'hand_over_after'");
        } finally {
            training.set(false);
            if (trainer != null) {
                trainer.interrupt();
            }
            for (int i = toClose.size() - 1; i >= 0; i--) {
                toClose.get(i).close();
            }
            a.close();
            b.close();
        }
    }
}
