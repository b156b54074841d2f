package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.GenerationConfig;
import org.rollout.api.Interaction;
import org.rollout.core.HuggingFaceTokenizer;
import org.rollout.testengine.ScriptedEngine;

/** The proxy renders with a Hugging Face tokenizer's own Jinja chat template, tools included. */
class HuggingFaceTemplateTest {
    private HuggingFaceTokenizer tokenizer;
    private ScriptedEngine engine;
    private OpenAIProxy proxy;
    private ProxySession session;

    @BeforeEach
    void start() throws Exception {
        tokenizer = HuggingFaceTokenizer.load(Path.of(HuggingFaceTemplateTest.class
                .getResource("/tokenizers/tiny-qwen")
                .toURI()));
        engine = ScriptedEngine.scripted(tokenizer).thenReply("hello world");
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults(),
                engine,
                tokenizer,
                GenerationConfig.builder().maxNewTokens(16).build());
        session = proxy.openSession("1:0", Interaction.ChatTemplateType.HF);
    }

    @AfterEach
    void stop() {
        proxy.close();
    }

    @Test
    void messagesAreRenderedByTheTokenizersTemplate() throws Exception {
        ProxyHttp.Reply r =
                ProxyHttp.post(session.baseUrl() + "/chat/completions", session.apiKey(), ProxyHttp.chatBody("hello"));
        assertThat(r.status()).as(r.raw()).isEqualTo(200);
        List<Map<String, Object>> messages = List.of(Map.of("role", "user", "content", "hello"));
        String expected = tokenizer.applyChatTemplate(messages, true);
        // The template adds its default system turn: proof that it, not ChatML, rendered the prompt.
        assertThat(expected).startsWith("<|im_start|>system\nYou are a helpful assistant.");
        assertThat(engine.requests().getFirst().inputIds()).containsExactly(tokenizer.encode(expected));
        assertThat(r.body().get("choices").get(0).get("message").get("content").asText())
                .isEqualTo("hello world");
    }

    @Test
    void toolsArePassedToTheTemplateAsAVariable() throws Exception {
        ProxyHttp.Reply r = ProxyHttp.post(
                session.baseUrl() + "/chat/completions",
                session.apiKey(),
                "{\"messages\": [{\"role\": \"user\", \"content\": \"hello\"}], \"tools\": [{\"type\": \"function\","
                        + " \"function\": {\"name\": \"add\"}}]}");
        assertThat(r.status()).as(r.raw()).isEqualTo(200);
        List<Map<String, Object>> messages = List.of(Map.of("role", "user", "content", "hello"));
        Map<String, Object> tool = new LinkedHashMap<>(); // the order the request sent
        tool.put("type", "function");
        tool.put("function", Map.of("name", "add"));
        String expected = tokenizer.applyChatTemplate(messages, true, Map.of("tools", List.of(tool)));
        assertThat(expected).contains("# Tools").contains("\"name\": \"add\"");
        assertThat(engine.requests().getFirst().inputIds()).containsExactly(tokenizer.encode(expected));
    }

    @Test
    void toolsATokenizerCannotRenderAreRefusedNamingTheToolsParameter(@TempDir Path dir) throws Exception {
        // The tokenizer without its tokenizer_config.json: no chat template, so ChatML, which has no tools.
        Files.copy(
                Path.of(HuggingFaceTemplateTest.class
                                .getResource("/tokenizers/tiny-qwen")
                                .toURI())
                        .resolve("tokenizer.json"),
                dir.resolve("tokenizer.json"));
        HuggingFaceTokenizer noTemplate = HuggingFaceTokenizer.load(dir);
        try (OpenAIProxy plain = OpenAIProxy.start(
                ProxyConfig.defaults(),
                ScriptedEngine.scripted(noTemplate).thenReply("hi"),
                noTemplate,
                GenerationConfig.builder().maxNewTokens(16).build())) {
            ProxySession s = plain.openSession("2:0", Interaction.ChatTemplateType.HF);
            ProxyHttp.Reply r = ProxyHttp.post(
                    s.baseUrl() + "/chat/completions",
                    s.apiKey(),
                    "{\"messages\": [{\"role\": \"user\", \"content\": \"hello\"}], \"tools\": [{\"type\":"
                            + " \"function\", \"function\": {\"name\": \"add\"}}]}");
            assertThat(r.status()).as(r.raw()).isEqualTo(400);
            assertThat(r.body().get("error").get("param").asText()).isEqualTo("tools");
            assertThat(r.body().get("error").get("message").asText()).contains("cannot render tools");
        }
    }
}
