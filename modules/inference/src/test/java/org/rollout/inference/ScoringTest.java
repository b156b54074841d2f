package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.rollout.api.GenerationConfig;
import org.rollout.api.GenerationException;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.ScoredTokens;
import org.rollout.config.Backend;
import org.rollout.config.RoutingStrategy;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLm;
import org.rollout.modelserver.TinyLmWeights;

/**
 * {@link RemoteInferenceEngine#score} against the built-in model server over real HTTP, for both
 * backends: scoring prompt + completion gives, at the completion's positions, the logprobs its
 * generation reported, and at the prompt's positions the model's own; the version follows updates.
 */
class ScoringTest {
    private static final int[] PROMPT = {257, 83, 99, 111, 114, 101, 10};
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
    @EnumSource(Backend.class)
    void scoringPromptPlusCompletionReproducesTheGenerationLogprobs(Backend backend) throws Exception {
        TinyLmWeights v0 = LiveServers.weights(7, 0);
        ModelServer server = servers.start(ModelServerConfig.defaults().withWeights(v0));
        engine = TestSupport.engine(
                TestSupport.config(LiveServers.address(server)).backend(backend).build());
        GenerationConfig g = LiveServers.seededToLength(40, 11, TEMPERATURE);
        ModelResponse generated = engine.generate(ModelRequest.of(PROMPT, g));
        int[] sequence = TestSupport.concat(PROMPT, generated.outputTokens());

        ScoredTokens scored = engine.score(sequence, g);

        float[] lp = scored.logprobs();
        assertThat(lp).hasSize(sequence.length - 1);
        for (int i = 0; i < generated.outputLength(); i++) {
            assertThat((double) lp[PROMPT.length - 1 + i])
                    .as("completion token %d", i)
                    .isCloseTo(generated.outputLogprob(i), within(1e-5));
        }
        double[] reference = TinyLm.sequenceLogprobs(v0, sequence, 1, TEMPERATURE);
        for (int i = 0; i < lp.length; i++) {
            assertThat((double) lp[i]).as("position %d", i + 1).isCloseTo(reference[i], within(1e-5));
        }
        assertThat(scored.version()).isZero();
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void scoresFollowTheWeightVersion(Backend backend) throws Exception {
        TinyLmWeights v0 = LiveServers.weights(7, 0);
        TinyLmWeights v1 = LiveServers.weights(8, 1);
        Path v1Path = dir.resolve("v1.rlm");
        v1.write(v1Path);
        ModelServer server = servers.start(ModelServerConfig.defaults().withWeights(v0));
        engine = TestSupport.engine(
                TestSupport.config(LiveServers.address(server)).backend(backend).build());
        GenerationConfig g = GenerationConfig.builder().temperature(1.0).build();
        int[] sequence = TestSupport.concat(PROMPT, new int[] {104, 105, 33});
        ScoredTokens before = engine.score(sequence, g);

        engine.updateWeights(v1Path, 1);
        ScoredTokens after = engine.score(sequence, g);

        assertThat(before.version()).isZero();
        assertThat(after.version()).isEqualTo(1);
        double[] reference = TinyLm.sequenceLogprobs(v1, sequence, 1, 1.0);
        for (int i = 0; i < reference.length; i++) {
            assertThat((double) after.logprobs()[i]).isCloseTo(reference[i], within(1e-5));
        }
        assertThat(after.logprobs()).isNotEqualTo(before.logprobs());
    }

    @Test
    void aSingleTokenCannotBeScored() {
        engine = TestSupport.engine(
                TestSupport.config(FakeInferenceServer.unusedAddress()).build());
        assertThatThrownBy(() ->
                        engine.score(new int[] {5}, GenerationConfig.builder().build()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least 2 tokens");
    }

    @Test
    void anAnswerForOtherTokensIsMalformedAndFailsOver() throws Exception {
        try (FakeInferenceServer bad = FakeInferenceServer.start()) {
            ModelServer good = servers.start(ModelServerConfig.defaults().withWeights(LiveServers.weights(7, 0)));
            bad.otherwise(
                    "/generate",
                    FakeInferenceServer.json(
                            200,
                            "{\"meta_info\":{\"input_token_logprobs\":[[null,1,null],[-0.5,2,null],[-0.25,3,null]]}}"));
            // Round robin from index 0 (TestSupport.DETERMINISTIC): the bad server answers first.
            engine = TestSupport.engine(TestSupport.config(bad.address(), LiveServers.address(good))
                    .routingStrategy(RoutingStrategy.ROUND_ROBIN)
                    .build());
            int[] sequence = {257, 104, 105};
            ScoredTokens s = engine.score(sequence, GenerationConfig.builder().build());
            assertThat(s.logprobs()).hasSize(2);
            assertThat(bad.requests("/generate")).hasSize(1);
            assertThat(engine.serverStats().stream()
                            .filter(x -> x.address().equals(bad.address()))
                            .findFirst()
                            .orElseThrow()
                            .lastError()
                            .orElseThrow())
                    .contains("input_token_logprobs[0][1]")
                    .contains("was sent");
        }
    }

    @Test
    void noServerAbleToScoreIsAGenerationErrorNamingEachAttempt() throws Exception {
        try (FakeInferenceServer bad = FakeInferenceServer.start()) {
            bad.otherwise("/generate", FakeInferenceServer.json(400, "{\"error\":\"no\"}"));
            engine = TestSupport.engine(TestSupport.config(bad.address()).build());
            assertThatThrownBy(() -> engine.score(
                            new int[] {257, 1, 2}, GenerationConfig.builder().build()))
                    .isInstanceOf(GenerationException.class)
                    .hasMessageContaining("scoring 3 tokens")
                    .hasMessageContaining("attempt 3 on " + bad.address() + ": HTTP 400");
        }
    }
}
