package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.config.Backend;
import org.rollout.config.WeightTransfer;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLmWeights;

/**
 * {@code weight_transfer = http} against built-in model servers over real HTTP: the engine streams
 * the weight file's bytes to every server, which loads them from a file of its own; the servers
 * never read the trainer's path. Tokens after the update carry the new version and come from the
 * new weights.
 */
class WeightTransferTest {
    private static final int[] PROMPT = {257, 87, 10};
    private static final double TEMPERATURE = 0.9;

    @TempDir
    Path trainerDir;

    private final LiveServers servers = new LiveServers();
    private RemoteInferenceEngine engine;

    @AfterEach
    void tearDown() {
        if (engine != null) {
            engine.close();
        }
        servers.close();
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void anUploadReachesEveryServerAndTheTokensAfterItCarryTheNewVersion(Backend backend) throws Exception {
        TinyLmWeights v0 = LiveServers.weights(7, 0);
        TinyLmWeights v1 = LiveServers.weights(8, 1);
        Path v1Path = trainerDir.resolve("v1.rlm");
        v1.write(v1Path);
        ModelServer a = servers.start(ModelServerConfig.defaults().withWeights(v0));
        ModelServer b = servers.start(ModelServerConfig.defaults().withWeights(v0));
        engine = TestSupport.engine(TestSupport.config(LiveServers.address(a), LiveServers.address(b))
                .backend(backend)
                .weightTransfer(WeightTransfer.HTTP)
                .build());
        GenerationConfig g = LiveServers.seededToLength(30, 5, TEMPERATURE);
        ModelResponse before = engine.generate(ModelRequest.of(PROMPT, g));

        WeightUpdateReport report = engine.updateWeights(v1Path, 1);

        assertThat(report.allSucceeded()).as("%s", report.summary()).isTrue();
        for (ModelServer s : new ModelServer[] {a, b}) {
            assertThat(s.weightVersion()).isEqualTo(1);
            assertThat(servers.get(s, "/get_model_info"))
                    .as("the server loaded uploaded bytes, not the trainer's path")
                    .contains("\"model_path\":\"upload:")
                    .doesNotContain(trainerDir.toString());
        }
        ModelResponse after = engine.generate(ModelRequest.of(PROMPT, g));
        assertThat(after.outputVersions()).containsOnly(1);
        assertThat(after.outputTokens()).isNotEqualTo(before.outputTokens());
        LiveServers.assertLogprobsUnder(v1, after, 0, after.outputLength(), TEMPERATURE);
        assertThat(engine.version()).isEqualTo(1);
    }

    @Test
    void bytesThatAreNoWeightFileLoadNowhereAndTheVersionStays() throws Exception {
        ModelServer a = servers.start(ModelServerConfig.defaults().withWeights(LiveServers.weights(7, 0)));
        engine = TestSupport.engine(TestSupport.config(LiveServers.address(a))
                .weightTransfer(WeightTransfer.HTTP)
                .build());
        Path junk = trainerDir.resolve("junk.rlm");
        Files.writeString(junk, "not weights");

        assertThatThrownBy(() -> engine.updateWeights(junk, 1))
                .isInstanceOf(WeightUpdateException.class)
                .hasMessageContaining("/update_weights_from_bytes")
                .hasMessageContaining("HTTP 400")
                .hasMessageContaining("uploaded weights");
        assertThat(engine.version()).isZero();
        assertThat(a.weightVersion()).isZero();
    }
}
