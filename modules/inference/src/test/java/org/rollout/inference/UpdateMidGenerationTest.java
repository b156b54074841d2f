package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.inference.LiveServers.WAIT;
import static org.rollout.inference.LiveServers.slice;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.config.Backend;
import org.rollout.config.InferenceConfig;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLmWeights;

/**
 * Interruptible generation against the real built-in model server, over real HTTP, for both backends: a generation
 * interrupted by a weight update mid-way resumes after continue, its tokens are the concatenation of
 * both segments, the versions split exactly at the interruption, and each segment's logprobs are the
 * model's under the weights that produced it.
 */
class UpdateMidGenerationTest {
    private static final int[] PROMPT = {257, 72, 101, 108, 108, 111, 10};
    private static final int BUDGET = 300;
    private static final long SEED = 4242;
    private static final double TEMPERATURE = 0.8;

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

    @ParameterizedTest
    @ValueSource(strings = {"sglang", "vllm", "vllm-upstream"})
    void anUpdateMidGenerationSplitsVersionsAtTheInterruptionAndTheRestComesFromTheNewWeights(String flavour)
            throws Exception {
        // vllm: AReaL's /areal_* control routes; vllm-upstream: vLLM's own /pause, /collective_rpc, /resume.
        Backend backend = flavour.equals("sglang") ? Backend.SGLANG : Backend.VLLM;
        String vllmApi =
                flavour.equals("vllm-upstream") ? InferenceConfig.VLLM_API_UPSTREAM : InferenceConfig.VLLM_API_AREAL;
        TinyLmWeights v0 = LiveServers.weights(7, 0);
        TinyLmWeights v1 = LiveServers.weights(8, 1);
        Path v1Path = dir.resolve("weights-v1.rlm");
        v1.write(v1Path);
        ModelServer server =
                servers.start(ModelServerConfig.defaults().withWeights(v0).withLatency(LiveServers.SLOW_DECODE));
        engine = TestSupport.engine(TestSupport.config(LiveServers.address(server))
                .backend(backend)
                .vllmApi(vllmApi)
                .build());
        GenerationConfig g = LiveServers.seededToLength(BUDGET, SEED, TEMPERATURE);

        BackgroundGenerate call = BackgroundGenerate.start(engine, ModelRequest.of(PROMPT, g));
        TestSupport.await(
                "10 tokens generated before the update",
                WAIT,
                () -> server.stats().tokensGenerated() >= 10);
        engine.updateWeights(v1Path, 1);
        ModelResponse r = call.get();

        assertThat(r.stopReason()).isEqualTo(StopReason.LENGTH);
        assertThat(r.inputTokens()).containsExactly(PROMPT);
        assertThat(r.outputLength()).isEqualTo(BUDGET);
        int k = (int) Arrays.stream(r.outputVersions()).filter(v -> v == 0).count();
        assertThat(k).as("tokens generated before the interruption").isBetween(10, BUDGET - 1);
        assertThat(r.outputVersions())
                .containsExactly(TestSupport.concat(TestSupport.repeat(0, k), TestSupport.repeat(1, BUDGET - k)));

        int[] segment1 = slice(r.outputTokens(), 0, k);
        int[] segment2 = slice(r.outputTokens(), k, BUDGET);
        int[] soloUnderV0 = servers.referenceTokens(servers.reference(v0), PROMPT, g, BUDGET);
        assertThat(segment1).containsExactly(slice(soloUnderV0, 0, k));
        int[] resumedUnderV1 =
                servers.referenceTokens(servers.reference(v1), TestSupport.concat(PROMPT, segment1), g, BUDGET - k);
        assertThat(segment2).containsExactly(resumedUnderV1);

        LiveServers.assertLogprobsUnder(v0, r, 0, k, TEMPERATURE);
        LiveServers.assertLogprobsUnder(v1, r, k, BUDGET, TEMPERATURE);
        double[] underV0 = LiveServers.expectedLogprobs(v0, r, TEMPERATURE);
        assertThat(IntStream.range(k, BUDGET).filter(i -> Math.abs(underV0[i] - r.outputLogprob(i)) > 1e-2))
                .as("segment 2's logprobs are not those of the old weights")
                .isNotEmpty();

        assertThat(server.weightVersion()).isEqualTo(1);
        assertThat(server.stats().requestsTotal()).as("two segments").isEqualTo(2);
        assertThat(server.stats().requestsAborted())
                .as("the first segment was aborted")
                .isEqualTo(1);
        assertThat(engine.version()).isEqualTo(1);
    }
}
