package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.core.http.StreamResponse;
import com.openai.errors.BadRequestException;
import com.openai.models.responses.FunctionTool;
import com.openai.models.responses.Response;
import com.openai.models.responses.ResponseCreateParams;
import com.openai.models.responses.ResponseFunctionToolCall;
import com.openai.models.responses.ResponseIncludable;
import com.openai.models.responses.ResponseInputItem;
import com.openai.models.responses.ResponseOutputItem;
import com.openai.models.responses.ResponseStatus;
import com.openai.models.responses.ResponseStreamEvent;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.Interaction;
import org.rollout.api.ModelResponse;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.testengine.ScriptedEngine;

/**
 * The official OpenAI Java SDK's Responses client ({@code client.responses()}) against the proxy:
 * plain and streamed answers from the built-in model, a tool round trip and chaining by {@code
 * previous_response_id} on a scripted engine, logprobs, thinking, and errors.
 */
class ResponsesSdkTest {
    private static final GenerationConfig DEFAULTS =
            GenerationConfig.builder().maxTokens(2048).maxNewTokens(128).build();
    private static final FunctionTool ADD = FunctionTool.builder()
            .name("add")
            .description("Adds two integers.")
            .strict(false)
            .parameters(FunctionTool.Parameters.builder()
                    .putAdditionalProperty("type", JsonValue.from("object"))
                    .putAdditionalProperty(
                            "properties",
                            JsonValue.from(Map.of("a", Map.of("type", "integer"), "b", Map.of("type", "integer"))))
                    .build())
            .build();

    private BuiltInModel model;
    private OpenAIProxy proxy;

    @AfterEach
    void stop() {
        if (proxy != null) {
            proxy.close();
        }
        if (model != null) {
            model.close();
        }
    }

    private static OpenAIClient client(ProxySession s) {
        return OpenAIOkHttpClient.builder()
                .baseUrl(s.baseUrl().toString())
                .apiKey(s.apiKey())
                .maxRetries(0)
                .timeout(Duration.ofSeconds(60))
                .build();
    }

    private ProxySession builtInSession() throws Exception {
        model = BuiltInModel.seeded();
        proxy = OpenAIProxy.start(ProxyConfig.defaults(), model.engine, ByteLevelTokenizer.INSTANCE, DEFAULTS);
        return proxy.openSession("1:0", Interaction.ChatTemplateType.HF);
    }

    private ProxySession scriptedSession(ScriptedEngine engine) throws Exception {
        proxy = OpenAIProxy.start(ProxyConfig.defaults(), engine, ByteLevelTokenizer.INSTANCE, DEFAULTS);
        return proxy.openSession("1:0", Interaction.ChatTemplateType.HF);
    }

    private static String text(Response r) {
        StringBuilder sb = new StringBuilder();
        for (ResponseOutputItem item : r.output()) {
            if (item.isMessage()) {
                item.asMessage()
                        .content()
                        .forEach(c -> sb.append(c.asOutputText().text()));
            }
        }
        return sb.toString();
    }

    @Test
    void aResponseFromTheBuiltInModelIsRecordedWithItsTokensAndUsage() throws Exception {
        ProxySession s = builtInSession();
        Response r = client(s)
                .responses()
                .create(ResponseCreateParams.builder()
                        .model("rollout")
                        .instructions("Reply with one letter.")
                        .input("Which letter?")
                        .maxOutputTokens(12L)
                        .build());

        Interaction it = s.interactions().getFirst();
        ModelResponse m = it.modelResponse();
        assertThat(r.id()).isEqualTo(it.id()).startsWith("resp_");
        String prompt =
                "<|im_start|>system\nReply with one letter.<|im_end|>\n<|im_start|>user\nWhich letter?<|im_end|>\n"
                        + "<|im_start|>assistant\n";
        assertThat(m.inputTokens()).containsExactly(ByteLevelTokenizer.INSTANCE.encode(prompt));
        assertThat(m.outputLength()).isBetween(1, 12);
        assertThat(m.outputVersions()).containsOnly(0);
        assertThat(r.usage().orElseThrow().inputTokens()).isEqualTo(m.inputLength());
        assertThat(r.usage().orElseThrow().outputTokens()).isEqualTo(m.outputLength());
        assertThat(r.status())
                .contains(
                        m.outputLength() == 12 && !m.endsWithStop(ByteLevelTokenizer.IM_END)
                                ? ResponseStatus.INCOMPLETE
                                : ResponseStatus.COMPLETED);
        assertThat(text(r)).isEqualTo(it.outputMessages().getFirst().get("content"));
    }

    @Test
    void aStreamedResponseArrivesAsTextDeltasThenCompleted() throws Exception {
        ProxySession s = builtInSession();
        StringBuilder deltas = new StringBuilder();
        List<Response> completed = new ArrayList<>();
        try (StreamResponse<ResponseStreamEvent> stream = client(s)
                .responses()
                .createStreaming(ResponseCreateParams.builder()
                        .model("rollout")
                        .input("Say something long.")
                        .maxOutputTokens(40L)
                        .temperature(1.0)
                        .build())) {
            stream.stream().forEach(e -> {
                e.outputTextDelta().ifPresent(d -> deltas.append(d.delta()));
                e.completed().ifPresent(c -> completed.add(c.response()));
                e.incomplete().ifPresent(c -> completed.add(c.response()));
            });
        }
        Interaction it = s.interactions().getFirst();
        assertThat(completed).hasSize(1);
        assertThat(completed.getFirst().id()).isEqualTo(it.id());
        assertThat(deltas.toString()).isEqualTo(it.outputMessages().getFirst().get("content"));
        assertThat(text(completed.getFirst())).isEqualTo(deltas.toString());
    }

    @Test
    void aToolCallRoundTripChainsByPreviousResponseIdAndLinksTheParent() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying(
                "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}\n</tool_call>", "It is 5.");
        ProxySession s = scriptedSession(engine);
        OpenAIClient client = client(s);
        Response first = client.responses()
                .create(ResponseCreateParams.builder()
                        .model("rollout")
                        .input("What is 2+3?")
                        .addTool(ADD)
                        .build());
        ResponseFunctionToolCall call = first.output().stream()
                .filter(ResponseOutputItem::isFunctionCall)
                .map(ResponseOutputItem::asFunctionCall)
                .findFirst()
                .orElseThrow();
        assertThat(call.name()).isEqualTo("add");
        assertThat(call.arguments()).isEqualTo("{\"a\":2,\"b\":3}");

        Response second = client.responses()
                .create(ResponseCreateParams.builder()
                        .model("rollout")
                        .previousResponseId(first.id())
                        .inputOfResponse(List.of(
                                ResponseInputItem.ofFunctionCallOutput(ResponseInputItem.FunctionCallOutput.builder()
                                        .callId(call.callId())
                                        .output("5")
                                        .build())))
                        .addTool(ADD)
                        .build());

        assertThat(text(second)).isEqualTo("It is 5.");
        List<Interaction> its = s.interactions();
        assertThat(its).hasSize(2);
        assertThat(its.get(1).parent()).isSameAs(its.get(0));
        String prompt =
                ByteLevelTokenizer.INSTANCE.decode(engine.requests().get(1).inputIds(), false);
        assertThat(prompt)
                .contains("What is 2+3?")
                .contains("\"name\": \"add\"")
                .contains("5");
    }

    @Test
    void aToolCallRoundTripWithTheWholeHistoryAsInputLinksTheParent() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying(
                "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}\n</tool_call>", "It is 5.");
        ProxySession s = scriptedSession(engine);
        OpenAIClient client = client(s);
        List<ResponseInputItem> history = new ArrayList<>();
        history.add(ResponseInputItem.ofEasyInputMessage(com.openai.models.responses.EasyInputMessage.builder()
                .role(com.openai.models.responses.EasyInputMessage.Role.USER)
                .content("What is 2+3?")
                .build()));
        Response first = client.responses()
                .create(ResponseCreateParams.builder()
                        .model("rollout")
                        .inputOfResponse(history)
                        .addTool(ADD)
                        .build());
        for (ResponseOutputItem item : first.output()) {
            if (item.isFunctionCall()) {
                history.add(ResponseInputItem.ofFunctionCall(item.asFunctionCall()));
                history.add(ResponseInputItem.ofFunctionCallOutput(ResponseInputItem.FunctionCallOutput.builder()
                        .callId(item.asFunctionCall().callId())
                        .output("5")
                        .build()));
            }
        }
        Response second = client.responses()
                .create(ResponseCreateParams.builder()
                        .model("rollout")
                        .inputOfResponse(history)
                        .addTool(ADD)
                        .build());

        assertThat(text(second)).isEqualTo("It is 5.");
        assertThat(s.interactions().get(1).parent()).isSameAs(s.interactions().get(0));
    }

    @Test
    void logprobsAreAnsweredForEveryAnswerTokenWhenIncluded() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying("Hi");
        ProxySession s = scriptedSession(engine);
        Response r = client(s)
                .responses()
                .create(ResponseCreateParams.builder()
                        .model("rollout")
                        .input("Hello")
                        .addInclude(ResponseIncludable.MESSAGE_OUTPUT_TEXT_LOGPROBS)
                        .build());
        var lps = r.output()
                .getFirst()
                .asMessage()
                .content()
                .getFirst()
                .asOutputText()
                .logprobs()
                .orElseThrow();
        ModelResponse m = s.interactions().getFirst().modelResponse();
        assertThat(lps).hasSize(m.outputLength() - 1);
        for (int i = 0; i < lps.size(); i++) {
            assertThat(lps.get(i).logprob()).isEqualTo((double) m.outputLogprob(i));
        }
        assertThat(lps.stream().map(l -> l.token()).reduce("", String::concat)).isEqualTo("Hi");
    }

    @Test
    void aThinkingBlockIsAReasoningItemAndStaysInTheRecordedTokens() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying("<think>\nTwo and three.\n</think>\n\nFive.");
        ProxySession s = scriptedSession(engine);
        Response r = client(s)
                .responses()
                .create(ResponseCreateParams.builder()
                        .model("rollout")
                        .input("2+3?")
                        .build());
        assertThat(r.output().getFirst().isReasoning()).isTrue();
        assertThat(r.output()
                        .getFirst()
                        .asReasoning()
                        .content()
                        .orElseThrow()
                        .getFirst()
                        .text())
                .isEqualTo("Two and three.");
        assertThat(text(r)).isEqualTo("Five.");
        ModelResponse m = s.interactions().getFirst().modelResponse();
        assertThat(ByteLevelTokenizer.INSTANCE.decode(m.outputTokens(), false))
                .startsWith("<think>\nTwo and three.\n</think>\n\nFive.");
    }

    @Test
    void aBadMaxOutputTokensIsABadRequestNamingIt() throws Exception {
        ProxySession s = scriptedSession(ScriptedEngine.scripted());
        assertThatThrownBy(() -> client(s)
                        .responses()
                        .create(ResponseCreateParams.builder()
                                .model("rollout")
                                .input("Hi")
                                .maxOutputTokens(0L)
                                .build()))
                .isInstanceOfSatisfying(
                        BadRequestException.class, e -> assertThat(e.param()).contains("max_output_tokens"));
    }

    @Test
    void anUnknownPreviousResponseIdIsABadRequest() throws Exception {
        ProxySession s = scriptedSession(ScriptedEngine.scripted());
        assertThatThrownBy(() -> client(s)
                        .responses()
                        .create(ResponseCreateParams.builder()
                                .model("rollout")
                                .input("Hi")
                                .previousResponseId("resp_nope")
                                .build()))
                .isInstanceOf(BadRequestException.class)
                .hasMessageContaining("resp_nope");
    }
}
