package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.inference.Bodies.load;
import static org.rollout.inference.Bodies.utf8;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.StopReason;
import org.rollout.config.Backend;
import org.rollout.config.ServerAddress;

class VllmProtocolTest {
    private static final VllmProtocol P = VllmProtocol.INSTANCE;
    private static final ServerAddress SERVER = new ServerAddress("127.0.0.1", 8000);
    private static final String RID = "rid-9";

    private static GeneratedSegment parse(String body) {
        return P.parseGenerate(utf8(body), SERVER, RID, 100);
    }

    private static String choice(String inner) {
        return "{\"choices\":[{" + inner + "}]}";
    }

    @Test
    void buildsTheFlatCompletionsBody() throws Exception {
        GenerationConfig g = GenerationConfig.builder()
                .stopTokenIds(List.of(256, 258))
                .useBeamSearch(true)
                .stop(List.of("###"))
                .seed(11L)
                .build();
        JsonNode json = FakeInferenceServer.JSON.readTree(
                P.generateBody(RID, new int[] {257, 117}, new int[] {5, 6}, 2, g, 64));
        assertThat(json.get("prompt").toString()).isEqualTo("[257,117,5,6]");
        assertThat(json.get("max_tokens").intValue()).isEqualTo(64);
        assertThat(json.get("top_k").intValue()).isEqualTo(100_000_000);
        assertThat(json.get("stop_token_ids").toString()).isEqualTo("[256,258]");
        assertThat(json.get("return_tokens_as_token_ids").booleanValue()).isTrue();
        assertThat(json.get("logprobs").intValue()).isZero();
        assertThat(json.get("use_beam_search").booleanValue()).isTrue();
        assertThat(json.get("stream").booleanValue()).isFalse();
        assertThat(json.get("stop").toString()).isEqualTo("[\"###\"]");
        assertThat(json.get("seed").longValue()).isEqualTo(11L);
        assertThat(json.has("sampling_params")).isFalse();
        assertThat(json.has("rid")).isFalse();
    }

    @Test
    void theUpstreamFlavourDrivesVllmsOwnControlRoutesAndTheArealFlavourItsExtension() throws Exception {
        Path weights = Path.of("/shared/weights/v4.rlm");
        VllmProtocol up = VllmProtocol.UPSTREAM;
        assertThat(up.pauseCalls()).extracting(ControlCall::path).containsExactly("/pause?mode=abort");
        assertThat(up.continueCall().path()).isEqualTo("/resume");
        ControlCall load = up.updateWeightsCall(weights, 4);
        assertThat(load.path()).isEqualTo("/collective_rpc");
        JsonNode body = FakeInferenceServer.JSON.readTree(load.body());
        assertThat(body.get("method").asText()).isEqualTo("reload_weights");
        assertThat(body.get("kwargs").get("weights_path").asText()).isEqualTo(weights.toString());
        assertThat(up.generatePath()).isEqualTo(P.generatePath());

        assertThat(P.pauseCalls()).extracting(ControlCall::path).containsExactly("/areal_pause_generation");
        assertThat(P.continueCall().path()).isEqualTo("/areal_continue_generation");
        assertThat(P.updateWeightsCall(weights, 4).path()).isEqualTo("/areal_update_weights");
        assertThat(ServerProtocol.of(TestSupport.config(SERVER)
                        .backend(Backend.VLLM)
                        .vllmApi("upstream")
                        .build()))
                .isSameAs(VllmProtocol.UPSTREAM);
        assertThatThrownBy(() -> TestSupport.config(SERVER).vllmApi("openai").build())
                .hasMessageContaining("vllm_api");
    }

    @Test
    void acceptsBeamSearch() {
        P.checkSupported(GenerationConfig.builder().useBeamSearch(true).build());
    }

    @Test
    void parsesARecordedStopResponseSkippingTopLogprobs() {
        GeneratedSegment s = P.parseGenerate(load("vllm/stop.json"), SERVER, RID, 100);
        assertThat(s.stopReason()).isEqualTo(StopReason.STOP);
        assertThat(s.tokens()).containsExactly(785, 4226, 374, 220, 19, 13, 151645);
        assertThat(s.logprobs()).containsExactly(-0.0011f, -0.25f, -0.0625f, -1.5f, -0.0001f, -0.375f, 0.0f);
    }

    @Test
    void parsesARecordedLengthResponse() {
        GeneratedSegment s = P.parseGenerate(load("vllm/length.json"), SERVER, RID, 4);
        assertThat(s.stopReason()).isEqualTo(StopReason.LENGTH);
        assertThat(s.tokens()).containsExactly(10061, 752, 1744, 3019);
    }

    @Test
    void parsesAPartialOutputEndingInAbort() {
        GeneratedSegment s = P.parseGenerate(load("vllm/abort-partial.json"), SERVER, RID, 100);
        assertThat(s.stopReason()).isEqualTo(StopReason.ABORT);
        assertThat(s.tokens()).containsExactly(8304, 220, 16, 25);
        assertThat(s.logprobs()).containsExactly(-0.875f, -0.03125f, -0.5f, -0.25f);
    }

    @Test
    void parsesAnAbortWithNullLogprobsAsZeroTokens() {
        GeneratedSegment s = P.parseGenerate(load("vllm/abort-empty.json"), SERVER, RID, 100);
        assertThat(s.stopReason()).isEqualTo(StopReason.ABORT);
        assertThat(s.length()).isZero();
    }

    @Test
    void rejectsABodyThatIsNotJson() {
        assertThatThrownBy(() -> parse("<html>502 Bad Gateway</html>"))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageContaining("127.0.0.1:8000")
                .hasMessageContaining("rid-9")
                .hasMessageContaining("body is not valid JSON");
    }

    @Test
    void rejectsJsonThatIsNotAnObject() {
        assertThatThrownBy(() -> parse("\"ok\"")).hasMessageContaining("body is not a JSON object");
    }

    @Test
    void rejectsMissingOrEmptyChoices() {
        assertThatThrownBy(() -> parse("{\"id\":\"x\"}")).hasMessageContaining("choices is missing");
        assertThatThrownBy(() -> parse("{\"choices\":[]}")).hasMessageContaining("choices is empty");
        assertThatThrownBy(() -> parse("{\"choices\":{}}")).hasMessageContaining("choices is not an array");
    }

    @Test
    void rejectsAMissingOrUnknownFinishReason() {
        assertThatThrownBy(() -> parse(choice("\"finish_reason\":null")))
                .hasMessageContaining("choices[0].finish_reason is missing or null");
        assertThatThrownBy(() -> parse(choice("\"finish_reason\":\"content_filter\"")))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageContaining("choices[0].finish_reason is an unknown finish reason")
                .hasMessageContaining("content_filter");
    }

    @Test
    void rejectsAFinishedResponseWithoutLogprobs() {
        assertThatThrownBy(() -> parse(choice("\"finish_reason\":\"stop\",\"logprobs\":null")))
                .hasMessageContaining("choices[0].logprobs is missing or null");
    }

    @Test
    void rejectsATokenThatDoesNotParse() {
        assertThatThrownBy(() ->
                        parse(choice("\"finish_reason\":\"stop\",\"logprobs\":{\"tokens\":[\"token_id:5\",\"hello\"],"
                                + "\"token_logprobs\":[-0.5,-0.5]}")))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageContaining("choices[0].logprobs.tokens[1] is \"hello\", not \"token_id:<n>\"");
        assertThatThrownBy(() -> parse(choice("\"finish_reason\":\"stop\",\"logprobs\":{\"tokens\":[\"token_id:x1\"],"
                        + "\"token_logprobs\":[-0.5]}")))
                .hasMessageContaining("choices[0].logprobs.tokens[0] is \"token_id:x1\"");
        assertThatThrownBy(() -> parse(choice(
                        "\"finish_reason\":\"stop\",\"logprobs\":{\"tokens\":[7]," + "\"token_logprobs\":[-0.5]}")))
                .hasMessageContaining("choices[0].logprobs.tokens[0] is not a string");
    }

    @Test
    void readsThePromptsCachedTokensFromUsageAndIgnoresAMalformedCount() {
        String ok = "\"finish_reason\":\"stop\",\"logprobs\":{\"tokens\":[\"token_id:5\"],\"token_logprobs\":[-0.5]}";
        GeneratedSegment cached = parse("{\"choices\":[{" + ok + "}],\"usage\":{\"prompt_tokens\":40,"
                + "\"completion_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":32}}}");
        assertThat(cached.cachedTokens()).hasValue(32);
        assertThat(parse(choice(ok)).cachedTokens()).isEmpty();
        assertThat(parse("{\"usage\":{\"prompt_tokens_details\":null},\"choices\":[{" + ok + "}]}")
                        .cachedTokens())
                .isEmpty();
        GeneratedSegment malformed = parse(
                "{\"choices\":[{" + ok + "}],\"usage\":{\"prompt_tokens_details\":" + "{\"cached_tokens\":\"lots\"}}}");
        assertThat(malformed.cachedTokens())
                .as("a count for information only never fails a segment")
                .isEmpty();
        assertThat(malformed.length()).isEqualTo(1);
    }

    @Test
    void rejectsATokenLogprobCountMismatch() {
        assertThatThrownBy(() -> parse(
                        choice("\"finish_reason\":\"stop\",\"logprobs\":{\"tokens\":[\"token_id:5\",\"token_id:6\"],"
                                + "\"token_logprobs\":[-0.5]}")))
                .hasMessageContaining(
                        "choices[0].logprobs.token_logprobs has 1 entries but choices[0].logprobs.tokens has 2");
    }

    @Test
    void rejectsTheAmbiguousLogprobMinus9999() {
        assertThatThrownBy(() -> parse(choice("\"finish_reason\":\"stop\",\"logprobs\":{\"tokens\":[\"token_id:5\"],"
                        + "\"token_logprobs\":[-9999.0]}")))
                .hasMessageContaining("choices[0].logprobs.token_logprobs[0] is -9999.0");
    }

    @Test
    void rejectsANullLogprob() {
        assertThatThrownBy(() -> parse(choice("\"finish_reason\":\"stop\",\"logprobs\":{\"tokens\":[\"token_id:5\"],"
                        + "\"token_logprobs\":[null]}")))
                .hasMessageContaining("choices[0].logprobs.token_logprobs[0] is not a number");
    }

    @Test
    void rejectsMoreTokensThanRequested() {
        assertThatThrownBy(() -> P.parseGenerate(load("vllm/stop.json"), SERVER, RID, 3))
                .hasMessageContaining("choices[0].logprobs.tokens has 7 tokens, more than max_tokens 3");
    }

    @Test
    void buildsTheControlBodiesOfTheExtension() {
        assertThat(P.pauseCalls()).containsExactly(ControlCall.post("/areal_pause_generation", "{}"));
        assertThat(P.continueCall()).isEqualTo(ControlCall.post("/areal_continue_generation", "{}"));
        assertThat(P.abortCall("r")).isEmpty();
        assertThat(P.updateWeightsCall(Path.of("/ckpt/v2"), 2))
                .isEqualTo(ControlCall.post("/areal_update_weights", "{\"model_path\":\"/ckpt/v2\"}"));
        assertThat(P.generatePath()).isEqualTo("/v1/completions");
    }
}
