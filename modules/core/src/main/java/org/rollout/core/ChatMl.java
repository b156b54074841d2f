package org.rollout.core;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Map;

/**
 * The ChatML chat template (Qwen's), used by the built-in tokenizer and as the fallback for
 * Hugging Face tokenizers that ship no template; with tools, tool calls and tool results rendered
 * as Qwen2.5's template renders them.
 *
 * <pre>
 *   &lt;|im_start|&gt;system\nYou are helpful.&lt;|im_end|&gt;\n
 *   &lt;|im_start|&gt;user\nWhat is 2+2?&lt;|im_end|&gt;\n
 *   &lt;|im_start|&gt;assistant\n&lt;tool_call&gt;\n{"name": "add", "arguments": {"a": 2, "b": 2}}\n&lt;/tool_call&gt;&lt;|im_end|&gt;\n
 *   &lt;|im_start|&gt;user\n&lt;tool_response&gt;\n4\n&lt;/tool_response&gt;&lt;|im_end|&gt;\n    ← role "tool"
 *   &lt;|im_start|&gt;assistant\n                       ← with addGenerationPrompt
 * </pre>
 *
 * <p>With a non-empty {@code tools} list the first turn is a system turn holding the first system
 * message's content (Qwen's default system text when there is none), then a {@code # Tools}
 * section listing each tool as JSON inside {@code <tools></tools>} and the instruction to answer
 * with {@code <tool_call>} blocks, word for word as Qwen2.5's template writes it. An assistant
 * message with {@code tool_calls} becomes {@code <|im_start|>assistant}, its content on a new line
 * when non-empty, then one {@code \n<tool_call>\n{"name": …, "arguments": …}\n</tool_call>} per
 * call. Consecutive {@code tool} messages share one user turn, each as {@code \n<tool_response>\n
 * …\n</tool_response>}. JSON is written as Python's {@code json.dumps} writes it (the {@code
 * tojson} filter). Without tools, tool calls and tool messages, the output is plain ChatML.
 *
 * <p>A tool call's {@code arguments} may be an object or, as OpenAI clients send it, a JSON string:
 * a string that parses as JSON is rendered as that JSON (so the prompt shows what the model
 * emitted), any other string is rendered as a JSON string.
 *
 * <p>A message's {@code content} is a string, or a list of parts whose {@code text} fields are
 * joined (OpenAI's content-part form). A message without a string {@code role}, a tool call without
 * a function name, or a tool that is not an object is an {@link IllegalArgumentException} naming
 * its index. Stateless and thread-safe.
 */
public final class ChatMl {
    /** Qwen2.5's system text when tools are given and the conversation has no system message. */
    public static final String DEFAULT_TOOL_SYSTEM =
            "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

    private static final String TOOLS_HEADER = "\n\n# Tools\n\nYou may call one or more functions to assist with the"
            + " user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>";
    private static final String TOOLS_FOOTER = "\n</tools>\n\nFor each function call, return a json object with"
            + " function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\":"
            + " <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

    private static final ObjectMapper JSON = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    private ChatMl() {}

    /** ChatML for {@code messages} without tools. */
    public static String render(List<Map<String, Object>> messages, boolean addGenerationPrompt) {
        return render(messages, null, addGenerationPrompt);
    }

    /**
     * ChatML for {@code messages}, with {@code tools} (OpenAI's {@code [{"type": "function",
     * "function": {…}}]}) in the system turn when non-empty.
     *
     * @param tools the tools the model may call; null or empty for none
     * @throws IllegalArgumentException naming the message or tool index that cannot be rendered
     */
    public static String render(
            List<Map<String, Object>> messages, List<Map<String, Object>> tools, boolean addGenerationPrompt) {
        StringBuilder sb = new StringBuilder();
        int first = 0;
        if (tools != null && !tools.isEmpty()) {
            sb.append("<|im_start|>system\n");
            if (!messages.isEmpty()
                    && messages.get(0) != null
                    && "system".equals(messages.get(0).get("role"))) {
                sb.append(contentText(messages.get(0).get("content"), 0));
                first = 1;
            } else {
                sb.append(DEFAULT_TOOL_SYSTEM);
            }
            sb.append(TOOLS_HEADER);
            for (int t = 0; t < tools.size(); t++) {
                if (tools.get(t) == null) {
                    throw new IllegalArgumentException("tools[" + t + "] is not an object");
                }
                sb.append('\n').append(PythonJson.dumps(tools.get(t)));
            }
            sb.append(TOOLS_FOOTER);
        }
        for (int i = first; i < messages.size(); i++) {
            Map<String, Object> m = messages.get(i);
            if (m == null || !(m.get("role") instanceof String role) || role.isEmpty()) {
                throw new IllegalArgumentException("messages[" + i + "] has no string 'role'");
            }
            if ("tool".equals(role)) {
                if (i == first || !isTool(messages.get(i - 1))) {
                    sb.append("<|im_start|>user");
                }
                sb.append("\n<tool_response>\n")
                        .append(contentText(m.get("content"), i))
                        .append("\n</tool_response>");
                if (i == messages.size() - 1 || !isTool(messages.get(i + 1))) {
                    sb.append("<|im_end|>\n");
                }
                continue;
            }
            if ("assistant".equals(role) && m.get("tool_calls") instanceof List<?> calls && !calls.isEmpty()) {
                sb.append("<|im_start|>assistant");
                String content = contentText(m.get("content"), i);
                if (!content.isEmpty()) {
                    sb.append('\n').append(content);
                }
                for (int c = 0; c < calls.size(); c++) {
                    appendToolCall(sb, calls.get(c), i, c);
                }
                sb.append("<|im_end|>\n");
                continue;
            }
            sb.append("<|im_start|>").append(role).append('\n');
            sb.append(contentText(m.get("content"), i));
            sb.append("<|im_end|>\n");
        }
        if (addGenerationPrompt) {
            sb.append("<|im_start|>assistant\n");
        }
        return sb.toString();
    }

    private static boolean isTool(Map<String, Object> m) {
        return m != null && "tool".equals(m.get("role"));
    }

    private static void appendToolCall(StringBuilder sb, Object call, int index, int c) {
        String where = "messages[" + index + "].tool_calls[" + c + "]";
        if (!(call instanceof Map<?, ?> raw)) {
            throw new IllegalArgumentException(where + " is not an object");
        }
        Map<?, ?> fn = raw.get("function") instanceof Map<?, ?> f ? f : raw;
        if (!(fn.get("name") instanceof String name) || name.isEmpty()) {
            throw new IllegalArgumentException(where + " has no string function 'name'");
        }
        sb.append("\n<tool_call>\n{\"name\": \"")
                .append(name)
                .append("\", \"arguments\": ")
                .append(PythonJson.dumps(arguments(fn.get("arguments"))))
                .append("}\n</tool_call>");
    }

    /** A JSON-string argument as the value it encodes; anything else as it is. */
    private static Object arguments(Object arguments) {
        if (arguments instanceof String s) {
            try {
                return JSON.readValue(s, Object.class);
            } catch (JsonProcessingException e) {
                return s; // not JSON: shown as the string the client sent
            }
        }
        return arguments;
    }

    /** The text of a message's content: a string, a list of text parts, or null (empty). */
    public static String contentText(Object content, int index) {
        if (content == null) {
            return "";
        }
        if (content instanceof String s) {
            return s;
        }
        if (content instanceof List<?> parts) {
            StringBuilder sb = new StringBuilder();
            for (Object p : parts) {
                if (p instanceof Map<?, ?> part && part.get("text") instanceof String t) {
                    sb.append(t);
                } else if (p instanceof String s) {
                    sb.append(s);
                } else {
                    throw new IllegalArgumentException(
                            "messages[" + index + "].content has a part that is not text: " + p);
                }
            }
            return sb.toString();
        }
        throw new IllegalArgumentException(
                "messages[" + index + "].content must be a string or a list of text parts, got "
                        + content.getClass().getSimpleName());
    }
}
