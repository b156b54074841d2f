package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.rollout.api.ModelResponse;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.testengine.ScriptedEngine;

/** Chat completions answer logprobs when asked, and refuse several choices with OpenAI's error. */
class ChatLogprobsTest {
    @RegisterExtension
    final ScriptedProxy proxy = new ScriptedProxy(ByteLevelTokenizer.INSTANCE, 64);

    private ProxySession session(ScriptedEngine engine) throws Exception {
        return proxy.session(engine);
    }

    @Test
    void logprobsTrueAnswersEachAnswerTokenWithItsRecordedLogprob() throws Exception {
        ProxySession s = session(ScriptedEngine.replying("Hey"));
        ProxyHttp.Reply r = ProxyHttp.post(
                s.baseUrl() + "/chat/completions",
                s.apiKey(),
                "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"logprobs\": true, \"top_logprobs\": 2}");
        assertThat(r.status()).isEqualTo(200);
        JsonNode content = r.body().at("/choices/0/logprobs/content");
        ModelResponse m = s.interactions().getFirst().modelResponse();
        assertThat(content.size()).isEqualTo(m.outputLength() - 1);
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < content.size(); i++) {
            assertThat(content.get(i).path("logprob").floatValue()).isEqualTo(m.outputLogprob(i));
            assertThat(content.get(i).path("top_logprobs").isArray()).isTrue();
            text.append(content.get(i).path("token").asText());
        }
        assertThat(text.toString()).isEqualTo("Hey");
    }

    @Test
    void aStreamedAnswerCarriesEveryTokensLogprobInItsChunks() throws Exception {
        ProxySession s = session(ScriptedEngine.replying("Hello there"));
        ProxyHttp.Reply r = ProxyHttp.post(
                s.baseUrl() + "/chat/completions",
                s.apiKey(),
                "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"stream\": true, \"logprobs\": true}");
        assertThat(r.status()).isEqualTo(200);
        java.util.List<Float> logprobs = new java.util.ArrayList<>();
        StringBuilder tokens = new StringBuilder();
        for (String line : r.raw().split("\n")) {
            if (!line.startsWith("data: {")) {
                continue;
            }
            JsonNode content = ProxyHttp.JSON.readTree(line.substring(6)).at("/choices/0/logprobs/content");
            for (JsonNode c : content) {
                logprobs.add(c.path("logprob").floatValue());
                tokens.append(c.path("token").asText());
            }
        }
        ModelResponse m = s.interactions().getFirst().modelResponse();
        assertThat(logprobs).hasSize(m.outputLength() - 1);
        for (int i = 0; i < logprobs.size(); i++) {
            assertThat(logprobs.get(i)).isEqualTo(m.outputLogprob(i));
        }
        assertThat(tokens.toString()).isEqualTo("Hello there");
    }

    @Test
    void withoutLogprobsTheChoiceLogprobsIsNull() throws Exception {
        ProxySession s = session(ScriptedEngine.replying("Hey"));
        ProxyHttp.Reply r = ProxyHttp.post(s.baseUrl() + "/chat/completions", s.apiKey(), ProxyHttp.chatBody("Hi"));
        assertThat(r.body().at("/choices/0/logprobs").isNull()).isTrue();
    }

    @Test
    void severalChoicesAreRefusedWithAnUnsupportedValueErrorOnN() throws Exception {
        ProxySession s = session(ScriptedEngine.scripted());
        ProxyHttp.Reply r = ProxyHttp.post(
                s.baseUrl() + "/chat/completions",
                s.apiKey(),
                "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"n\": 2}");
        assertThat(r.status()).isEqualTo(400);
        assertThat(r.error().path("param").asText()).isEqualTo("n");
        assertThat(r.error().path("code").asText()).isEqualTo("unsupported_value");
        assertThat(s.interactions()).isEmpty();
    }
}
