package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ChatMlTest {
    private static final ChatTemplate QWEN_TOOLS =
            ChatTemplate.compile("qwen2.5 tools", TokenizerFixtures.template("qwen2.5-tools-exact.jinja"));

    // Ordered maps throughout: JSON key order follows iteration order, and Map.of's is random per JVM.
    private static final Map<String, Object> ADD_TOOL = ordered(
            "type",
            "function",
            "function",
            ordered(
                    "name", "add",
                    "description", "Adds two integers.",
                    "parameters",
                            ordered(
                                    "type",
                                    "object",
                                    "properties",
                                    ordered("a", Map.of("type", "integer"), "b", Map.of("type", "integer")),
                                    "required",
                                    List.of("a", "b"))));

    private static Map<String, Object> ordered(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    private static Map<String, Object> msg(String role, Object content) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("role", role);
        m.put("content", content);
        return m;
    }

    private static Map<String, Object> assistantCalling(String content, String name, Object arguments) {
        Map<String, Object> m = msg("assistant", content);
        m.put(
                "tool_calls",
                List.of(ordered(
                        "id",
                        "call_1",
                        "type",
                        "function",
                        "function",
                        ordered("name", name, "arguments", arguments))));
        return m;
    }

    private static Map<String, Object> toolResult(String content) {
        Map<String, Object> m = msg("tool", content);
        m.put("tool_call_id", "call_1");
        return m;
    }

    @Test
    void plainConversationsRenderAsBeforeWithoutTools() {
        List<Map<String, Object>> messages = List.of(msg("system", "Be brief."), msg("user", "Hi"));
        assertThat(ChatMl.render(messages, true))
                .isEqualTo("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                        + "<|im_start|>assistant\n");
        assertThat(ChatMl.render(messages, List.of(), true)).isEqualTo(ChatMl.render(messages, true));
    }

    @Test
    void toolsGoIntoTheSystemTurnExactlyAsQwenRendersThem() {
        List<Map<String, Object>> messages = List.of(msg("system", "Use tools."), msg("user", "1+2?"));
        String rendered = ChatMl.render(messages, List.of(ADD_TOOL), true);
        assertThat(rendered).isEqualTo(QWEN_TOOLS.render(messages, true, Map.of("tools", List.of(ADD_TOOL))));
        assertThat(rendered)
                .startsWith("<|im_start|>system\nUse tools.\n\n# Tools\n")
                .contains("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"add\", \"description\":"
                        + " \"Adds two integers.\", \"parameters\": {\"type\": \"object\", \"properties\": {\"a\":"
                        + " {\"type\": \"integer\"}, \"b\": {\"type\": \"integer\"}}, \"required\": [\"a\","
                        + " \"b\"]}}}\n</tools>")
                .endsWith("<|im_start|>user\n1+2?<|im_end|>\n<|im_start|>assistant\n");
    }

    @Test
    void withoutASystemMessageToolsUseQwensDefaultSystemText() {
        List<Map<String, Object>> messages = List.of(msg("user", "1+2?"));
        String rendered = ChatMl.render(messages, List.of(ADD_TOOL), false);
        assertThat(rendered).startsWith("<|im_start|>system\n" + ChatMl.DEFAULT_TOOL_SYSTEM + "\n\n# Tools");
        assertThat(rendered).isEqualTo(QWEN_TOOLS.render(messages, false, Map.of("tools", List.of(ADD_TOOL))));
    }

    @Test
    void toolCallsAndConsecutiveToolResultsRenderAsQwenDoes() {
        Map<String, Object> twoCalls = msg("assistant", "Let me add.");
        twoCalls.put(
                "tool_calls",
                List.of(
                        Map.of("function", ordered("name", "add", "arguments", ordered("a", 1, "b", 2))),
                        Map.of("function", ordered("name", "add", "arguments", ordered("a", 3, "b", 4)))));
        List<Map<String, Object>> messages = List.of(
                msg("user", "Add twice."), twoCalls, toolResult("3"), toolResult("7"), msg("assistant", "3 and 7"));
        String rendered = ChatMl.render(messages, List.of(ADD_TOOL), true);
        assertThat(rendered).isEqualTo(QWEN_TOOLS.render(messages, true, Map.of("tools", List.of(ADD_TOOL))));
        assertThat(rendered)
                .contains("<|im_start|>assistant\nLet me add.\n<tool_call>\n{\"name\": \"add\", \"arguments\":"
                        + " {\"a\": 1, \"b\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\":"
                        + " {\"a\": 3, \"b\": 4}}\n</tool_call><|im_end|>\n")
                .contains("<|im_start|>user\n<tool_response>\n3\n</tool_response>\n<tool_response>\n7\n"
                        + "</tool_response><|im_end|>\n<|im_start|>assistant\n3 and 7<|im_end|>\n");
    }

    @Test
    void aToolCallWithoutContentStartsOnTheHeaderLine() {
        List<Map<String, Object>> messages =
                List.of(msg("user", "1+2?"), assistantCalling(null, "add", ordered("a", 1, "b", 2)));
        assertThat(ChatMl.render(messages, false))
                .isEqualTo("<|im_start|>user\n1+2?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"add\","
                        + " \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call><|im_end|>\n");
    }

    @Test
    void jsonStringArgumentsAreRenderedAsTheJsonTheyEncode() {
        List<Map<String, Object>> asString =
                List.of(msg("user", "q"), assistantCalling("", "add", "{\"a\":1,\"b\":2.5}"));
        List<Map<String, Object>> asObject =
                List.of(msg("user", "q"), assistantCalling("", "add", ordered("a", 1, "b", 2.5)));
        assertThat(ChatMl.render(asString, false))
                .isEqualTo(ChatMl.render(asObject, false))
                .contains("{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2.5}}");
    }

    @Test
    void nonJsonStringArgumentsAreRenderedAsAJsonString() {
        List<Map<String, Object>> messages = List.of(msg("user", "q"), assistantCalling("", "echo", "not {json"));
        assertThat(ChatMl.render(messages, false)).contains("{\"name\": \"echo\", \"arguments\": \"not {json\"}");
    }

    @Test
    void aToolCallWithoutANameIsRefusedNamingIt() {
        Map<String, Object> bad = msg("assistant", "");
        bad.put("tool_calls", List.of(Map.of("function", Map.of("arguments", "{}"))));
        assertThatThrownBy(() -> ChatMl.render(List.of(msg("user", "q"), bad), false))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("messages[1].tool_calls[0] has no string function 'name'");
    }

    @Test
    void aToolCallThatIsNotAnObjectIsRefusedNamingIt() {
        Map<String, Object> bad = msg("assistant", "");
        bad.put("tool_calls", List.of("add"));
        assertThatThrownBy(() -> ChatMl.render(List.of(bad), false))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("messages[0].tool_calls[0] is not an object");
    }

    @Test
    void theBuiltInTokenizerHasSingleTokensForTheToolCallTags() {
        String rendered = ChatMl.render(List.of(msg("user", "q"), assistantCalling("", "add", ordered("a", 1))), false);
        int[] ids = ByteLevelTokenizer.INSTANCE.encode(rendered);
        assertThat(ids).contains(ByteLevelTokenizer.TOOL_CALL_START, ByteLevelTokenizer.TOOL_CALL_END);
        assertThat(ByteLevelTokenizer.INSTANCE.decode(ids, false)).isEqualTo(rendered);
    }
}
