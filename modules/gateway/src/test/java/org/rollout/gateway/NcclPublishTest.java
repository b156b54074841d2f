package org.rollout.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
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
import org.rollout.modelserver.WeightGroupMaster;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.HttpRolloutClient;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.TensorSpec;
import org.rollout.trainer.WeightPublishException;

/**
 * {@code POST /v1/weights {"version", "tensors"}} end to end ({@code weight_transfer = nccl}): a
 * trainer publishes the tensors' names, dtypes and shapes through the gateway with the Java client
 * while its rank 0 broadcasts their bytes over the built-in server's TCP stand-in for the NCCL
 * group; the server loads them and the tokens after it carry the version. A broadcast that does not
 * match the announced shapes loads nowhere: the trainer gets the server's error and the version
 * stays.
 */
class NcclPublishTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);
    private static final int[] PROMPT = {257, 85, 10};

    @TempDir
    Path trainerDir;

    private ModelServer server;
    private RemoteInferenceEngine engine;
    private WeightGroupMaster rank0;

    @AfterEach
    void tearDown() throws Exception {
        if (engine != null) {
            engine.close();
        }
        if (server != null) {
            server.close();
        }
        if (rank0 != null) {
            rank0.close();
        }
    }

    /** Publishes through the gateway on a thread of its own while rank 0 broadcasts {@code bytes}. */
    private static PublishResult publishWhileBroadcasting(
            HttpRolloutClient trainer, WeightGroupMaster rank0, int version, List<TensorSpec> specs, List<byte[]> bytes)
            throws Exception {
        FutureTask<PublishResult> publish = new FutureTask<>(() -> trainer.publishTensors(version, specs));
        Thread.ofVirtual().name("trainer-publish").start(publish);
        rank0.broadcast(1, bytes, DEADLINE);
        try {
            return publish.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw (Exception) e.getCause();
        }
    }

    @Test
    void theTrainerPublishesTensorMetadataThroughTheGatewayAndTheServersLoadTheBroadcast() throws Exception {
        TinyLmWeights v0 = TinyLmWeights.seeded(7, 0.5, TinyLmWeights.DEFAULT_DECAY);
        TinyLmWeights v1 =
                TinyLmWeights.seeded(8, 0.5, TinyLmWeights.DEFAULT_DECAY).withVersion(1);
        Path v1File = trainerDir.resolve("v1.rlm");
        v1.write(v1File);
        byte[] bytes = Files.readAllBytes(v1File);
        byte[] head = Arrays.copyOfRange(bytes, 0, 100);
        byte[] tail = Arrays.copyOfRange(bytes, 100, bytes.length);
        rank0 = new WeightGroupMaster();
        server = ModelServer.start(ModelServerConfig.defaults().withWeights(v0));
        engine = new RemoteInferenceEngine(InferenceConfig.builder()
                .serverAddresses(List.of(new ServerAddress("127.0.0.1", server.port())))
                .requestTimeout(DEADLINE)
                .weightTransfer(WeightTransfer.NCCL)
                .ncclMasterAddress("127.0.0.1")
                .ncclMasterPort(rank0.port())
                .build());
        GenerationConfig g = GenerationConfig.builder()
                .maxNewTokens(24)
                .seed(3L)
                .ignoreEos(true)
                .build();
        ModelResponse before = engine.generate(ModelRequest.of(PROMPT, g));
        TestRollout t = new TestRollout(5);
        t.publisher = RemoteEngines.publisher(engine);
        try (LocalRollout rollout = t.start();
                TrainerGateway gateway = TrainerGateway.start(GatewayConfig.defaults(), rollout.client());
                RolloutClient client =
                        RolloutClient.connect(ClientConfig.of(gateway.uri().toString()))) {
            HttpRolloutClient trainer = (HttpRolloutClient) client;

            // Announced shapes that do not match the broadcast: the server refuses, nothing moves.
            List<TensorSpec> wrong = List.of(
                    new TensorSpec("embed", "bfloat16", List.of(50L)),
                    new TensorSpec("rest", "uint8", List.of(tail.length - 1L)));
            assertThatThrownBy(() -> publishWhileBroadcasting(trainer, rank0, 1, wrong, List.of(head, tail)))
                    .isInstanceOf(WeightPublishException.class)
                    .hasMessageContaining("/update_weights_from_distributed")
                    .hasMessageContaining("tensor 'rest'");
            assertThat(server.weightVersion()).isZero();
            assertThat(rollout.client().status().version()).isZero();

            List<TensorSpec> specs = List.of(
                    new TensorSpec("embed", "bfloat16", List.of(2L, 25L)),
                    new TensorSpec("rest", "uint8", List.of((long) tail.length)));
            PublishResult r = publishWhileBroadcasting(trainer, rank0, 1, specs, List.of(head, tail));

            assertThat(r.version()).isEqualTo(1);
            assertThat(r.serversUpdated()).isEqualTo(1);
            assertThat(server.weightVersion()).isEqualTo(1);
            assertThat(rollout.client().status().version()).isEqualTo(1);
            assertThat(rank0.joins()).containsExactly(new WeightGroupMaster.Join("update_weight_group", 1, 2));
        }
        ModelResponse after = engine.generate(ModelRequest.of(PROMPT, g));
        assertThat(after.outputVersions()).containsOnly(1);
        assertThat(after.outputTokens()).isNotEqualTo(before.outputTokens());
    }
}
