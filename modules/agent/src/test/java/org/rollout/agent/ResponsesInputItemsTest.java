package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.Interaction;
import org.rollout.core.ByteLevelTokenizer;

/** The Responses API's output items: the status of answers cut by their token budget. */
class ResponsesInputItemsTest {
    private static final String CALL =
            "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}\n</tool_call>";
    private static final String TOOLS =
            "[{\"type\": \"function\", \"name\": \"add\", \"parameters\": {\"type\": \"object\"}}]";

    private OpenAIProxy proxy;

    @AfterEach
    void stop() {
        if (proxy != null) {
            proxy.close();
        }
    }

    private ProxySession session(ScriptedEngine engine) throws Exception {
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults(),
                engine,
                ByteLevelTokenizer.INSTANCE,
                GenerationConfig.builder().maxTokens(2048).maxNewTokens(128).build());
        return proxy.openSession("1:0", Interaction.ChatTemplateType.HF);
    }

    private static ProxyHttp.Reply post(ProxySession s, String body) throws Exception {
        return ProxyHttp.post(s.baseUrl() + "/responses", s.apiKey(), body);
    }

    private static String itemOfType(JsonNode response, String type) {
        for (JsonNode item : response.get("output")) {
            if (item.path("type").asText().equals(type)) {
                return item.get("id").asText();
            }
        }
        throw new AssertionError("no " + type + " item in " + response);
    }

    @Test
    void theMessageOfAnAnswerCutByMaxOutputTokensIsIncomplete() throws Exception {
        ProxySession s = session(ScriptedEngine.replying("A long answer that does not fit."));
        ProxyHttp.Reply r = post(s, "{\"input\": \"Hi\", \"max_output_tokens\": 4}");

        assertThat(r.status()).as(r.raw()).isEqualTo(200);
        assertThat(r.body().path("status").asText()).isEqualTo("incomplete");
        JsonNode message = r.body().path("output").get(0);
        assertThat(message.path("type").asText()).isEqualTo("message");
        assertThat(message.path("status").asText()).isEqualTo("incomplete");
    }

    @Test
    void theMessageOfAStreamedAnswerCutByMaxOutputTokensIsIncomplete() throws Exception {
        ProxySession s = session(ScriptedEngine.replying("A long answer that does not fit."));
        ProxyHttp.Reply r = post(s, "{\"input\": \"Hi\", \"max_output_tokens\": 4, \"stream\": true}");

        assertThat(r.status()).isEqualTo(200);
        String done = r.raw()
                .lines()
                .filter(l -> l.startsWith("data: ") && l.contains("\"response.output_item.done\""))
                .findFirst()
                .orElseThrow();
        JsonNode item = ProxyHttp.JSON.readTree(done.substring(6)).get("item");
        assertThat(item.path("status").asText()).isEqualTo("incomplete");
        assertThat(r.raw()).contains("event: response.incomplete");
    }
}
