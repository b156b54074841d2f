package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.inference.Bodies.load;
import static org.rollout.inference.Bodies.utf8;

import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.rollout.api.StopReason;
import org.rollout.config.ServerAddress;
import org.rollout.testing.Fuzz;
import org.rollout.testing.Gen;
import org.rollout.testing.Property;

/**
 * Fuzzes both response parsers with random bytes, truncations, mutations and splices of recorded
 * bodies. Property: a body is either parsed into a segment that says exactly what the body says, or
 * refused with a {@link MalformedResponseException} naming the server, the rid and a field, with a
 * short message; never another exception, never a hang. CI runs a few thousand inputs; {@code
 * -Drollout.fuzz.inputs=N} runs N per parser (docs/bad-input.md).
 */
class ResponseParserFuzzTest {
    private static final ServerAddress SERVER = new ServerAddress("127.0.0.1", 30000);
    private static final String RID = "rid-fuzz";
    private static final int MAX = 8;

    /** Strict JSON: one value, no duplicate keys, nothing after it. The oracle of what may be accepted. */
    private static final JsonMapper STRICT = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    private static final List<String> COMMON_TOKENS = List.of(
            "{",
            "}",
            "[",
            "]",
            "\"",
            ":",
            ",",
            " ",
            "null",
            "true",
            "false",
            "0",
            "-1",
            "7",
            "-0.5",
            "-9999.0",
            "1e400",
            "-1e400",
            "2147483648",
            "-2147483649",
            "99999999999999999999",
            "1.5",
            "\"stop\"",
            "\"length\"",
            "\"abort\"",
            "\"tool_calls\"",
            "\"eos\"",
            "\\u0000",
            "\\",
            "\uFFFD",
            "é",
            "NaN",
            "Infinity");

    private static final List<String> SGLANG_TOKENS = concat(
            COMMON_TOKENS,
            "\"meta_info\":",
            "\"finish_reason\":",
            "\"type\":",
            "\"message\":",
            "\"Abort before prefill\"",
            "\"output_token_logprobs\":",
            "\"completion_tokens\":",
            "\"output_ids\":",
            "\"weight_version\":",
            "[-0.5,3,null]",
            "[-0.5,3]",
            "{\"type\":\"stop\"}");

    private static final List<String> VLLM_TOKENS = concat(
            COMMON_TOKENS,
            "\"choices\":",
            "\"finish_reason\":",
            "\"logprobs\":",
            "\"tokens\":",
            "\"token_logprobs\":",
            "\"token_id:",
            "\"token_id:12\"",
            "\"token_id:-1\"",
            "\"token_id:2147483648\"",
            "{\"tokens\":[],\"token_logprobs\":[]}");

    private static final List<byte[]> SGLANG_SAMPLES = List.of(
            load("sglang/stop.json"),
            load("sglang/length.json"),
            load("sglang/abort-partial.json"),
            load("sglang/abort-before-prefill.json"),
            utf8("{\"meta_info\":{\"finish_reason\":{\"type\":\"stop\"},\"output_token_logprobs\":[[-0.5,3,null]]}}"));

    private static final List<byte[]> VLLM_SAMPLES = List.of(
            load("vllm/stop.json"),
            load("vllm/length.json"),
            load("vllm/abort-partial.json"),
            load("vllm/abort-empty.json"),
            utf8("{\"choices\":[{\"finish_reason\":\"stop\",\"logprobs\":{\"tokens\":[\"token_id:5\"],"
                    + "\"token_logprobs\":[-0.25]}}]}"));

    @Test
    @Timeout(value = 6, unit = TimeUnit.HOURS) // a soak outlasts the default; the watchdog bounds each input
    void everySglangBodyParsesToWhatItSaysOrFailsWithMalformedResponse() throws Exception {
        fuzz("sglangBodies", SglangProtocol.INSTANCE, SGLANG_SAMPLES, SGLANG_TOKENS);
    }

    @Test
    @Timeout(value = 6, unit = TimeUnit.HOURS) // a soak outlasts the default; the watchdog bounds each input
    void everyVllmBodyParsesToWhatItSaysOrFailsWithMalformedResponse() throws Exception {
        fuzz("vllmBodies", VllmProtocol.INSTANCE, VLLM_SAMPLES, VLLM_TOKENS);
    }

    @Test
    void theRecordedSamplesAreAcceptedSoMutationsStartFromValidBodies() {
        for (byte[] body : SGLANG_SAMPLES) {
            SglangProtocol.INSTANCE.parseGenerate(body, SERVER, RID, MAX);
        }
        for (byte[] body : VLLM_SAMPLES) {
            VllmProtocol.INSTANCE.parseGenerate(body, SERVER, RID, MAX);
        }
    }

    private static void fuzz(String name, ServerProtocol protocol, List<byte[]> samples, List<String> tokens)
            throws Exception {
        Gen<Fuzz.Input> inputs = Fuzz.bytes(samples, tokens);
        try (Fuzz.Watchdog watchdog = new Fuzz.Watchdog(Fuzz.HANG)) {
            Property.forAll(name, Fuzz.inputs(2_000), inputs, input -> {
                byte[] body = input.bytes();
                GeneratedSegment[] parsed = new GeneratedSegment[1];
                Throwable t = watchdog.run(input, () -> parsed[0] = protocol.parseGenerate(body, SERVER, RID, MAX));
                if (t == null) {
                    checkAccepted(protocol, body, parsed[0]);
                } else {
                    checkRefused(t);
                }
            });
        }
    }

    private static void checkRefused(Throwable t) {
        assertThat(t).isInstanceOf(MalformedResponseException.class);
        MalformedResponseException e = (MalformedResponseException) t;
        assertThat(e.server()).isEqualTo(SERVER);
        assertThat(e.rid()).isEqualTo(RID);
        assertThat(e.field()).isNotBlank();
        assertThat(e.getMessage())
                .startsWith("malformed response from " + SERVER + " for rid " + RID + ": " + e.field() + " ")
                .hasSizeLessThan(1_000);
    }

    /** An accepted body is strict JSON, and the segment holds exactly its tokens, logprobs and reason. */
    private static void checkAccepted(ServerProtocol protocol, byte[] body, GeneratedSegment s) throws IOException {
        JsonNode root = STRICT.readTree(body); // throws, failing the property, when the body is not strict JSON
        assertThat(s.length()).isBetween(0, MAX);
        if (protocol == SglangProtocol.INSTANCE) {
            JsonNode meta = root.get("meta_info");
            StopReason reason =
                    StopReason.fromWire(meta.get("finish_reason").get("type").textValue());
            assertThat(s.stopReason()).isEqualTo(reason);
            JsonNode entries = meta.get("output_token_logprobs");
            if (s.length() == 0 && reason == StopReason.ABORT) {
                return;
            }
            assertThat(entries.size()).isEqualTo(s.length());
            for (int i = 0; i < s.length(); i++) {
                assertThat(s.token(i)).isEqualTo(entries.get(i).get(1).intValue());
                assertThat(s.logprob(i)).isEqualTo((float) entries.get(i).get(0).doubleValue());
            }
        } else {
            JsonNode choice = root.get("choices").get(0);
            StopReason reason = StopReason.fromWire(choice.get("finish_reason").textValue());
            assertThat(s.stopReason()).isEqualTo(reason);
            JsonNode logprobs = choice.get("logprobs");
            if (logprobs == null || logprobs.isNull()) {
                assertThat(reason).isEqualTo(StopReason.ABORT);
                assertThat(s.length()).isZero();
                return;
            }
            JsonNode tokens = logprobs.get("tokens");
            JsonNode values = logprobs.get("token_logprobs");
            assertThat(tokens.size()).isEqualTo(s.length());
            assertThat(values.size()).isEqualTo(s.length());
            for (int i = 0; i < s.length(); i++) {
                String token = tokens.get(i).textValue();
                assertThat(token).matches("token_id:[0-9]+"); // leading zeros are a number too
                assertThat(Long.parseLong(token.substring("token_id:".length())))
                        .isEqualTo(s.token(i));
                assertThat(s.logprob(i)).isEqualTo((float) values.get(i).doubleValue());
            }
        }
    }

    // ---- defects the fuzzer found, kept as regressions ----

    @Test
    void aDuplicatedSglangEntriesKeyIsMalformedNotZeroFilledTokens() {
        String body = "{\"meta_info\":{\"finish_reason\":{\"type\":\"stop\"},"
                + "\"output_token_logprobs\":[[-0.5,3,null]],\"output_token_logprobs\":[[-0.25,4,null]]}}";
        assertThatThrownBy(() -> SglangProtocol.INSTANCE.parseGenerate(utf8(body), SERVER, RID, MAX))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageStartingWith("malformed response from 127.0.0.1:30000 for rid rid-fuzz: body is not valid"
                        + " JSON (Duplicate field 'output_token_logprobs')");
    }

    @Test
    void aDuplicatedVllmTokensKeyIsMalformedNotZeroFilledTokens() {
        String body = "{\"choices\":[{\"finish_reason\":\"stop\",\"logprobs\":{\"tokens\":[\"token_id:5\"],"
                + "\"tokens\":[\"token_id:6\"],\"token_logprobs\":[-0.25,-0.5]}}]}";
        assertThatThrownBy(() -> VllmProtocol.INSTANCE.parseGenerate(utf8(body), SERVER, RID, MAX))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageStartingWith("malformed response from 127.0.0.1:30000 for rid rid-fuzz: body is not valid"
                        + " JSON (Duplicate field 'tokens')");
    }

    @Test
    void contentAfterTheResponseObjectIsMalformed() {
        byte[] sglang = utf8("{\"meta_info\":{\"finish_reason\":{\"type\":\"stop\"},"
                + "\"output_token_logprobs\":[[-0.5,3,null]]}} {\"meta_info\":{}}");
        assertThatThrownBy(() -> SglangProtocol.INSTANCE.parseGenerate(sglang, SERVER, RID, MAX))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageStartingWith(
                        "malformed response from 127.0.0.1:30000 for rid rid-fuzz: body has content after the JSON"
                                + " object");
        byte[] vllm = utf8("{\"choices\":[{\"finish_reason\":\"abort\"}]}]");
        assertThatThrownBy(() -> VllmProtocol.INSTANCE.parseGenerate(vllm, SERVER, RID, MAX))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageStartingWith(
                        "malformed response from 127.0.0.1:30000 for rid rid-fuzz: body is not valid" + " JSON");
        // Trailing whitespace (a newline after the body) is fine.
        byte[] newline = utf8("{\"choices\":[{\"finish_reason\":\"abort\"}]}\r\n");
        assertThat(VllmProtocol.INSTANCE
                        .parseGenerate(newline, SERVER, RID, MAX)
                        .length())
                .isZero();
    }

    @Test
    void aHugeUnknownFinishReasonIsNamedButNotEchoedWhole() {
        String reason = "x".repeat(100_000);
        byte[] sglang = utf8("{\"meta_info\":{\"finish_reason\":{\"type\":\"" + reason + "\"}}}");
        assertThatThrownBy(() -> SglangProtocol.INSTANCE.parseGenerate(sglang, SERVER, RID, MAX))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageStartingWith("malformed response from 127.0.0.1:30000 for rid rid-fuzz:"
                        + " meta_info.finish_reason.type is an unknown finish reason \"xxxxxxxx")
                .hasMessageContaining("(known: stop, length, tool_calls, abort)")
                .message()
                .hasSizeLessThan(600);
        byte[] vllm = utf8("{\"choices\":[{\"finish_reason\":\"" + reason + "\"}]}");
        assertThatThrownBy(() -> VllmProtocol.INSTANCE.parseGenerate(vllm, SERVER, RID, MAX))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageStartingWith("malformed response from 127.0.0.1:30000 for rid rid-fuzz:"
                        + " choices[0].finish_reason is an unknown finish reason \"xxxxxxxx")
                .message()
                .hasSizeLessThan(600);
    }

    private static List<String> concat(List<String> a, String... b) {
        List<String> out = new java.util.ArrayList<>(a);
        out.addAll(List.of(b));
        return out;
    }
}
