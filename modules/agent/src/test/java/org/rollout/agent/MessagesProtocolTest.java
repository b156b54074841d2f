package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.Interaction;
import org.rollout.api.ModelResponse;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.testengine.ScriptedEngine;

/** Anthropic's Messages API on the wire: its key header, error shape, content blocks and stop reasons. */
class MessagesProtocolTest {
    private static final HttpClient HTTP = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10))
            .build();

    private OpenAIProxy proxy;

    @AfterEach
    void stop() {
        if (proxy != null) {
            proxy.close();
        }
    }

    private ProxySession session(ScriptedEngine engine, int maxNewTokens) throws Exception {
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults(),
                engine,
                ByteLevelTokenizer.INSTANCE,
                GenerationConfig.builder()
                        .maxTokens(2048)
                        .maxNewTokens(maxNewTokens)
                        .build());
        return proxy.openSession("1:0", Interaction.ChatTemplateType.HF);
    }

    private static HttpResponse<String> post(ProxySession s, String key, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(s.baseUrl() + "/messages"))
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .header("anthropic-version", "2023-06-01")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (key != null) {
            b.header("x-api-key", key);
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static final String HELLO =
            "{\"model\": \"m\", \"max_tokens\": 32, \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}";

    @Test
    void theKeyInXApiKeyIsAccepted() throws Exception {
        ProxySession s = session(ScriptedEngine.replying("Hello."), 128);
        HttpResponse<String> r = post(s, s.apiKey(), HELLO);
        assertThat(r.statusCode()).isEqualTo(200);
        JsonNode m = ProxyHttp.JSON.readTree(r.body());
        assertThat(m.path("content").get(0).path("text").asText()).isEqualTo("Hello.");
        assertThat(m.path("stop_reason").asText()).isEqualTo("end_turn");
        assertThat(m.path("id").asText()).isEqualTo(s.interactions().getFirst().id());
    }

    @Test
    void aWrongKeyIsAnAuthenticationErrorInAnthropicsShape() throws Exception {
        ProxySession s = session(ScriptedEngine.scripted(), 128);
        HttpResponse<String> r = post(s, "sk-wrong", HELLO);
        assertThat(r.statusCode()).isEqualTo(401);
        JsonNode e = ProxyHttp.JSON.readTree(r.body());
        assertThat(e.path("type").asText()).isEqualTo("error");
        assertThat(e.path("error").path("type").asText()).isEqualTo("authentication_error");
    }

    @Test
    void anImageBlockIsAnInvalidRequestErrorNamingTheBlock() throws Exception {
        ProxySession s = session(ScriptedEngine.scripted(), 128);
        HttpResponse<String> r = post(
                s,
                s.apiKey(),
                "{\"max_tokens\": 8, \"messages\": [{\"role\": \"user\", \"content\":"
                        + " [{\"type\": \"image\", \"source\": {}}]}]}");
        assertThat(r.statusCode()).isEqualTo(400);
        JsonNode e = ProxyHttp.JSON.readTree(r.body());
        assertThat(e.path("error").path("type").asText()).isEqualTo("invalid_request_error");
        assertThat(e.path("error").path("message").asText()).contains("messages.0.content.0");
    }

    @Test
    void aThinkingBlockIsAThinkingContentBlockAndStaysInTheRecordedTokens() throws Exception {
        String said = "<think>\nGreet back.\n</think>\n\nHello.";
        ProxySession s = session(ScriptedEngine.replying(said), 128);
        JsonNode m = ProxyHttp.JSON.readTree(post(s, s.apiKey(), HELLO).body());
        assertThat(m.path("content").get(0).path("type").asText()).isEqualTo("thinking");
        assertThat(m.path("content").get(0).path("thinking").asText()).isEqualTo("Greet back.");
        assertThat(m.path("content").get(1).path("text").asText()).isEqualTo("Hello.");
        ModelResponse r = s.interactions().getFirst().modelResponse();
        assertThat(r.outputTokens()).startsWith(ByteLevelTokenizer.INSTANCE.encode(said));
    }

    @Test
    void thinkTagsInAnAnswerThatDidNotOpenABlockStayText() throws Exception {
        ProxySession s = session(ScriptedEngine.replying("L<think>x</think>y"), 128);
        JsonNode m = ProxyHttp.JSON.readTree(post(s, s.apiKey(), HELLO).body());
        assertThat(m.path("content")).hasSize(1);
        assertThat(m.path("content").get(0).path("text").asText()).isEqualTo("L<think>x</think>y");
    }

    @Test
    void anAnswerEndedByAStopSequenceNamesIt() throws Exception {
        // An engine that, like the model server, stops on the stop string and keeps it in the output.
        org.rollout.api.InferenceEngine stopping = new org.rollout.api.InferenceEngine() {
            @Override
            public ModelResponse generate(org.rollout.api.ModelRequest request) {
                int[] out = ByteLevelTokenizer.INSTANCE.encode("Hello. END");
                return ModelResponse.of(
                        request.inputIds(),
                        out,
                        new float[out.length],
                        new int[out.length],
                        org.rollout.api.StopReason.STOP,
                        Duration.ofMillis(1));
            }

            @Override
            public int version() {
                return 0;
            }
        };
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults(),
                stopping,
                ByteLevelTokenizer.INSTANCE,
                GenerationConfig.builder().maxTokens(2048).maxNewTokens(64).build());
        ProxySession s = proxy.openSession("1:0", Interaction.ChatTemplateType.HF);
        JsonNode m = ProxyHttp.JSON.readTree(
                post(s, s.apiKey(), HELLO.replace("{\"model\"", "{\"stop_sequences\": [\"END\"], \"model\""))
                        .body());
        assertThat(m.path("stop_reason").asText()).isEqualTo("stop_sequence");
        assertThat(m.path("stop_sequence").asText()).isEqualTo("END");
        assertThat(m.path("content").get(0).path("text").asText()).isEqualTo("Hello. ");
    }

    @Test
    void aBadMaxTokensIsReportedUnderItsOwnName() throws Exception {
        ProxySession s = session(ScriptedEngine.scripted(), 128);
        HttpResponse<String> r = post(s, s.apiKey(), HELLO.replace("32", "0"));
        assertThat(r.statusCode()).isEqualTo(400);
        String message =
                ProxyHttp.JSON.readTree(r.body()).path("error").path("message").asText();
        assertThat(message).contains("max_tokens").doesNotContain("max_completion_tokens");
    }

    @Test
    void countTokensAnswersThePromptLengthWithoutGenerating() throws Exception {
        ScriptedEngine engine = ScriptedEngine.scripted();
        ProxySession s = session(engine, 128);
        HttpRequest request = HttpRequest.newBuilder(URI.create(s.baseUrl() + "/messages/count_tokens"))
                .timeout(Duration.ofSeconds(60))
                .header("x-api-key", s.apiKey())
                .POST(HttpRequest.BodyPublishers.ofString(
                        "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}"))
                .build();
        HttpResponse<String> r = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        String prompt = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
        assertThat(ProxyHttp.JSON.readTree(r.body()).path("input_tokens").asInt())
                .isEqualTo(ByteLevelTokenizer.INSTANCE.encode(prompt).length);
        assertThat(engine.requests()).isEmpty();
        assertThat(s.interactions()).isEmpty();
    }

    @Test
    void runningOutOfTokensIsStopReasonMaxTokens() throws Exception {
        ProxySession s = session(ScriptedEngine.replying("A long answer that does not fit."), 4);
        JsonNode m = ProxyHttp.JSON.readTree(
                post(s, s.apiKey(), HELLO.replace("32", "4")).body());
        assertThat(m.path("stop_reason").asText()).isEqualTo("max_tokens");
        assertThat(m.path("usage").path("output_tokens").asInt()).isEqualTo(4);
    }

    @Test
    void aStreamNamesEachEventAndEndsWithMessageStop() throws Exception {
        ProxySession s = session(ScriptedEngine.replying("Hello."), 128);
        HttpResponse<String> r = post(s, s.apiKey(), HELLO.replace("{\"model\"", "{\"stream\": true, \"model\""));
        assertThat(r.headers().firstValue("Content-Type")).contains("text/event-stream");
        assertThat(r.body().lines().filter(l -> l.startsWith("event: ")).map(l -> l.substring(7)))
                .containsExactly(
                        "message_start",
                        "content_block_start",
                        "content_block_delta",
                        "content_block_stop",
                        "message_delta",
                        "message_stop");
    }

    @Test
    void theMessagesApiIsServedUnderTheSessionsBaseWithoutV1Too() throws Exception {
        ProxySession s = session(ScriptedEngine.replying("Hello."), 128);
        String base = s.baseUrl().toString().replaceAll("/v1$", "");
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/messages"))
                .timeout(Duration.ofSeconds(60))
                .header("x-api-key", s.apiKey())
                .POST(HttpRequest.BodyPublishers.ofString(HELLO))
                .build();
        HttpResponse<String> r = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(ProxyHttp.JSON
                        .readTree(r.body())
                        .path("content")
                        .get(0)
                        .path("text")
                        .asText())
                .isEqualTo("Hello.");
        HttpRequest count = HttpRequest.newBuilder(URI.create(base + "/messages/count_tokens"))
                .timeout(Duration.ofSeconds(60))
                .header("x-api-key", s.apiKey())
                .POST(HttpRequest.BodyPublishers.ofString(HELLO))
                .build();
        assertThat(HTTP.send(count, HttpResponse.BodyHandlers.ofString()).statusCode())
                .isEqualTo(200);
    }

    @Test
    void anErrorUnderTheBaseWithoutV1IsInAnthropicsShape() throws Exception {
        ProxySession s = session(ScriptedEngine.scripted(), 128);
        String base = s.baseUrl().toString().replaceAll("/v1$", "");
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/messages"))
                .timeout(Duration.ofSeconds(60))
                .header("x-api-key", s.apiKey())
                .POST(HttpRequest.BodyPublishers.ofString(
                        "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}"))
                .build();
        HttpResponse<String> r = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(ProxyHttp.JSON.readTree(r.body()).path("error").path("type").asText())
                .isEqualTo("invalid_request_error");
        assertThat(ProxyHttp.JSON.readTree(r.body()).path("type").asText()).isEqualTo("error");
    }
}
