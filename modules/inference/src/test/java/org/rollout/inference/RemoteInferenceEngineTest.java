package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.inference.FakeInferenceServer.after;
import static org.rollout.inference.FakeInferenceServer.json;
import static org.rollout.inference.FakeInferenceServer.sglang;
import static org.rollout.inference.FakeInferenceServer.sglangAtVersion;
import static org.rollout.inference.FakeInferenceServer.sglangFillBudget;
import static org.rollout.inference.FakeInferenceServer.vllm;
import static org.rollout.inference.TestSupport.await;
import static org.rollout.inference.TestSupport.concat;
import static org.rollout.inference.TestSupport.config;
import static org.rollout.inference.TestSupport.engine;
import static org.rollout.inference.TestSupport.fakeLogprobs;
import static org.rollout.inference.TestSupport.range;
import static org.rollout.inference.TestSupport.repeat;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.GenerationException;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.config.Backend;

class RemoteInferenceEngineTest {
    private static final int[] PROMPT = {257, 117, 115, 101, 114, 10};
    private static final Duration WAIT = Duration.ofSeconds(10);

    private final FakeInferenceServer server = FakeInferenceServer.start();
    private RemoteInferenceEngine engine = engine(config(server.address()).build());

    @AfterEach
    void tearDown() {
        engine.close();
        server.close();
    }

    private static ModelRequest request(int maxNewTokens) {
        return ModelRequest.of(
                PROMPT, GenerationConfig.builder().maxNewTokens(maxNewTokens).build());
    }

    @Test
    void resumesAfterAnAbortWithThePromptPlusTokensSoFarAndTheRemainingBudget() throws Exception {
        engine.setVersion(3);
        server.on(
                "/generate", after(() -> engine.setVersion(4), sglang(1000, 40, "abort")), sglang(2000, 60, "length"));
        ModelRequest request = request(100);

        ModelResponse r = engine.generate(request);

        assertThat(r.outputTokens()).containsExactly(concat(range(1000, 40), range(2000, 60)));
        assertThat(r.outputLogprobs()).containsExactly(concat(fakeLogprobs(40), fakeLogprobs(60)));
        assertThat(r.outputVersions()).containsExactly(concat(repeat(3, 40), repeat(4, 60)));
        assertThat(r.stopReason()).isEqualTo(StopReason.LENGTH);
        assertThat(r.inputTokens()).containsExactly(PROMPT);
        List<FakeInferenceServer.Recorded> sent = server.requests("/generate");
        assertThat(sent).hasSize(2);
        assertThat(sent.get(0).promptIds()).containsExactly(PROMPT);
        assertThat(sent.get(0).maxNewTokens()).isEqualTo(100);
        assertThat(sent.get(1).promptIds()).containsExactly(concat(PROMPT, range(1000, 40)));
        assertThat(sent.get(1).maxNewTokens()).isEqualTo(60);
        assertThat(sent.get(1).rid()).isEqualTo(sent.get(0).rid()).isEqualTo(request.rid());
        assertThat(request.inputIds()).containsExactly(PROMPT);
    }

    @Test
    void aVersionBumpDuringTheRoundTripDoesNotRelabelThatSegment() throws Exception {
        engine.setVersion(3);
        server.on("/generate", after(() -> engine.setVersion(4), sglang(1, 10, "length")));

        ModelResponse r = engine.generate(request(10));

        assertThat(r.outputVersions()).containsExactly(repeat(3, 10));
        assertThat(engine.version()).isEqualTo(4);
    }

    @Test
    void aSegmentIsLabelledWithTheVersionTheServerReportsHavingUsed() throws Exception {
        engine.setVersion(3);
        // The race a pinned label cannot see: the segment left before an update closed the gate,
        // waited at the paused server, and ran under the new weights (version 4).
        server.on("/generate", sglangAtVersion(1, 10, "length", "4"));

        ModelResponse r = engine.generate(request(10));

        assertThat(r.outputVersions()).containsExactly(repeat(4, 10));
    }

    @Test
    void aServerVersionThatIsNotANumberLeavesThePinnedLabel() throws Exception {
        engine.setVersion(3);
        server.on("/generate", sglangAtVersion(1, 10, "length", "default"));

        ModelResponse r = engine.generate(request(10));

        assertThat(r.outputVersions()).containsExactly(repeat(3, 10));
    }

    @Test
    void stopsAtTheFirstStopWithoutUsingTheWholeBudget() throws Exception {
        server.on("/generate", sglang(7, 5, "stop"));

        ModelResponse r = engine.generate(request(100));

        assertThat(r.outputTokens()).containsExactly(range(7, 5));
        assertThat(r.stopReason()).isEqualTo(StopReason.STOP);
        assertThat(r.outputVersions()).containsExactly(repeat(0, 5));
        assertThat(server.requests("/generate")).hasSize(1);
    }

    @Test
    void aLeftoverAbortWhenTheBudgetIsSpentBecomesLength() throws Exception {
        server.on("/generate", sglang(1, 10, "abort"));

        ModelResponse r = engine.generate(request(10));

        assertThat(r.stopReason()).isEqualTo(StopReason.LENGTH);
        assertThat(r.outputLength()).isEqualTo(10);
        assertThat(server.requests("/generate")).hasSize(1);
    }

    @Test
    void anAbortBeforePrefillIsResumedWithTheWholeBudget() throws Exception {
        server.on(
                "/generate",
                json(
                        200,
                        "{\"text\":\"\",\"output_ids\":[],\"meta_info\":{\"finish_reason\":"
                                + "{\"type\":\"abort\",\"message\":\"Abort before prefill\"},\"completion_tokens\":0}}"),
                sglangFillBudget(50));

        ModelResponse r = engine.generate(request(8));

        assertThat(r.outputTokens()).containsExactly(range(50, 8));
        assertThat(server.requests("/generate").get(1).maxNewTokens()).isEqualTo(8);
        assertThat(server.requests("/generate").get(1).promptIds()).containsExactly(PROMPT);
    }

    @Test
    void anUnknownFinishReasonFailsAfterTheAttemptsInsteadOfLooping() throws Exception {
        engine.close();
        engine = engine(config(server.address()).requestRetries(2).build());
        server.otherwise(
                "/generate",
                json(200, "{\"meta_info\":{\"finish_reason\":{\"type\":\"paused\"},\"output_token_logprobs\":[]}}"));

        assertThatThrownBy(() -> engine.generate(request(10)))
                .isInstanceOf(GenerationException.class)
                .hasMessageContaining("2 attempts of POST /generate")
                .hasMessageContaining("meta_info.finish_reason.type is an unknown finish reason")
                .hasMessageContaining("\"paused\"");
        assertThat(server.requests("/generate")).hasSize(2);
    }

    @Test
    void moreTokensThanRequestedIsAMalformedResponse() {
        engine.close();
        engine = engine(config(server.address()).requestRetries(1).build());
        server.on("/generate", sglang(1, 11, "length"));

        assertThatThrownBy(() -> engine.generate(request(10)))
                .isInstanceOf(GenerationException.class)
                .hasMessageContaining("1 attempt of POST /generate")
                .hasMessageContaining("has 11 tokens, more than max_new_tokens 10")
                .hasCauseInstanceOf(MalformedResponseException.class);
    }

    @Test
    void rejectsNSamplesOtherThanOneTellingTheCallerToIssueSeveralCalls() {
        ModelRequest r =
                ModelRequest.of(PROMPT, GenerationConfig.builder().nSamples(4).build());

        assertThatThrownBy(() -> engine.generate(r))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("n_samples is 4")
                .hasMessageContaining("do not support n_samples > 1")
                .hasMessageContaining("make 4 generate calls");
        assertThat(server.requests()).isEmpty();
    }

    @Test
    void rejectsAPromptThatLeavesNoBudgetNamingMaxTokensPromptLengthAndMaxNewTokens() {
        ModelRequest r =
                ModelRequest.of(PROMPT, GenerationConfig.builder().maxTokens(6).build());

        assertThatThrownBy(() -> engine.generate(r))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("max_tokens 6")
                .hasMessageContaining("prompt length 6")
                .hasMessageContaining("max_new_tokens 16384")
                .hasMessageContaining("= 0");
        assertThat(server.requests()).isEmpty();
    }

    @Test
    void clipsTheBudgetToMaxTokensMinusThePromptLength() throws Exception {
        server.on("/generate", sglangFillBudget(1));
        ModelRequest r = ModelRequest.of(
                PROMPT,
                GenerationConfig.builder().maxTokens(20).maxNewTokens(100).build());

        ModelResponse response = engine.generate(r);

        assertThat(server.requests("/generate").get(0).maxNewTokens()).isEqualTo(14);
        assertThat(response.outputLength()).isEqualTo(14);
    }

    @Test
    void rejectsBeamSearchOnSglangBeforeSending() {
        ModelRequest r = ModelRequest.of(
                PROMPT, GenerationConfig.builder().useBeamSearch(true).build());

        assertThatThrownBy(() -> engine.generate(r))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("use_beam_search");
        assertThat(server.requests()).isEmpty();
    }

    @Test
    void thePauseGateHoldsSegmentsUntilResume() throws Exception {
        server.on("/generate", sglang(1, 5, "stop"));
        engine.pause();
        assertThat(engine.isPaused()).isTrue();

        BackgroundGenerate call = BackgroundGenerate.start(engine, request(10));
        await("the generation to wait at the gate", WAIT, () -> engine.waitingAtGate() == 1);
        assertThat(server.requests("/generate")).isEmpty();
        engine.resume();

        assertThat(call.get().outputTokens()).containsExactly(range(1, 5));
        assertThat(engine.isPaused()).isFalse();
        assertThat(engine.waitingAtGate()).isZero();
    }

    @Test
    void latencyIsTheWallTimeOfTheWholeCall() throws Exception {
        server.on("/generate", sglang(1, 3, "abort"), sglang(4, 2, "stop"));
        long start = System.nanoTime();

        ModelResponse r = engine.generate(request(10));

        long wall = System.nanoTime() - start;
        assertThat(r.latency()).isPositive().isLessThanOrEqualTo(Duration.ofNanos(wall));
        assertThat(r.ttft()).isEqualTo(r.latency());
    }

    @Test
    void speaksTheVllmProtocolThroughAnAbortAndResume() throws Exception {
        engine.close();
        engine = engine(config(server.address()).backend(Backend.VLLM).build());
        engine.setVersion(2);
        server.on("/v1/completions", after(() -> engine.setVersion(5), vllm(300, 4, "abort")), vllm(400, 3, "stop"));

        ModelResponse r = engine.generate(request(10));

        assertThat(r.outputTokens()).containsExactly(concat(range(300, 4), range(400, 3)));
        assertThat(r.outputVersions()).containsExactly(2, 2, 2, 2, 5, 5, 5);
        assertThat(r.stopReason()).isEqualTo(StopReason.STOP);
        List<FakeInferenceServer.Recorded> sent = server.requests("/v1/completions");
        assertThat(sent.get(1).promptIds()).containsExactly(concat(PROMPT, range(300, 4)));
        assertThat(sent.get(1).maxNewTokens()).isEqualTo(6);
        assertThat(server.requests("/generate")).isEmpty();
    }

    @Test
    void setVersionNeverGoesBackwardsAndNamesBothVersions() {
        engine.setVersion(5);
        engine.setVersion(5);
        assertThatThrownBy(() -> engine.setVersion(4))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("engine is at version 5")
                .hasMessageContaining("asked to set 4");
        assertThat(engine.version()).isEqualTo(5);
    }

    @Test
    void aClosedEngineRefusesToGenerate() {
        engine.close();
        assertThatThrownBy(() -> engine.generate(request(10)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void closingFailsAGenerationWaitingAtTheGate() throws Exception {
        engine.pause();
        BackgroundGenerate call = BackgroundGenerate.start(engine, request(10));
        await("the generation to wait at the gate", WAIT, () -> engine.waitingAtGate() == 1);

        engine.close();

        assertThat(call.failure(10)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }

    @Test
    void exposesPerServerStats() throws Exception {
        server.on("/generate", sglang(1, 3, "abort"), sglang(4, 2, "stop"));

        engine.generate(request(10));

        ServerStats s = engine.serverStats().get(0);
        assertThat(s.address()).isEqualTo(server.address());
        assertThat(s.requests()).isEqualTo(2);
        assertThat(s.failures()).isZero();
        assertThat(s.outstanding()).isZero();
        assertThat(s.inRotation()).isTrue();
    }
}
