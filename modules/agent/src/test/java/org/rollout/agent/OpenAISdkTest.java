package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.core.http.StreamResponse;
import com.openai.errors.BadRequestException;
import com.openai.errors.NotFoundException;
import com.openai.errors.UnauthorizedException;
import com.openai.models.FunctionDefinition;
import com.openai.models.FunctionParameters;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionFunctionTool;
import com.openai.models.chat.completions.ChatCompletionMessage;
import com.openai.models.chat.completions.ChatCompletionMessageFunctionToolCall;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import com.openai.models.chat.completions.ChatCompletionToolMessageParam;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
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
 * The official OpenAI Java SDK talks to the proxy: plain and streamed completions from the real
 * built-in model (ModelServer + RemoteInferenceEngine), tool calls from a scripted engine (the
 * built-in model cannot be made to emit a tool call deterministically; the parser is tested on its
 * own in ToolCallParserTest), and errors as the SDK's typed exceptions.
 */
class OpenAISdkTest {
    private static final GenerationConfig DEFAULTS =
            GenerationConfig.builder().maxTokens(2048).maxNewTokens(128).build();
    private static final ChatCompletionFunctionTool ADD = ChatCompletionFunctionTool.builder()
            .function(FunctionDefinition.builder()
                    .name("add")
                    .description("Adds two integers.")
                    .parameters(FunctionParameters.builder()
                            .putAdditionalProperty("type", JsonValue.from("object"))
                            .putAdditionalProperty(
                                    "properties",
                                    JsonValue.from(
                                            Map.of("a", Map.of("type", "integer"), "b", Map.of("type", "integer"))))
                            .build())
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

    @Test
    void aPlainCompletionFromTheBuiltInModelIsRecordedTokenByToken() throws Exception {
        ProxySession s = builtInSession();
        ChatCompletion c = client(s)
                .chat()
                .completions()
                .create(ChatCompletionCreateParams.builder()
                        .model("rollout")
                        .addSystemMessage("Reply with one letter.")
                        .addUserMessage("Which letter?")
                        .maxCompletionTokens(12)
                        .seed(7)
                        .build());

        Interaction it = s.interactions().getFirst();
        ModelResponse r = it.modelResponse();
        assertThat(c.id()).isEqualTo(it.id()).startsWith("chatcmpl-");
        String prompt =
                "<|im_start|>system\nReply with one letter.<|im_end|>\n<|im_start|>user\nWhich letter?<|im_end|>\n"
                        + "<|im_start|>assistant\n";
        assertThat(r.inputTokens()).containsExactly(ByteLevelTokenizer.INSTANCE.encode(prompt));
        assertThat(r.outputLength()).isBetween(1, 12);
        for (float lp : r.outputLogprobs()) {
            assertThat(lp).isLessThanOrEqualTo(0f);
        }
        assertThat(r.outputVersions()).containsOnly(0);
        assertThat(c.usage().orElseThrow().promptTokens()).isEqualTo(r.inputLength());
        assertThat(c.usage().orElseThrow().completionTokens()).isEqualTo(r.outputLength());
        ChatCompletion.Choice choice = c.choices().getFirst();
        assertThat(choice.finishReason())
                .isEqualTo(
                        r.outputLength() == 12 && !r.endsWithStop(ByteLevelTokenizer.IM_END)
                                ? ChatCompletion.Choice.FinishReason.LENGTH
                                : ChatCompletion.Choice.FinishReason.STOP);
        int[] out = r.outputTokens();
        int end = r.endsWithStop(ByteLevelTokenizer.IM_END, ByteLevelTokenizer.ENDOFTEXT) ? out.length - 1 : out.length;
        String decoded = ByteLevelTokenizer.INSTANCE.decode(Arrays.copyOf(out, end), true);
        assertThat(choice.message().content().orElse("")).isEqualTo(decoded);
        assertThat(it.outputMessages().getFirst().get("content"))
                .isEqualTo(choice.message().content().orElse(null));
    }

    @Test
    void aStreamedCompletionArrivesAsDeltasThenUsageThenDone() throws Exception {
        ProxySession s = builtInSession();
        List<String> deltas = new ArrayList<>();
        List<String> finishes = new ArrayList<>();
        List<Long> usage = new ArrayList<>();
        try (StreamResponse<ChatCompletionChunk> stream = client(s)
                .chat()
                .completions()
                .createStreaming(ChatCompletionCreateParams.builder()
                        .model("rollout")
                        .addUserMessage("Say something long.")
                        .maxCompletionTokens(40)
                        .temperature(1.0)
                        .seed(3)
                        .streamOptions(ChatCompletionStreamOptions.builder()
                                .includeUsage(true)
                                .build())
                        .build())) {
            stream.stream().forEach(chunk -> {
                chunk.usage().ifPresent(u -> usage.add(u.completionTokens()));
                for (ChatCompletionChunk.Choice ch : chunk.choices()) {
                    ch.delta().content().ifPresent(deltas::add);
                    ch.finishReason().ifPresent(f -> finishes.add(f.asString()));
                }
            });
        }
        Interaction it = s.interactions().getFirst();
        String content = (String) it.outputMessages().getFirst().get("content");
        assertThat(String.join("", deltas)).isEqualTo(content);
        assertThat(deltas.size()).isGreaterThan(1);
        assertThat(finishes).singleElement().isIn("stop", "length");
        assertThat(usage).containsExactly((long) it.modelResponse().outputLength());
    }

    @Test
    void aToolCallIsParsedIntoToolCallsWithFinishReasonToolCalls() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying(
                "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>", "It is 3.");
        ProxySession s = scriptedSession(engine);
        OpenAIClient client = client(s);
        ChatCompletionCreateParams.Builder params = ChatCompletionCreateParams.builder()
                .model("rollout")
                .addUserMessage("What is 1+2?")
                .addTool(ADD);
        ChatCompletion first = client.chat().completions().create(params.build());

        ChatCompletion.Choice choice = first.choices().getFirst();
        assertThat(choice.finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.TOOL_CALLS);
        ChatCompletionMessage message = choice.message();
        assertThat(message.content()).isEmpty();
        ChatCompletionMessageFunctionToolCall call =
                message.toolCalls().orElseThrow().getFirst().asFunction();
        assertThat(call.id()).startsWith("call_");
        assertThat(call.function().name()).isEqualTo("add");
        assertThat(call.function().arguments()).isEqualTo("{\"a\":1,\"b\":2}");
        assertThat(s.interactions().getFirst().modelResponse().stopReason().wireName())
                .isEqualTo("tool_calls");
        // The tools were rendered into the prompt the engine saw.
        String prompt =
                ByteLevelTokenizer.INSTANCE.decode(engine.requests().getFirst().inputIds(), false);
        assertThat(prompt)
                .contains("<tools>\n{")
                .contains("\"name\": \"add\", \"description\": \"Adds two integers.\"");

        ChatCompletion second = client.chat()
                .completions()
                .create(params.addMessage(message)
                        .addMessage(ChatCompletionToolMessageParam.builder()
                                .toolCallId(call.id())
                                .content("3")
                                .build())
                        .build());
        assertThat(second.choices().getFirst().message().content()).contains("It is 3.");
        List<Interaction> recorded = s.interactions();
        assertThat(recorded).hasSize(2);
        assertThat(recorded.get(1).parent()).isSameAs(recorded.get(0));
        String secondPrompt =
                ByteLevelTokenizer.INSTANCE.decode(engine.requests().get(1).inputIds(), false);
        assertThat(secondPrompt)
                .contains(
                        "<|im_start|>assistant\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n"
                                + "</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n3\n</tool_response><|im_end|>\n");
    }

    @Test
    void aStreamedToolCallArrivesAsAToolCallDelta() throws Exception {
        ProxySession s = scriptedSession(ScriptedEngine.replying(
                "Adding.<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 5, \"b\": 6}}</tool_call>"));
        List<ChatCompletionChunk.Choice.Delta.ToolCall> calls = new ArrayList<>();
        List<String> content = new ArrayList<>();
        List<String> finishes = new ArrayList<>();
        try (StreamResponse<ChatCompletionChunk> stream = client(s)
                .chat()
                .completions()
                .createStreaming(ChatCompletionCreateParams.builder()
                        .model("rollout")
                        .addUserMessage("5+6?")
                        .addTool(ADD)
                        .build())) {
            stream.stream()
                    .forEach(chunk -> chunk.choices().forEach(ch -> {
                        ch.delta().content().ifPresent(content::add);
                        ch.delta().toolCalls().ifPresent(calls::addAll);
                        ch.finishReason().ifPresent(f -> finishes.add(f.asString()));
                    }));
        }
        assertThat(String.join("", content)).isEqualTo("Adding.");
        assertThat(calls).singleElement().satisfies(c -> {
            assertThat(c.index()).isZero();
            assertThat(c.function().orElseThrow().name()).contains("add");
            assertThat(c.function().orElseThrow().arguments()).contains("{\"a\":5,\"b\":6}");
        });
        assertThat(finishes).containsExactly("tool_calls");
    }

    @Test
    void theSdkSeesAWrongKeyAsUnauthorized() throws Exception {
        ProxySession s = scriptedSession(ScriptedEngine.scripted());
        OpenAIClient wrong = OpenAIOkHttpClient.builder()
                .baseUrl(s.baseUrl().toString())
                .apiKey("sk-wrong")
                .maxRetries(0)
                .build();
        assertThatThrownBy(() -> wrong.chat()
                        .completions()
                        .create(ChatCompletionCreateParams.builder()
                                .model("rollout")
                                .addUserMessage("hi")
                                .build()))
                .isInstanceOfSatisfying(UnauthorizedException.class, e -> {
                    assertThat(e.statusCode()).isEqualTo(401);
                    assertThat(e.code()).contains("invalid_api_key");
                });
    }

    @Test
    void theSdkSeesBadRequestsWithTheirParam() throws Exception {
        ProxySession s = scriptedSession(ScriptedEngine.scripted());
        assertThatThrownBy(() -> client(s)
                        .chat()
                        .completions()
                        .create(ChatCompletionCreateParams.builder()
                                .model("rollout")
                                .addUserMessage("hi")
                                .n(3)
                                .build()))
                .isInstanceOfSatisfying(BadRequestException.class, e -> {
                    assertThat(e.statusCode()).isEqualTo(400);
                    assertThat(e.param()).contains("n");
                });
    }

    @Test
    void theSdkSeesAClosedSessionAsNotFound() throws Exception {
        ProxySession s = scriptedSession(ScriptedEngine.scripted());
        OpenAIClient client = client(s);
        s.close();
        assertThatThrownBy(() -> client.chat()
                        .completions()
                        .create(ChatCompletionCreateParams.builder()
                                .model("rollout")
                                .addUserMessage("hi")
                                .build()))
                .isInstanceOfSatisfying(
                        NotFoundException.class, e -> assertThat(e.code()).contains("session_not_found"));
    }
}
