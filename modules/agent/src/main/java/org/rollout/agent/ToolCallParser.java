package org.rollout.agent;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;

/**
 * Finds tool calls in a completion's text, in the format Qwen2.5 (and the built-in tokenizer, which
 * has single tokens for the tags) uses: blocks {@code <tool_call>{"name": …, "arguments": {…}}</tool_call>}
 * (whitespace around the JSON allowed), as vLLM's and SGLang's {@code hermes}/{@code qwen25}
 * parsers read them.
 *
 * <pre>
 *   "Let me add.\n&lt;tool_call&gt;\n{"name": "add", "arguments": {"a": 1}}\n&lt;/tool_call&gt;"
 *     → content "Let me add.", tool_calls [{id: "call_…", name: "add", arguments: "{\"a\":1}"}]
 * </pre>
 *
 * <p>A block counts when its body is one JSON object with a non-empty string {@code name}; its
 * {@code arguments} (or {@code parameters}) may be an object, which is re-serialised compactly as
 * OpenAI's {@code arguments} string, or a string, kept as is; absent means {@code "{}"}. A malformed
 * block (not JSON, no name, no closing tag) stays in the content as text. With at least one tool
 * call the content is the text outside the counted blocks, trimmed, or null when nothing is left;
 * without any it is the text unchanged. Tool call ids are {@code call_} plus 24 random hex digits.
 *
 * <p>Stateless and thread-safe.
 */
public final class ToolCallParser {
    public static final String OPEN = "<tool_call>";
    public static final String CLOSE = "</tool_call>";

    private static final ObjectMapper JSON = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    private static final SecureRandom RANDOM = new SecureRandom();

    private ToolCallParser() {}

    /** One parsed call: OpenAI's {@code {id, type: "function", function: {name, arguments}}}. */
    public record ToolCall(String id, String name, String arguments) {
        public ToolCall {
            Objects.requireNonNull(id, "id");
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(arguments, "arguments");
        }
    }

    /**
     * What a completion's text says.
     *
     * @param content the text for the message's {@code content}, null when only tool calls remain
     * @param toolCalls the calls, in order; empty when none
     */
    public record Parsed(String content, List<ToolCall> toolCalls) {
        public Parsed {
            toolCalls = List.copyOf(toolCalls);
        }

        public boolean hasToolCalls() {
            return !toolCalls.isEmpty();
        }
    }

    /** The tool calls and the remaining content of {@code text}. */
    public static Parsed parse(String text) {
        Objects.requireNonNull(text, "text");
        List<ToolCall> calls = new ArrayList<>();
        StringBuilder outside = new StringBuilder();
        int at = 0;
        while (true) {
            int open = text.indexOf(OPEN, at);
            if (open < 0) {
                break;
            }
            int close = text.indexOf(CLOSE, open + OPEN.length());
            if (close < 0) {
                break;
            }
            ToolCall call = callIn(text.substring(open + OPEN.length(), close));
            if (call != null) {
                outside.append(text, at, open);
                calls.add(call);
            } else {
                outside.append(text, at, close + CLOSE.length());
            }
            at = close + CLOSE.length();
        }
        if (calls.isEmpty()) {
            return new Parsed(text, List.of());
        }
        outside.append(text, at, text.length());
        String content = outside.toString().strip();
        return new Parsed(content.isEmpty() ? null : content, calls);
    }

    private static ToolCall callIn(String body) {
        JsonNode node;
        try {
            node = JSON.readTree(body.strip());
        } catch (JsonProcessingException e) {
            return null;
        }
        if (node == null
                || !node.isObject()
                || !node.path("name").isTextual()
                || node.get("name").asText().isEmpty()) {
            return null;
        }
        JsonNode args = node.has("arguments") ? node.get("arguments") : node.get("parameters");
        String arguments;
        if (args == null || args.isNull()) {
            arguments = "{}";
        } else if (args.isTextual()) {
            arguments = args.asText();
        } else {
            arguments = args.toString();
        }
        return new ToolCall(newCallId(), node.get("name").asText(), arguments);
    }

    /** {@code call_} plus 24 random hex digits. */
    public static String newCallId() {
        byte[] b = new byte[12];
        RANDOM.nextBytes(b);
        return "call_" + HexFormat.of().formatHex(b);
    }
}
