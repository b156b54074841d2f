package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.GenerationException;
import org.rollout.api.Interaction;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.testengine.ScriptedEngine;

/** Status codes, OpenAI error bodies and response shapes, over raw HTTP on 127.0.0.1. */
class ProxyProtocolTest {
    private static final GenerationConfig DEFAULTS =
            GenerationConfig.builder().maxTokens(200).maxNewTokens(32).build();

    private final ScriptedEngine engine = ScriptedEngine.scripted();
    private OpenAIProxy proxy;
    private ProxySession session;

    private void start() throws Exception {
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults().withMaxRequestBytes(4096), engine, ByteLevelTokenizer.INSTANCE, DEFAULTS);
        session = proxy.openSession("3:1", Interaction.ChatTemplateType.HF);
    }

    @AfterEach
    void stop() {
        if (proxy != null) {
            proxy.close();
        }
    }

    private String url(String path) {
        return session.baseUrl() + path;
    }

    private static void assertError(ProxyHttp.Reply r, int status, String type, String param, String code) {
        assertThat(r.status()).as(r.raw()).isEqualTo(status);
        JsonNode e = r.error();
        assertThat(e.get("type").asText()).isEqualTo(type);
        assertThat(e.get("param").isNull() ? null : e.get("param").asText()).isEqualTo(param);
        assertThat(e.get("code").isNull() ? null : e.get("code").asText()).isEqualTo(code);
        assertThat(e.get("message").asText()).isNotBlank();
    }

    @Test
    void aChatCompletionIsAnsweredInOpenAIsShapeAndRecorded() throws Exception {
        engine.thenReply("Hello!");
        start();
        ProxyHttp.Reply r = ProxyHttp.post(url("/chat/completions"), session.apiKey(), ProxyHttp.chatBody("Hi"));
        assertThat(r.status()).isEqualTo(200);
        JsonNode b = r.body();
        assertThat(b.get("id").asText()).startsWith("chatcmpl-");
        assertThat(b.get("object").asText()).isEqualTo("chat.completion");
        assertThat(b.get("model").asText()).isEqualTo("rollout");
        JsonNode choice = b.get("choices").get(0);
        assertThat(choice.get("message").get("role").asText()).isEqualTo("assistant");
        assertThat(choice.get("message").get("content").asText()).isEqualTo("Hello!");
        assertThat(choice.get("finish_reason").asText()).isEqualTo("stop");
        int prompt =
                ByteLevelTokenizer.INSTANCE.encode("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n").length;
        assertThat(b.get("usage").get("prompt_tokens").asInt()).isEqualTo(prompt);
        assertThat(b.get("usage").get("completion_tokens").asInt()).isEqualTo(7); // "Hello!" + <|im_end|>
        assertThat(b.get("usage").get("total_tokens").asInt()).isEqualTo(prompt + 7);
        assertThat(session.interactions()).singleElement().satisfies(it -> {
            assertThat(it.id()).isEqualTo(b.get("id").asText());
            assertThat(it.messages()).containsExactly(Map.of("role", "user", "content", "Hi"));
            assertThat(it.outputMessages().get(0).get("content")).isEqualTo("Hello!");
        });
    }

    @Test
    void anUnknownSessionIs404WithAnOpenAIErrorBody() throws Exception {
        start();
        ProxyHttp.Reply r = ProxyHttp.post(
                proxy.baseUrl() + "/s/99:0/v1/chat/completions", session.apiKey(), ProxyHttp.chatBody("Hi"));
        assertError(r, 404, "invalid_request_error", null, "session_not_found");
        assertThat(r.error().get("message").asText()).contains("'99:0'");
    }

    @Test
    void aClosedSessionIs404() throws Exception {
        start();
        session.close();
        ProxyHttp.Reply r = ProxyHttp.post(url("/chat/completions"), session.apiKey(), ProxyHttp.chatBody("Hi"));
        assertError(r, 404, "invalid_request_error", null, "session_not_found");
    }

    @Test
    void aWrongKeyIs401() throws Exception {
        start();
        ProxyHttp.Reply r = ProxyHttp.post(url("/chat/completions"), "sk-wrong", ProxyHttp.chatBody("Hi"));
        assertError(r, 401, "invalid_request_error", null, "invalid_api_key");
        assertThat(r.error().get("message").asText()).startsWith("Incorrect API key provided");
    }

    @Test
    void aMissingKeyIs401() throws Exception {
        start();
        ProxyHttp.Reply r = ProxyHttp.post(url("/chat/completions"), null, ProxyHttp.chatBody("Hi"));
        assertError(r, 401, "invalid_request_error", null, "invalid_api_key");
        assertThat(r.error().get("message").asText()).startsWith("You didn't provide an API key");
    }

    @Test
    void aBodyThatIsNotJsonIs400() throws Exception {
        start();
        ProxyHttp.Reply r = ProxyHttp.post(url("/chat/completions"), session.apiKey(), "{\"messages\": [");
        assertError(r, 400, "invalid_request_error", null, null);
        assertThat(r.error().get("message").asText()).startsWith("The request body is not valid JSON");
    }

    @Test
    void missingMessagesIs400NamingTheParam() throws Exception {
        start();
        ProxyHttp.Reply r = ProxyHttp.post(url("/chat/completions"), session.apiKey(), "{\"model\": \"m\"}");
        assertError(r, 400, "invalid_request_error", "messages", null);
        assertThat(r.error().get("message").asText()).isEqualTo("Missing required parameter: 'messages'.");
    }

    @Test
    void aMessageWithAnUnknownRoleIs400NamingItsIndex() throws Exception {
        start();
        ProxyHttp.Reply r = ProxyHttp.post(
                url("/chat/completions"),
                session.apiKey(),
                "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"robot\", \"content\": \"b\"}]}");
        assertError(r, 400, "invalid_request_error", "messages[1].role", null);
        assertThat(r.error().get("message").asText()).startsWith("Invalid value for messages[1].role: 'robot'.");
    }

    @Test
    void aMessageWithoutContentIs400NamingIt() throws Exception {
        start();
        ProxyHttp.Reply r =
                ProxyHttp.post(url("/chat/completions"), session.apiKey(), "{\"messages\": [{\"role\": \"user\"}]}");
        assertError(r, 400, "invalid_request_error", "messages[0].content", null);
    }

    @Test
    void anImagePartIs400NamingThePart() throws Exception {
        start();
        ProxyHttp.Reply r = ProxyHttp.post(
                url("/chat/completions"),
                session.apiKey(),
                "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": {}}]}]}");
        assertError(r, 400, "invalid_request_error", "messages[0].content[0]", "unsupported_value");
    }

    @Test
    void moreThanOneChoiceIs400() throws Exception {
        start();
        ProxyHttp.Reply r = ProxyHttp.post(
                url("/chat/completions"),
                session.apiKey(),
                "{\"n\": 2, \"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}");
        assertError(r, 400, "invalid_request_error", "n", "unsupported_value");
        assertThat(r.error().get("message").asText()).isEqualTo("n must be 1 (got 2): issue one request per sample.");
    }

    @Test
    void aForcedToolChoiceWithoutToolsIs400() throws Exception {
        start();
        ProxyHttp.Reply r = ProxyHttp.post(
                url("/chat/completions"),
                session.apiKey(),
                "{\"tool_choice\": \"required\", \"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}");
        assertError(r, 400, "invalid_request_error", "tool_choice", null);
    }

    @Test
    void anAllowedToolsChoiceIs400() throws Exception {
        start();
        ProxyHttp.Reply r = ProxyHttp.post(
                url("/chat/completions"),
                session.apiKey(),
                "{\"tool_choice\": {\"type\": \"allowed_tools\"}, \"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}");
        assertError(r, 400, "invalid_request_error", "tool_choice", "unsupported_value");
    }

    @Test
    void aTemperatureOutOfRangeIs400NamingIt() throws Exception {
        start();
        ProxyHttp.Reply r = ProxyHttp.post(
                url("/chat/completions"),
                session.apiKey(),
                "{\"temperature\": 3, \"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}");
        assertError(r, 400, "invalid_request_error", "temperature", null);
        assertThat(r.error().get("message").asText()).isEqualTo("'temperature' must be a number in [0, 2], got 3.");
    }

    @Test
    void anOverLongPromptIs400ContextLengthExceeded() throws Exception {
        start();
        ProxyHttp.Reply r =
                ProxyHttp.post(url("/chat/completions"), session.apiKey(), ProxyHttp.chatBody("x".repeat(300)));
        assertError(r, 400, "invalid_request_error", "messages", "context_length_exceeded");
        assertThat(r.error().get("message").asText())
                .startsWith("This model's maximum context length is 200 tokens. However, your messages resulted in 319"
                        + " tokens");
        assertThat(engine.requests()).isEmpty();
        assertThat(session.interactions()).isEmpty();
    }

    @Test
    void aBodyOverTheLimitIs413() throws Exception {
        start();
        ProxyHttp.Reply r =
                ProxyHttp.post(url("/chat/completions"), session.apiKey(), ProxyHttp.chatBody("y".repeat(5000)));
        assertError(r, 413, "invalid_request_error", null, "request_too_large");
    }

    @Test
    void theWrongMethodIs405() throws Exception {
        start();
        ProxyHttp.Reply r = ProxyHttp.get(url("/chat/completions"), session.apiKey());
        assertError(r, 405, "invalid_request_error", null, "method_not_allowed");
    }

    @Test
    void anUnknownRouteIs404() throws Exception {
        start();
        ProxyHttp.Reply r = ProxyHttp.post(url("/embeddings"), session.apiKey(), "{}");
        assertError(r, 404, "invalid_request_error", null, "unknown_url");
        assertThat(r.error().get("message").asText()).startsWith("Unknown request URL: POST /s/3:1/v1/embeddings.");
    }

    @Test
    void anEngineFailureIs500ServerError() throws Exception {
        engine.thenFail(new GenerationException("no server could complete rid r1"));
        start();
        ProxyHttp.Reply r = ProxyHttp.post(url("/chat/completions"), session.apiKey(), ProxyHttp.chatBody("Hi"));
        assertError(r, 500, "server_error", null, "engine_error");
        assertThat(r.error().get("message").asText()).contains("no server could complete rid r1");
        assertThat(session.interactions()).isEmpty();
    }

    @Test
    void closingTheProxyClosesEverySessionAndRefusesNewOnes() throws Exception {
        start();
        ProxySession other = proxy.openSession("4:0", Interaction.ChatTemplateType.HF);
        proxy.close();
        assertThat(session.isClosed()).isTrue();
        assertThat(other.isClosed()).isTrue();
        assertThat(proxy.openSessions()).isZero();
        assertThatThrownBy(() -> proxy.openSession("5:0", Interaction.ChatTemplateType.HF))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageEndingWith("is closing; no new sessions");
    }

    @Test
    void closingASessionAbortsItsGenerationAndTheClientGets404() throws Exception {
        engine.thenBlock();
        start();
        CompletableFuture<ProxyHttp.Reply> pending = CompletableFuture.supplyAsync(() -> {
            try {
                return ProxyHttp.post(url("/chat/completions"), session.apiKey(), ProxyHttp.chatBody("Hi"));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(engine.awaitBlocking(1, Duration.ofSeconds(30))).isTrue();
        session.close();
        ProxyHttp.Reply r = pending.get(30, TimeUnit.SECONDS);
        assertError(r, 404, "invalid_request_error", null, "session_not_found");
        assertThat(r.error().get("message").asText()).contains("was closed (its episode ended)");
        assertThat(session.interactions()).isEmpty();
    }

    @Test
    void closingTheProxyWhileAGenerationRunsAnswers503() throws Exception {
        engine.thenBlock();
        start();
        CompletableFuture<ProxyHttp.Reply> pending = CompletableFuture.supplyAsync(() -> {
            try {
                return ProxyHttp.post(url("/chat/completions"), session.apiKey(), ProxyHttp.chatBody("Hi"));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(engine.awaitBlocking(1, Duration.ofSeconds(30))).isTrue();
        proxy.close();
        ProxyHttp.Reply r = pending.get(30, TimeUnit.SECONDS);
        assertError(r, 503, "server_error", null, "shutting_down");
    }

    @Test
    void modelsListsTheConfiguredModel() throws Exception {
        start();
        ProxyHttp.Reply r = ProxyHttp.get(url("/models"), session.apiKey());
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.body().get("data").get(0).get("id").asText()).isEqualTo("rollout");
    }

    @Test
    void requestFieldsBecomeTheGenerationConfig() throws Exception {
        engine.thenReply("ok");
        start();
        ProxyHttp.post(
                url("/chat/completions"),
                session.apiKey(),
                "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"temperature\": 0, \"top_p\": 0.5,"
                        + " \"max_completion_tokens\": 9, \"stop\": \"END\", \"seed\": 42, \"frequency_penalty\": 0.5,"
                        + " \"user\": \"ignored\", \"logprobs\": true}");
        GenerationConfig g = engine.requests().get(0).gconfig();
        assertThat(g.greedy()).isTrue();
        assertThat(g.topP()).isEqualTo(0.5);
        assertThat(g.maxNewTokens()).isEqualTo(9);
        assertThat(g.stop()).containsExactly("END");
        assertThat(g.seed()).isEqualTo(42L);
        assertThat(g.frequencyPenalty()).isEqualTo(0.5);
        assertThat(g.maxTokens()).isEqualTo(200);
        assertThat(g.stopTokenIds()).containsExactly(ByteLevelTokenizer.ENDOFTEXT, ByteLevelTokenizer.IM_END);
    }

    @Test
    void aTextCompletionIsAnsweredAndRecorded() throws Exception {
        engine.thenReply(" world");
        start();
        ProxyHttp.Reply r = ProxyHttp.post(
                url("/completions"), session.apiKey(), "{\"model\": \"m\", \"prompt\": \"hello\", \"max_tokens\": 8}");
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.body().get("object").asText()).isEqualTo("text_completion");
        assertThat(r.body().get("choices").get(0).get("text").asText()).isEqualTo(" world");
        assertThat(r.body().get("usage").get("prompt_tokens").asInt()).isEqualTo(5);
        assertThat(engine.requests().get(0).inputIds()).containsExactly(ByteLevelTokenizer.INSTANCE.encode("hello"));
        assertThat(session.interactions())
                .singleElement()
                .satisfies(it -> assertThat(it.id()).startsWith("cmpl-"));
    }

    @Test
    void stopStringsAreCutFromTheAnswer() throws Exception {
        engine.thenReply("abc END tail");
        start();
        ProxyHttp.Reply r = ProxyHttp.post(
                url("/chat/completions"),
                session.apiKey(),
                "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"stop\": [\"END\"]}");
        // The scripted reply ends in EOS, so the stop string did not end it: the text is kept whole.
        assertThat(r.body().get("choices").get(0).get("message").get("content").asText())
                .isEqualTo("abc END tail");
        assertThat(List.of(r.status())).containsExactly(200);
    }

    @Test
    void aStreamedChatIsServerSentEventsEndingWithDone() throws Exception {
        engine.thenReply("Hello there, streaming world!");
        start();
        ProxyHttp.Reply r = ProxyHttp.post(
                url("/chat/completions"),
                session.apiKey(),
                "{\"stream\": true, \"stream_options\": {\"include_usage\": true}, \"messages\": [{\"role\":"
                        + " \"user\", \"content\": \"Hi\"}]}");
        assertThat(r.status()).isEqualTo(200);
        List<String> events = List.of(r.raw().split("\n\n"));
        assertThat(events).allSatisfy(e -> assertThat(e).startsWith("data: "));
        assertThat(events.getLast()).isEqualTo("data: [DONE]");
        List<JsonNode> chunks = new java.util.ArrayList<>();
        for (String e : events.subList(0, events.size() - 1)) {
            chunks.add(ProxyHttp.JSON.readTree(e.substring("data: ".length())));
        }
        assertThat(chunks).allSatisfy(c -> assertThat(c.get("object").asText()).isEqualTo("chat.completion.chunk"));
        assertThat(chunks.getFirst()
                        .get("choices")
                        .get(0)
                        .get("delta")
                        .get("role")
                        .asText())
                .isEqualTo("assistant");
        StringBuilder text = new StringBuilder();
        for (JsonNode c : chunks) {
            JsonNode choices = c.get("choices");
            if (!choices.isEmpty() && choices.get(0).get("delta").has("content")) {
                text.append(choices.get(0).get("delta").get("content").asText());
            }
        }
        assertThat(text.toString()).isEqualTo("Hello there, streaming world!");
        JsonNode finish = chunks.get(chunks.size() - 2);
        assertThat(finish.get("choices").get(0).get("finish_reason").asText()).isEqualTo("stop");
        JsonNode usage = chunks.getLast();
        assertThat(usage.get("choices")).isEmpty();
        assertThat(usage.get("usage").get("completion_tokens").asInt()).isEqualTo(30);
    }

    @Test
    void aStreamedTextCompletionEndsWithItsFinishReasonAndDone() throws Exception {
        engine.thenReply("abc");
        start();
        ProxyHttp.Reply r =
                ProxyHttp.post(url("/completions"), session.apiKey(), "{\"prompt\": [104, 105], \"stream\": true}");
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.raw())
                .endsWith("data: [DONE]\n\n")
                .contains("\"text\":\"abc\"")
                .contains("\"finish_reason\":\"stop\"");
        assertThat(engine.requests().getFirst().inputIds()).containsExactly(104, 105);
    }

    @Test
    void aTokenIdOutsideTheVocabularyIs400() throws Exception {
        start();
        ProxyHttp.Reply r = ProxyHttp.post(url("/completions"), session.apiKey(), "{\"prompt\": [1, 99999]}");
        assertError(r, 400, "invalid_request_error", "prompt", null);
        assertThat(r.error().get("message").asText())
                .isEqualTo("prompt[1] = 99999 is not a token id of this model" + " (vocabulary size 263).");
    }
}
