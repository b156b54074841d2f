package org.rollout.inference;

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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.config.Backend;
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;
import org.rollout.config.WeightTransfer;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLmWeights;
import org.rollout.modelserver.WeightGroupMaster;

/**
 * {@code weight_transfer = nccl} against built-in model servers over real HTTP and real sockets:
 * the engine sends the group's control calls (init_weights_update_group once per server, then per
 * update the tensors' names, dtypes and shapes); a test-side trainer rank 0 broadcasts the tensors'
 * bytes over the servers' TCP stand-in for the NCCL group; the servers load them, and the tokens
 * after the update carry the new version and come from the new weights.
 */
class NcclWeightUpdateTest {
    private static final int[] PROMPT = {257, 87, 10};
    private static final double TEMPERATURE = 0.9;
    private static final Duration DEADLINE = Duration.ofSeconds(30);

    @org.junit.jupiter.api.io.TempDir
    Path trainerDir;

    private final LiveServers servers = new LiveServers();
    private RemoteInferenceEngine engine;
    private WeightGroupMaster rank0;

    @AfterEach
    void tearDown() throws Exception {
        if (engine != null) {
            engine.close();
        }
        servers.close();
        if (rank0 != null) {
            rank0.close();
        }
    }

    private InferenceConfig config(Backend backend, ServerAddress... addresses) {
        return TestSupport.config(addresses)
                .backend(backend)
                .weightTransfer(WeightTransfer.NCCL)
                .ncclMasterAddress("127.0.0.1")
                .ncclMasterPort(rank0.port())
                .build();
    }

    /** The weight file of {@code weights} as two uint8 tensors, and their manifest. */
    private record Published(Path manifest, List<byte[]> tensors) {}

    private Published publish(TinyLmWeights weights, String name, long extraDeclared) throws Exception {
        Path file = trainerDir.resolve(name + ".rlm");
        weights.write(file);
        byte[] bytes = Files.readAllBytes(file);
        Files.delete(file); // the servers never see a path: only the broadcast carries the weights
        int half = bytes.length / 2;
        byte[] head = Arrays.copyOfRange(bytes, 0, half);
        byte[] tail = Arrays.copyOfRange(bytes, half, bytes.length);
        TensorManifest manifest = new TensorManifest(List.of(
                new TensorManifest.Tensor("model.head", "uint8", List.of((long) head.length)),
                new TensorManifest.Tensor("model.tail", "torch.uint8", List.of(1L, tail.length + extraDeclared))));
        Path manifestFile = trainerDir.resolve(name + ".tensors.json");
        Files.write(manifestFile, manifest.toJson());
        return new Published(manifestFile, List.of(head, tail));
    }

    /** Runs the engine's update while rank 0 broadcasts to {@code members}, as a trainer does. */
    private WeightUpdateReport update(Published p, int version, int members) throws Exception {
        // On a thread of its own: the common pool may have a single worker, which the HTTP client needs.
        FutureTask<WeightUpdateReport> update = new FutureTask<>(() -> engine.updateWeights(p.manifest(), version));
        Thread.ofVirtual().name("trainer-publish").start(update);
        rank0.broadcast(members, p.tensors(), DEADLINE);
        try {
            return update.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw (Exception) e.getCause();
        }
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void theTrainersBroadcastReachesEveryServerAndANewServerJoinsTheGroupBeforeItsFirstUpdate(Backend backend)
            throws Exception {
        rank0 = new WeightGroupMaster();
        TinyLmWeights v0 = LiveServers.weights(7, 0);
        TinyLmWeights v1 = LiveServers.weights(8, 1);
        TinyLmWeights v2 = LiveServers.weights(9, 2);
        ModelServer a = servers.start(ModelServerConfig.defaults().withWeights(v0));
        ModelServer b = servers.start(ModelServerConfig.defaults().withWeights(v0));
        engine = TestSupport.engine(config(backend, LiveServers.address(a), LiveServers.address(b)));
        GenerationConfig g = LiveServers.seededToLength(30, 5, TEMPERATURE);
        ModelResponse before = engine.generate(ModelRequest.of(PROMPT, g));
        assertThat(rank0.joins()).as("nobody joins before the first update").isEmpty();

        WeightUpdateReport report = update(publish(v1, "v1", 0), 1, 2);

        assertThat(report.allSucceeded()).as("%s", report.summary()).isTrue();
        assertThat(rank0.joins())
                .as("AReaL's ranks: 1 + i for the i-th server, world size servers + 1")
                .containsExactlyInAnyOrder(
                        new WeightGroupMaster.Join("update_weight_group", 1, 3),
                        new WeightGroupMaster.Join("update_weight_group", 2, 3));
        for (ModelServer s : new ModelServer[] {a, b}) {
            assertThat(s.weightVersion()).isEqualTo(1);
            assertThat(servers.get(s, "/get_model_info")).contains("\"model_path\":\"distributed:update_weight_group:");
        }
        ModelResponse after = engine.generate(ModelRequest.of(PROMPT, g));
        assertThat(after.outputVersions()).containsOnly(1);
        assertThat(after.outputTokens()).isNotEqualTo(before.outputTokens());
        LiveServers.assertLogprobsUnder(v1, after, 0, after.outputLength(), TEMPERATURE);

        // A server added now joins the group (rank 3) but serves nothing until a broadcast loaded it.
        ModelServer c = servers.start(ModelServerConfig.defaults().withWeights(v0));
        ServerAddress cAddress = LiveServers.address(c);
        engine.addServer(cAddress);
        TestSupport.await(
                "the added server to join the group",
                DEADLINE,
                () -> rank0.joins().size() == 3);
        assertThat(rank0.joins().get(2)).isEqualTo(new WeightGroupMaster.Join("update_weight_group", 3, 4));
        assertThat(stats(cAddress).inRotation())
                .as("stale weights stay out of rotation")
                .isFalse();

        WeightUpdateReport second = update(publish(v2, "v2", 0), 2, 3);

        assertThat(second.allSucceeded()).as("%s", second.summary()).isTrue();
        assertThat(rank0.joins()).as("members join once").hasSize(3);
        for (ModelServer s : new ModelServer[] {a, b, c}) {
            assertThat(s.weightVersion()).isEqualTo(2);
        }
        TestSupport.await(
                "the added server in rotation", DEADLINE, () -> stats(cAddress).inRotation());
        ModelResponse latest = engine.generate(ModelRequest.of(PROMPT, g));
        assertThat(latest.outputVersions()).containsOnly(2);
        LiveServers.assertLogprobsUnder(v2, latest, 0, latest.outputLength(), TEMPERATURE);
        assertThat(engine.version()).isEqualTo(2);
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void aBroadcastThatDoesNotMatchTheAnnouncedShapesLoadsNowhereAndTheVersionStays(Backend backend) throws Exception {
        rank0 = new WeightGroupMaster();
        ModelServer a = servers.start(ModelServerConfig.defaults().withWeights(LiveServers.weights(7, 0)));
        engine = TestSupport.engine(config(backend, LiveServers.address(a)));

        Published wrong = publish(LiveServers.weights(8, 1), "v1", 16);

        assertThatThrownBy(() -> update(wrong, 1, 1))
                .isInstanceOf(WeightUpdateException.class)
                .hasMessageContaining(
                        backend == Backend.SGLANG ? "/update_weights_from_distributed" : "/areal_update_weights_xccl")
                .hasMessageContaining("HTTP 400")
                .hasMessageContaining("tensor 'model.tail'")
                .hasMessageContaining("no server loaded the new weights");
        assertThat(engine.version()).isZero();
        assertThat(a.weightVersion()).isZero();
    }

    private ServerStats stats(ServerAddress server) {
        return engine.serverStats().stream()
                .filter(s -> s.address().equals(server))
                .findFirst()
                .orElseThrow();
    }
}
