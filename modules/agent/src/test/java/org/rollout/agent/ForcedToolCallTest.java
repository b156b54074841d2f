package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.rollout.api.ModelResponse;
import org.rollout.api.Tokenizer;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.testengine.ScriptedEngine;

/**
 * {@code tool_choice} that forces a call (required / any, or a named function) in the three APIs: the
 * call's opening goes into the prompt, the model writes the rest, and the answer is a tool call.
 */
class ForcedToolCallTest {
    private static final ByteLevelTokenizer TOK = ByteLevelTokenizer.INSTANCE;
    private static final String CHAT_TOOLS = "[{\"type\": \"function\", \"function\": {\"name\": \"add\","
            + " \"parameters\": {\"type\": \"object\"}}}]";
    private static final String RESPONSES_TOOLS =
            "[{\"type\": \"function\", \"name\": \"add\", \"parameters\": {\"type\": \"object\"}}]";
    private static final String MESSAGES_TOOLS = "[{\"name\": \"add\", \"input_schema\": {\"type\": \"object\"}}]";
    /** What the model writes after the opening of a named call. */
    private static final String AFTER_NAME = "{\"a\": 2, \"b\": 3}}\n</tool_call>";
    /** What the model writes after the opening of any call. */
    private static final String AFTER_OPEN = "{\"name\": \"add\", \"arguments\": " + AFTER_NAME;

    @RegisterExtension
    final ScriptedProxy proxy = new ScriptedProxy(TOK, 128);

    private ProxySession session(ScriptedEngine engine) throws Exception {
        return proxy.session(engine);
    }

    private static ProxyHttp.Reply chat(ProxySession s, String toolChoice) throws Exception {
        return ProxyHttp.post(
                s.baseUrl() + "/chat/completions",
                s.apiKey(),
                "{\"tools\": " + CHAT_TOOLS + ", \"tool_choice\": " + toolChoice
                        + ", \"messages\": [{\"role\": \"user\", \"content\": \"What is 2+3?\"}]}");
    }

    private static HttpResponse<String> messages(ProxySession s, String toolChoice) throws Exception {
        HttpRequest r = HttpRequest.newBuilder(URI.create(s.baseUrl() + "/messages"))
                .timeout(Duration.ofSeconds(60))
                .header("x-api-key", s.apiKey())
                .POST(HttpRequest.BodyPublishers.ofString("{\"max_tokens\": 64, \"tools\": " + MESSAGES_TOOLS
                        + ", \"tool_choice\": " + toolChoice
                        + ", \"messages\": [{\"role\": \"user\", \"content\": \"What is 2+3?\"}]}"))
                .build();
        try (HttpClient http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10))
                .build()) {
            return http.send(r, HttpResponse.BodyHandlers.ofString());
        }
    }

    private static void assertEndsWith(int[] ids, String text) {
        int[] tail = TOK.encode(text);
        assertThat(Arrays.copyOfRange(ids, ids.length - tail.length, ids.length))
                .as("the prompt ends with %s", text)
                .containsExactly(tail);
    }

    @Test
    void requiredStartsTheCallInThePromptAndTheAnswerIsAToolCall() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying(AFTER_OPEN);
        ProxySession s = session(engine);

        ProxyHttp.Reply r = chat(s, "\"required\"");

        assertThat(r.status()).as(r.raw()).isEqualTo(200);
        JsonNode choice = r.body().path("choices").get(0);
        assertThat(choice.path("finish_reason").asText()).isEqualTo("tool_calls");
        JsonNode fn = choice.path("message").path("tool_calls").get(0).path("function");
        assertThat(fn.path("name").asText()).isEqualTo("add");
        assertThat(ProxyHttp.JSON.readTree(fn.path("arguments").asText()))
                .isEqualTo(ProxyHttp.JSON.readTree("{\"a\": 2, \"b\": 3}"));
        assertThat(choice.path("message").path("content").isNull()).isTrue();
        assertEndsWith(engine.requests().getFirst().inputIds(), "<tool_call>\n");
    }

    @Test
    void aForcedCallsOpeningIsRecordedAsPromptTokensNotGeneratedOnes() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying(AFTER_NAME);
        ProxySession s = session(engine);

        assertThat(chat(s, "{\"type\": \"function\", \"function\": {\"name\": \"add\"}}")
                        .status())
                .isEqualTo(200);

        ModelResponse recorded = s.interactions().getFirst().modelResponse();
        assertEndsWith(recorded.inputTokens(), "<tool_call>\n{\"name\": \"add\", \"arguments\": ");
        int[] generated = TOK.encode(AFTER_NAME);
        assertThat(recorded.outputTokens()).hasSize(generated.length + 1).startsWith(generated);
        assertThat(recorded.outputLogprobs()).hasSize(recorded.outputLength());
    }

    @Test
    void aNamedFunctionInResponsesIsCalled() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying(AFTER_NAME);
        ProxySession s = session(engine);

        ProxyHttp.Reply r = ProxyHttp.post(
                s.baseUrl() + "/responses",
                s.apiKey(),
                "{\"input\": \"What is 2+3?\", \"tools\": " + RESPONSES_TOOLS
                        + ", \"tool_choice\": {\"type\": \"function\", \"name\": \"add\"}}");

        assertThat(r.status()).as(r.raw()).isEqualTo(200);
        JsonNode item = r.body().path("output").get(0);
        assertThat(item.path("type").asText()).isEqualTo("function_call");
        assertThat(item.path("name").asText()).isEqualTo("add");
        assertThat(r.body().path("tool_choice").path("name").asText()).isEqualTo("add");
        assertEndsWith(engine.requests().getFirst().inputIds(), "{\"name\": \"add\", \"arguments\": ");
    }

    @Test
    void anyInMessagesForcesAToolUse() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying(AFTER_OPEN);
        ProxySession s = session(engine);

        HttpResponse<String> r = messages(s, "{\"type\": \"any\"}");

        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode m = ProxyHttp.JSON.readTree(r.body());
        assertThat(m.path("stop_reason").asText()).isEqualTo("tool_use");
        assertThat(m.path("content").get(0).path("input")).isEqualTo(ProxyHttp.JSON.readTree("{\"a\": 2, \"b\": 3}"));
        assertEndsWith(engine.requests().getFirst().inputIds(), "<tool_call>\n");
    }

    @Test
    void aNamedToolInMessagesIsCalled() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying(AFTER_NAME);
        ProxySession s = session(engine);

        HttpResponse<String> r = messages(s, "{\"type\": \"tool\", \"name\": \"add\"}");

        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode m = ProxyHttp.JSON.readTree(r.body());
        assertThat(m.path("content").get(0).path("name").asText()).isEqualTo("add");
        assertEndsWith(engine.requests().getFirst().inputIds(), "{\"name\": \"add\", \"arguments\": ");
    }

    @Test
    void aNamedFunctionThatIsNotATool400NamesTheField() throws Exception {
        ProxySession s = session(ScriptedEngine.scripted());

        ProxyHttp.Reply r = chat(s, "{\"type\": \"function\", \"function\": {\"name\": \"mul\"}}");

        assertThat(r.status()).as(r.raw()).isEqualTo(400);
        assertThat(r.error().path("param").asText()).isEqualTo("tool_choice.function.name");
        assertThat(r.error().path("message").asText()).contains("mul");
    }

    @Test
    void aNamedToolThatIsNotATool400NamesTheFieldInMessages() throws Exception {
        ProxySession s = session(ScriptedEngine.scripted());

        HttpResponse<String> r = messages(s, "{\"type\": \"tool\", \"name\": \"mul\"}");

        assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
        assertThat(ProxyHttp.JSON
                        .readTree(r.body())
                        .path("error")
                        .path("message")
                        .asText())
                .contains("tool_choice.name", "mul");
    }

    @Test
    void aThinkingBlockThePromptOpenedIsClosedBeforeTheForcedCall() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying(AFTER_OPEN);
        ProxySession s = proxy.session(engine, new ThinkingTemplate());

        ProxyHttp.Reply r = chat(s, "\"required\"");

        assertThat(r.status()).as(r.raw()).isEqualTo(200);
        JsonNode message = r.body().path("choices").get(0).path("message");
        assertThat(message.path("tool_calls")
                        .get(0)
                        .path("function")
                        .path("name")
                        .asText())
                .isEqualTo("add");
        assertThat(message.has("reasoning_content")).isFalse();
        assertEndsWith(engine.requests().getFirst().inputIds(), "<think>\n\n</think>\n\n<tool_call>\n");
    }

    /** The built-in template, its generation prompt opening a thinking block (as Qwen3's may). */
    private static final class ThinkingTemplate implements Tokenizer {
        @Override
        public int[] encode(String text) {
            return TOK.encode(text);
        }

        @Override
        public String decode(int[] ids, boolean skipSpecialTokens) {
            return TOK.decode(ids, skipSpecialTokens);
        }

        @Override
        public int eosTokenId() {
            return TOK.eosTokenId();
        }

        @Override
        public int padTokenId() {
            return TOK.padTokenId();
        }

        @Override
        public int vocabSize() {
            return TOK.vocabSize();
        }

        @Override
        public boolean isSpecial(int id) {
            return TOK.isSpecial(id);
        }

        @Override
        public String applyChatTemplate(List<Map<String, Object>> messages, boolean addGenerationPrompt) {
            return applyChatTemplate(messages, addGenerationPrompt, Map.of());
        }

        @Override
        public String applyChatTemplate(
                List<Map<String, Object>> messages, boolean addGenerationPrompt, Map<String, ?> variables) {
            return TOK.applyChatTemplate(messages, addGenerationPrompt, variables)
                    + (addGenerationPrompt ? "<think>\n" : "");
        }
    }
}
