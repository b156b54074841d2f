package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.rollout.api.Interaction;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.testengine.ScriptedEngine;

/** The Responses API's input items that name earlier output (item_reference) and the status of cut answers. */
class ResponsesInputItemsTest {
    private static final String CALL =
            "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}\n</tool_call>";
    private static final String TOOLS =
            "[{\"type\": \"function\", \"name\": \"add\", \"parameters\": {\"type\": \"object\"}}]";

    @RegisterExtension
    final ScriptedProxy proxy = new ScriptedProxy(ByteLevelTokenizer.INSTANCE, 128);

    private ProxySession session(ScriptedEngine engine) throws Exception {
        return proxy.session(engine);
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
    void anItemReferenceToAnEarlierAnswersMessageStandsForThatMessage() throws Exception {
        ProxySession s = session(ScriptedEngine.replying("Hello there.", "Fine."));
        JsonNode first = post(s, "{\"model\": \"m\", \"input\": \"Hi\"}").body();
        String msg = itemOfType(first, "message");

        ProxyHttp.Reply second = post(
                s,
                "{\"model\": \"m\", \"store\": true, \"input\": [{\"role\": \"user\", \"content\": \"Hi\"},"
                        + " {\"type\": \"item_reference\", \"id\": \"" + msg + "\"},"
                        + " {\"role\": \"user\", \"content\": \"How are you?\"}]}");

        assertThat(second.status()).as(second.raw()).isEqualTo(200);
        List<Interaction> its = s.interactions();
        assertThat(its.get(1).messages())
                .extracting(m -> m.get("role") + ":" + m.get("content"))
                .containsExactly("user:Hi", "assistant:Hello there.", "user:How are you?");
        assertThat(its.get(1).parent()).isSameAs(its.get(0));
    }

    @Test
    void anItemReferenceToAnEarlierFunctionCallStandsForThatToolCall() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying(CALL, "It is 5.");
        ProxySession s = session(engine);
        JsonNode first = post(s, "{\"input\": \"What is 2+3?\", \"tools\": " + TOOLS + "}")
                .body();
        String fc = itemOfType(first, "function_call");
        String callId = first.get("output").get(0).get("call_id").asText();

        ProxyHttp.Reply second = post(
                s,
                "{\"tools\": " + TOOLS + ", \"input\": [{\"role\": \"user\", \"content\": \"What is 2+3?\"},"
                        + " {\"id\": \"" + fc + "\"},"
                        + " {\"type\": \"function_call_output\", \"call_id\": \"" + callId
                        + "\", \"output\": \"5\"}]}");

        assertThat(second.status()).as(second.raw()).isEqualTo(200);
        assertThat(second.body()
                        .path("output")
                        .get(0)
                        .path("content")
                        .get(0)
                        .path("text")
                        .asText())
                .isEqualTo("It is 5.");
        Map<String, Object> assistant = s.interactions().get(1).messages().get(1);
        assertThat(assistant.get("tool_calls").toString()).contains(callId, "add");
        assertThat(s.interactions().get(1).parent()).isSameAs(s.interactions().get(0));
        String prompt =
                ByteLevelTokenizer.INSTANCE.decode(engine.requests().get(1).inputIds(), false);
        assertThat(prompt).contains("\"name\": \"add\"").contains("<tool_response>");
    }

    @Test
    void anItemReferenceToAReasoningItemIsAcceptedAndNotRenderedAgain() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying("<think>\nTwo plus three.\n</think>\n\nIt is 5.", "Yes.");
        ProxySession s = session(engine);
        JsonNode first = post(s, "{\"input\": \"What is 2+3?\"}").body();
        String rs = itemOfType(first, "reasoning");
        String msg = itemOfType(first, "message");

        ProxyHttp.Reply second = post(
                s,
                "{\"input\": [{\"role\": \"user\", \"content\": \"What is 2+3?\"},"
                        + " {\"type\": \"item_reference\", \"id\": \"" + rs + "\"},"
                        + " {\"type\": \"item_reference\", \"id\": \"" + msg + "\"},"
                        + " {\"role\": \"user\", \"content\": \"Sure?\"}]}");

        assertThat(second.status()).as(second.raw()).isEqualTo(200);
        assertThat(s.interactions().get(1).messages())
                .extracting(m -> m.get("role") + ":" + m.get("content"))
                .containsExactly("user:What is 2+3?", "assistant:It is 5.", "user:Sure?");
        String prompt =
                ByteLevelTokenizer.INSTANCE.decode(engine.requests().get(1).inputIds(), false);
        assertThat(prompt).doesNotContain("Two plus three.");
    }

    @Test
    void anUnknownItemReferenceIs400NamingTheItemsId() throws Exception {
        ProxySession s = session(ScriptedEngine.scripted());
        ProxyHttp.Reply r = post(
                s,
                "{\"input\": [{\"role\": \"user\", \"content\": \"Hi\"},"
                        + " {\"type\": \"item_reference\", \"id\": \"msg_unknown\"}]}");

        assertThat(r.status()).as(r.raw()).isEqualTo(400);
        assertThat(r.error().path("param").asText()).isEqualTo("input[1].id");
        assertThat(r.error().path("message").asText()).contains("input[1].id", "msg_unknown");
        assertThat(s.interactions()).isEmpty();
    }

    @Test
    void anItemReferenceToAnotherSessionsOutputIs400() throws Exception {
        ProxySession s = session(ScriptedEngine.replying("Hello there."));
        String msg = itemOfType(post(s, "{\"input\": \"Hi\"}").body(), "message");
        ProxySession other = proxy.openSession("2:0");

        ProxyHttp.Reply r = post(other, "{\"input\": [{\"type\": \"item_reference\", \"id\": \"" + msg + "\"}]}");

        assertThat(r.status()).as(r.raw()).isEqualTo(400);
        assertThat(r.error().path("param").asText()).isEqualTo("input[0].id");
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
