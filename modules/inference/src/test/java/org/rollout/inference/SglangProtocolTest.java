package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.inference.Bodies.load;
import static org.rollout.inference.Bodies.utf8;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.StopReason;
import org.rollout.config.ServerAddress;

class SglangProtocolTest {
    private static final SglangProtocol P = SglangProtocol.INSTANCE;
    private static final ServerAddress SERVER = new ServerAddress("127.0.0.1", 30000);
    private static final String RID = "rid-7";

    private static GeneratedSegment parse(byte[] body, int max) {
        return P.parseGenerate(body, SERVER, RID, max);
    }

    private static GeneratedSegment parse(String body) {
        return parse(utf8(body), 100);
    }

    private static String meta(String inner) {
        return "{\"meta_info\":{" + inner + "}}";
    }

    @Test
    void readsThePromptsCachedTokensFromMetaInfoAndIgnoresAMalformedCount() {
        String ok = "\"finish_reason\":{\"type\":\"stop\"},\"output_token_logprobs\":[[-0.5,3,null]]";
        assertThat(parse(meta(ok + ",\"cached_tokens\":96")).cachedTokens()).hasValue(96);
        assertThat(parse(meta(ok)).cachedTokens()).isEmpty();
        assertThat(parse(meta(ok + ",\"cached_tokens\":-1")).cachedTokens()).isEmpty();
        assertThat(parse(meta(ok + ",\"cached_tokens\":{\"n\":1}")).cachedTokens())
                .isEmpty();
    }

    @Test
    void buildsTheGenerateBodyWithPromptPlusTokensSoFarAndTheRemainingBudget() throws Exception {
        GenerationConfig g = GenerationConfig.builder()
                .stopTokenIds(List.of(256, 258))
                .topK(50)
                .temperature(0.7)
                .build();
        byte[] body = P.generateBody(RID, new int[] {257, 117}, new int[] {9, 8, 7, 0}, 3, g, 60);
        JsonNode json = FakeInferenceServer.JSON.readTree(body);
        assertThat(json.get("rid").textValue()).isEqualTo(RID);
        assertThat(json.get("input_ids").toString()).isEqualTo("[257,117,9,8,7]");
        assertThat(json.get("return_logprob").booleanValue()).isTrue();
        assertThat(json.get("stream").booleanValue()).isFalse();
        JsonNode sp = json.get("sampling_params");
        assertThat(sp.get("max_new_tokens").intValue()).isEqualTo(60);
        assertThat(sp.get("top_p").doubleValue()).isEqualTo(1.0);
        assertThat(sp.get("top_k").intValue()).isEqualTo(50);
        assertThat(sp.get("temperature").doubleValue()).isEqualTo(0.7);
        assertThat(sp.get("stop_token_ids").toString()).isEqualTo("[256,258]");
        assertThat(sp.get("ignore_eos").booleanValue()).isFalse();
        assertThat(sp.get("skip_special_tokens").booleanValue()).isTrue();
        assertThat(sp.get("frequency_penalty").doubleValue()).isEqualTo(0.0);
        assertThat(sp.has("stop")).isFalse();
        assertThat(sp.has("sampling_seed")).isFalse();
        assertThat(sp.has("min_new_tokens")).isFalse();
        assertThat(json.fieldNames())
                .toIterable()
                .containsExactly("rid", "input_ids", "sampling_params", "return_logprob", "stream");
    }

    @Test
    void sendsStopSeedAndGreedyTemperatureOnlyWhenSet() throws Exception {
        GenerationConfig g = GenerationConfig.builder()
                .greedy(true)
                .temperature(0.9)
                .stop(List.of("\n\n"))
                .seed(7L)
                .build();
        JsonNode sp = FakeInferenceServer.JSON
                .readTree(P.generateBody(RID, new int[] {1}, new int[0], 0, g, 5))
                .get("sampling_params");
        assertThat(sp.get("temperature").doubleValue()).isEqualTo(0.0);
        assertThat(sp.get("stop").toString()).isEqualTo("[\"\\n\\n\"]");
        assertThat(sp.get("sampling_seed").longValue()).isEqualTo(7L);
    }

    @Test
    void rejectsBeamSearchNamingTheParameter() {
        GenerationConfig g = GenerationConfig.builder().useBeamSearch(true).build();
        assertThatThrownBy(() -> P.checkSupported(g))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("use_beam_search")
                .hasMessageContaining("sglang");
    }

    @Test
    void parsesARecordedStopResponse() {
        GeneratedSegment s = parse(load("sglang/stop.json"), 100);
        assertThat(s.stopReason()).isEqualTo(StopReason.STOP);
        assertThat(s.tokens()).containsExactly(785, 4226, 374, 220, 19, 13, 151645);
        assertThat(s.logprobs()).containsExactly(-0.0011f, -0.25f, -0.0625f, -1.5f, -0.0001f, -0.375f, -0.0f);
    }

    @Test
    void parsesARecordedLengthResponseWithTextInEachEntry() {
        GeneratedSegment s = parse(load("sglang/length.json"), 4);
        assertThat(s.stopReason()).isEqualTo(StopReason.LENGTH);
        assertThat(s.tokens()).containsExactly(10061, 752, 1744, 3019);
        assertThat(s.logprobs()).containsExactly(-0.5f, -0.125f, -2.25f, -0.75f);
    }

    @Test
    void parsesAPartialOutputEndingInAbort() {
        GeneratedSegment s = parse(load("sglang/abort-partial.json"), 100);
        assertThat(s.stopReason()).isEqualTo(StopReason.ABORT);
        assertThat(s.tokens()).containsExactly(8304, 220, 16, 25);
    }

    @Test
    void parsesAnAbortBeforePrefillAsZeroTokens() {
        GeneratedSegment s = parse(load("sglang/abort-before-prefill.json"), 100);
        assertThat(s.stopReason()).isEqualTo(StopReason.ABORT);
        assertThat(s.length()).isZero();
    }

    @Test
    void anAbortBeforePrefillIgnoresAnyEntriesItCarries() {
        GeneratedSegment s = parse(meta("\"finish_reason\":{\"type\":\"abort\",\"message\":\"Abort before prefill\"},"
                + "\"output_token_logprobs\":[[-0.5,3,null]]"));
        assertThat(s.length()).isZero();
    }

    @Test
    void rejectsABodyThatIsNotJsonNamingServerRidAndField() {
        assertThatThrownBy(() -> parse("Internal Server Error"))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageContaining("127.0.0.1:30000")
                .hasMessageContaining("rid-7")
                .hasMessageContaining("body is not valid JSON")
                .hasMessageContaining("(body: Internal Server Error)");
    }

    @Test
    void rejectsATruncatedBody() {
        byte[] full = load("sglang/stop.json");
        byte[] cut = Arrays.copyOf(full, full.length / 2);
        assertThatThrownBy(() -> parse(cut, 100))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageContaining("body is not valid JSON");
    }

    @Test
    void rejectsJsonThatIsNotAnObject() {
        assertThatThrownBy(() -> parse("[1,2]"))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageContaining("body is not a JSON object");
    }

    @Test
    void rejectsAMissingMetaInfo() {
        assertThatThrownBy(() -> parse("{\"text\":\"hi\"}"))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageContaining("meta_info is missing")
                .extracting(e -> ((MalformedResponseException) e).field())
                .isEqualTo("meta_info");
    }

    @Test
    void rejectsAMissingOrNullFinishReason() {
        assertThatThrownBy(() -> parse(meta("\"output_token_logprobs\":[]")))
                .hasMessageContaining("meta_info.finish_reason is missing or null");
        assertThatThrownBy(() -> parse(meta("\"finish_reason\":null,\"output_token_logprobs\":[]")))
                .hasMessageContaining("meta_info.finish_reason is missing or null");
    }

    @Test
    void rejectsAFinishReasonWithoutType() {
        assertThatThrownBy(() -> parse(meta("\"finish_reason\":{\"matched\":2},\"output_token_logprobs\":[]")))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageContaining("meta_info.finish_reason.type is missing");
    }

    @Test
    void rejectsAnUnknownFinishReasonNamingIt() {
        assertThatThrownBy(() -> parse(meta("\"finish_reason\":{\"type\":\"cancelled\"},\"output_token_logprobs\":[]")))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageContaining("meta_info.finish_reason.type is an unknown finish reason")
                .hasMessageContaining("\"cancelled\"");
    }

    @Test
    void rejectsAnEntryThatIsNotAnArray() {
        assertThatThrownBy(() -> parse(
                        meta("\"finish_reason\":{\"type\":\"stop\"},\"output_token_logprobs\":[[-0.5,3],{\"x\":1}]")))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageContaining("meta_info.output_token_logprobs[1] is not an array [logprob, token_id, ...]");
    }

    @Test
    void rejectsALogprobThatIsNotANumber() {
        assertThatThrownBy(() ->
                        parse(meta("\"finish_reason\":{\"type\":\"stop\"},\"output_token_logprobs\":[[null,3,null]]")))
                .hasMessageContaining("meta_info.output_token_logprobs[0][0] is not a number");
    }

    @Test
    void rejectsATokenIdThatIsNotAnInteger() {
        assertThatThrownBy(() -> parse(
                        meta("\"finish_reason\":{\"type\":\"stop\"},\"output_token_logprobs\":[[-0.5,3.5,null]]")))
                .hasMessageContaining("meta_info.output_token_logprobs[0][1] is not an integer token id");
        assertThatThrownBy(
                        () -> parse(meta("\"finish_reason\":{\"type\":\"stop\"},\"output_token_logprobs\":[[-0.5]]")))
                .hasMessageContaining("meta_info.output_token_logprobs[0][1] is not an integer token id");
    }

    @Test
    void rejectsTheAmbiguousLogprobMinus9999() {
        assertThatThrownBy(
                        () -> parse(
                                meta(
                                        "\"finish_reason\":{\"type\":\"stop\"},\"output_token_logprobs\":[[-0.5,3,null],[-9999.0,4,null]]")))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageContaining("meta_info.output_token_logprobs[1][0] is -9999.0");
    }

    @Test
    void rejectsOutputIdsThatDisagreeWithTheLogprobEntries() {
        assertThatThrownBy(() -> parse("{\"output_ids\":[3,4],\"meta_info\":{\"finish_reason\":{\"type\":\"stop\"},"
                        + "\"output_token_logprobs\":[[-0.5,3,null]]}}"))
                .hasMessageContaining("output_ids has 2 tokens but meta_info.output_token_logprobs has 1");
    }

    @Test
    void rejectsEntriesWhoseCountDiffersFromCompletionTokens() {
        assertThatThrownBy(() -> parse(meta("\"finish_reason\":{\"type\":\"length\",\"length\":3},"
                        + "\"completion_tokens\":3,\"output_token_logprobs\":[[-0.5,3,null],[-0.25,4,null]]")))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageContaining("127.0.0.1:30000")
                .hasMessageContaining("rid-7")
                .hasMessageContaining(
                        "meta_info.output_token_logprobs has 2 entries but meta_info.completion_tokens is 3")
                .extracting(e -> ((MalformedResponseException) e).field())
                .isEqualTo("meta_info.output_token_logprobs");
    }

    @Test
    void rejectsACompletionTokensThatIsNotANonNegativeInteger() {
        for (String bad : List.of("-1", "2.5", "\"2\"")) {
            assertThatThrownBy(() -> parse(meta("\"finish_reason\":{\"type\":\"stop\",\"matched\":4},"
                            + "\"completion_tokens\":" + bad + ",\"output_token_logprobs\":[[-0.5,4,null]]")))
                    .as("completion_tokens %s", bad)
                    .isInstanceOf(MalformedResponseException.class)
                    .hasMessageContaining("meta_info.completion_tokens is not a non-negative integer");
        }
    }

    @Test
    void aNullCompletionTokensLeavesTheCountUnchecked() {
        GeneratedSegment s = parse(meta("\"finish_reason\":{\"type\":\"stop\",\"matched\":4},"
                + "\"completion_tokens\":null,\"output_token_logprobs\":[[-0.5,4,null]]"));
        assertThat(s.tokens()).containsExactly(4);
    }

    @Test
    void aStopMatchedOnATokenIdIsStop() {
        GeneratedSegment s = parse(meta("\"finish_reason\":{\"type\":\"stop\",\"matched\":258},"
                + "\"completion_tokens\":2,\"output_token_logprobs\":[[-0.5,52,null],[-0.02,258,null]]"));
        assertThat(s.stopReason()).isEqualTo(StopReason.STOP);
        assertThat(s.tokens()).containsExactly(52, 258);
    }

    @Test
    void aStopMatchedOnAStringIsStop() {
        GeneratedSegment s = parse(meta("\"finish_reason\":{\"type\":\"stop\",\"matched\":\"\\n\\n\"},"
                + "\"completion_tokens\":2,\"output_token_logprobs\":[[-0.5,10,null],[-0.02,10,null]]"));
        assertThat(s.stopReason()).isEqualTo(StopReason.STOP);
        assertThat(s.tokens()).containsExactly(10, 10);
    }

    @Test
    void aLengthFinishCarryingItsLengthIsLength() {
        GeneratedSegment s = parse(meta("\"finish_reason\":{\"type\":\"length\",\"length\":2},"
                + "\"completion_tokens\":2,\"output_token_logprobs\":[[-0.5,52,null],[-0.02,53,null]]"));
        assertThat(s.stopReason()).isEqualTo(StopReason.LENGTH);
        assertThat(s.tokens()).containsExactly(52, 53);
    }

    @Test
    void aLengthFinishMayEndWithAStopTokenWhichIsKept() {
        // SGLang checks max_new_tokens before stop tokens: a stop token in the last allowed slot is length.
        GeneratedSegment s = parse(
                utf8(meta("\"finish_reason\":{\"type\":\"length\",\"length\":2},"
                        + "\"completion_tokens\":2,\"output_token_logprobs\":[[-0.5,52,null],[-0.02,258,null]]")),
                2);
        assertThat(s.stopReason()).isEqualTo(StopReason.LENGTH);
        assertThat(s.tokens()).containsExactly(52, 258);
    }

    @Test
    void anAbortWithAMessageKeepsItsPartialOutput() {
        GeneratedSegment s = parse(meta("\"finish_reason\":{\"type\":\"abort\",\"message\":\"Aborted by pause\"},"
                + "\"completion_tokens\":1,\"output_token_logprobs\":[[-0.5,52,null]]"));
        assertThat(s.stopReason()).isEqualTo(StopReason.ABORT);
        assertThat(s.tokens()).containsExactly(52);
    }

    @Test
    void rejectsMoreTokensThanRequested() {
        assertThatThrownBy(() -> parse(load("sglang/stop.json"), 6))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageContaining("meta_info.output_token_logprobs has 7 tokens, more than max_new_tokens 6");
    }

    @Test
    void rejectsAFinishedResponseWithoutLogprobs() {
        assertThatThrownBy(() -> parse(meta("\"finish_reason\":{\"type\":\"length\"}")))
                .hasMessageContaining("meta_info.output_token_logprobs is missing");
    }

    @Test
    void keepsTheBodyExcerptShort() {
        String longText = "x".repeat(5000);
        assertThatThrownBy(() -> parse("{\"text\":\"" + longText + "\"}"))
                .isInstanceOf(MalformedResponseException.class)
                .satisfies(e -> assertThat(e.getMessage()).hasSizeLessThan(400).contains("…"));
    }

    @Test
    void buildsTheControlBodiesOfTheProtocol() {
        assertThat(P.pauseCalls())
                .containsExactly(
                        ControlCall.post("/pause_generation", "{}"),
                        ControlCall.post("/pause_generation", "{\"mode\":\"in_place\"}"));
        assertThat(P.continueCall()).isEqualTo(ControlCall.post("/continue_generation", "{}"));
        assertThat(P.abortCall("a\"b")).contains(ControlCall.post("/abort_request", "{\"rid\":\"a\\\"b\"}"));
        assertThat(P.updateWeightsCall(Path.of("/ckpt/weights-v3.rlm"), 3))
                .isEqualTo(
                        ControlCall.post(
                                "/update_weights_from_disk",
                                "{\"model_path\":\"/ckpt/weights-v3.rlm\",\"abort_all_requests\":true,\"weight_version\":\"3\"}"));
        assertThat(P.healthCall()).isEqualTo(ControlCall.get("/health"));
        assertThat(P.generatePath()).isEqualTo("/generate");
    }
}
