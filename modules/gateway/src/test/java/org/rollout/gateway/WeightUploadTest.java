package org.rollout.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.cluster.LocalRollout;
import org.rollout.cluster.RemoteEngines;
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;
import org.rollout.config.WeightTransfer;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLmWeights;

/**
 * {@code POST /v1/weights?version=N} with the weight file's bytes, end to end: the gateway spools
 * them, the engine's weight version publishes the spooled file, and the engine
 * ({@code weight_transfer = http}) streams it to a real built-in model server, which never sees a
 * path of the trainer's. Fencing is the path publish's.
 */
class WeightUploadTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);
    private static final int[] PROMPT = {257, 85, 10};

    @TempDir
    Path trainerDir;

    private ModelServer server;
    private RemoteInferenceEngine engine;
    private final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(DEADLINE)
            .build();

    @AfterEach
    void tearDown() {
        if (engine != null) {
            engine.close();
        }
        if (server != null) {
            server.close();
        }
        http.close();
    }

    private HttpResponse<String> upload(TrainerGateway g, String query, byte[] bytes) throws Exception {
        return http.send(
                HttpRequest.newBuilder(URI.create(g.uri() + "/v1/weights" + query))
                        .timeout(DEADLINE)
                        .header("Content-Type", "application/octet-stream")
                        .POST(HttpRequest.BodyPublishers.ofByteArray(bytes))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static List<Path> spooled() throws Exception {
        Path spool = Path.of(System.getProperty("java.io.tmpdir"), "rollout-gateway-uploads");
        if (!Files.isDirectory(spool)) {
            return List.of();
        }
        try (var files = Files.list(spool)) {
            return files.toList();
        }
    }

    @Test
    void anUploadedWeightFileIsPublishedToTheServersAndTheTokensAfterItCarryItsVersion() throws Exception {
        TinyLmWeights v0 = TinyLmWeights.seeded(7, 0.5, TinyLmWeights.DEFAULT_DECAY);
        TinyLmWeights v1 =
                TinyLmWeights.seeded(8, 0.5, TinyLmWeights.DEFAULT_DECAY).withVersion(1);
        Path v1File = trainerDir.resolve("v1.rlm");
        v1.write(v1File);
        server = ModelServer.start(ModelServerConfig.defaults().withWeights(v0));
        engine = new RemoteInferenceEngine(InferenceConfig.builder()
                .serverAddresses(List.of(new ServerAddress("127.0.0.1", server.port())))
                .requestTimeout(DEADLINE)
                .weightTransfer(WeightTransfer.HTTP)
                .build());
        GenerationConfig g = GenerationConfig.builder()
                .maxNewTokens(24)
                .seed(3L)
                .ignoreEos(true)
                .build();
        ModelResponse before = engine.generate(ModelRequest.of(PROMPT, g));
        TestRollout t = new TestRollout(5);
        t.publisher = RemoteEngines.publisher(engine);
        List<Path> spooledBefore = spooled();
        try (LocalRollout rollout = t.start();
                TrainerGateway gateway = TrainerGateway.start(GatewayConfig.defaults(), rollout.client())) {
            HttpResponse<String> r = upload(gateway, "?version=1", Files.readAllBytes(v1File));

            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            assertThat(r.body()).contains("\"version\":1");
            assertThat(server.weightVersion()).isEqualTo(1);
            assertThat(rollout.client().status().version()).isEqualTo(1);

            // Fencing as for a path: the same version again is refused, its spooled file removed.
            HttpResponse<String> again = upload(gateway, "?version=1", Files.readAllBytes(v1File));
            assertThat(again.statusCode()).as(again.body()).isEqualTo(409);
            assertThat(spooled()).as("only the published upload stays spooled").hasSize(spooledBefore.size() + 1);

            HttpResponse<String> noVersion = upload(gateway, "", new byte[] {1});
            assertThat(noVersion.statusCode()).isEqualTo(400);
            assertThat(noVersion.body()).contains("query parameter 'version' must be an integer >= 0, got none");
        }
        ModelResponse after = engine.generate(ModelRequest.of(PROMPT, g));
        assertThat(after.outputVersions()).containsOnly(1);
        assertThat(after.outputTokens()).isNotEqualTo(before.outputTokens());
        String info = http.send(
                        HttpRequest.newBuilder(URI.create(server.baseUrl() + "/get_model_info"))
                                .timeout(DEADLINE)
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
        assertThat(info).contains("\"model_path\":\"upload:").doesNotContain(trainerDir.toString());
    }

    /**
     * SGLang has no route for a weight file's bytes: a server that reads this node's disk (here one
     * the node launched) is sent {@code update_weights_from_disk} with the spooled upload's
     * node-local path; the trainer shares no directory with it.
     */
    @Test
    void aLaunchedSglangServerLoadsTheUploadFromTheNodesOwnDisk() throws Exception {
        TinyLmWeights v0 = TinyLmWeights.seeded(7, 0.5, TinyLmWeights.DEFAULT_DECAY);
        TinyLmWeights v1 =
                TinyLmWeights.seeded(8, 0.5, TinyLmWeights.DEFAULT_DECAY).withVersion(1);
        Path v1File = trainerDir.resolve("v1.rlm");
        v1.write(v1File);
        server = ModelServer.start(ModelServerConfig.defaults().withWeights(v0));
        ServerAddress address = new ServerAddress("127.0.0.1", server.port());
        engine = new RemoteInferenceEngine(InferenceConfig.builder()
                .serverAddresses(List.of(address))
                .backend("sglang")
                .requestTimeout(DEADLINE)
                .weightTransfer(WeightTransfer.HTTP)
                .launchedServers(List.of(address))
                .build());
        TestRollout t = new TestRollout(5);
        t.publisher = RemoteEngines.publisher(engine);
        try (LocalRollout rollout = t.start();
                TrainerGateway gateway = TrainerGateway.start(GatewayConfig.defaults(), rollout.client())) {
            HttpResponse<String> r = upload(gateway, "?version=1", Files.readAllBytes(v1File));
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        }
        assertThat(server.weightVersion()).isEqualTo(1);
        String info = http.send(
                        HttpRequest.newBuilder(URI.create(server.baseUrl() + "/get_model_info"))
                                .timeout(DEADLINE)
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
        assertThat(info)
                .as("loaded by update_weights_from_disk from the node's spool, not from uploaded bytes")
                .contains("rollout-gateway-uploads")
                .doesNotContain("upload:")
                .doesNotContain(trainerDir.toString());
        GenerationConfig g = GenerationConfig.builder()
                .maxNewTokens(8)
                .seed(3L)
                .ignoreEos(true)
                .build();
        assertThat(engine.generate(ModelRequest.of(PROMPT, g)).outputVersions()).containsOnly(1);
    }
}
