package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.config.Backend;
import org.rollout.modelserver.LoraAdapter;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLmWeights;

/**
 * {@code use_lora} against the built-in model server over real HTTP, for both backends: each
 * published version is loaded as adapter {@code lora-v<N>}, generation names the adapter of its
 * pinned version (version 0 is the base model), outputs differ by adapter and follow the version,
 * and the adapter two versions back is unloaded.
 */
class LoraUpdateTest {
    private static final int[] PROMPT = {257, 76, 10};
    private static final double TEMPERATURE = 1.0;

    @TempDir
    Path dir;

    private final LiveServers servers = new LiveServers();
    private RemoteInferenceEngine engine;

    @AfterEach
    void tearDown() {
        if (engine != null) {
            engine.close();
        }
        servers.close();
    }

    /** The HTTP status of a one-token SGLang generation naming adapter {@code lora}. */
    private int statusNaming(ModelServer server, String lora) {
        try {
            return servers.post(
                            server,
                            "/generate",
                            "{\"input_ids\":[257],\"sampling_params\":{\"max_new_tokens\":1},\"lora_path\":\"" + lora
                                    + "\"}")
                    .get("_status")
                    .asInt();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void generationNamesThePinnedVersionsAdapterAndItsOutputsFollowTheVersion(Backend backend) throws Exception {
        TinyLmWeights base = LiveServers.weights(7, 0);
        LoraAdapter[] adapters = new LoraAdapter[4];
        Path[] files = new Path[4];
        for (int v = 1; v <= 3; v++) {
            adapters[v] = LoraAdapter.seeded(v, 4, 0.5, 1.0f);
            files[v] = dir.resolve("adapter-v" + v + ".json");
            adapters[v].write(files[v]);
        }
        ModelServer server = servers.start(ModelServerConfig.defaults().withWeights(base));
        engine = TestSupport.engine(TestSupport.config(LiveServers.address(server))
                .backend(backend)
                .useLora(true)
                .loraName("policy")
                .build());
        GenerationConfig g = LiveServers.seededToLength(24, 5, TEMPERATURE);

        ModelResponse atV0 = engine.generate(ModelRequest.of(PROMPT, g));
        LiveServers.assertLogprobsUnder(base, atV0, 0, atV0.outputLength(), TEMPERATURE);

        ModelResponse[] at = new ModelResponse[4];
        for (int v = 1; v <= 3; v++) {
            WeightUpdateReport report = engine.updateWeights(files[v], v);
            assertThat(report.allSucceeded()).as("%s", report.summary()).isTrue();
            at[v] = engine.generate(ModelRequest.of(PROMPT, g));
            assertThat(at[v].outputVersions()).containsOnly(v);
            LiveServers.assertLogprobsUnder(adapters[v].applyTo(base), at[v], 0, at[v].outputLength(), TEMPERATURE);
        }
        assertThat(at[1].outputTokens()).isNotEqualTo(atV0.outputTokens()).isNotEqualTo(at[2].outputTokens());
        assertThat(server.weightVersion())
                .as("the base model is never replaced")
                .isZero();

        // After version 3, policy-v1 (two versions back) is unloaded; policy-v2 and policy-v3 stay.
        TestSupport.await("policy-v1 unloaded", LiveServers.WAIT, () -> statusNaming(server, "policy-v1") == 400);
        assertThat(statusNaming(server, "policy-v2")).isEqualTo(200);
        assertThat(statusNaming(server, "policy-v3")).isEqualTo(200);
    }
}
