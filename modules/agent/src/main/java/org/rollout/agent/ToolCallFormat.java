package org.rollout.agent;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.rollout.api.Tokenizer;
import org.rollout.config.AgentSection;

/**
 * The tool-call formats of the common open model families, each read as vLLM's parser of the same
 * name reads it (what the model writes → OpenAI tool calls):
 *
 * <pre>
 *   hermes       Qwen2.5/Qwen3, Hermes   &lt;tool_call&gt;{"name": "f", "arguments": {…}}&lt;/tool_call&gt;  (any number)
 *   llama3_json  Llama 3.1–3.3           [&lt;|python_tag|&gt;]{"name": "f", "parameters": {…}}  (the whole answer; several joined by ";")
 *   mistral      Mistral, Mixtral        [TOOL_CALLS][{"name": "f", "arguments": {…}}, …]   or   [TOOL_CALLS]f[ARGS]{…}
 *   deepseek     DeepSeek V3 / R1 / V3.1 &lt;｜tool▁calls▁begin｜&gt;&lt;｜tool▁call▁begin｜&gt;function&lt;｜tool▁sep｜&gt;f\n```json\n{…}\n```&lt;｜tool▁call▁end｜&gt;…&lt;｜tool▁calls▁end｜&gt;
 *                                        (V3.1: …&lt;｜tool▁call▁begin｜&gt;f&lt;｜tool▁sep｜&gt;{…}&lt;｜tool▁call▁end｜&gt;…)
 * </pre>
 *
 * <p>Text before the calls is the message's content (null when nothing is left); a call that is not
 * well-formed JSON with a name leaves the text as content, as {@link ToolCallParser} does for
 * hermes. {@link #detect} picks the format from what the model's chat template renders for an
 * assistant tool call. Stateless and thread-safe.
 */
public enum ToolCallFormat {
    HERMES,
    LLAMA3_JSON,
    MISTRAL,
    DEEPSEEK;

    static final String PYTHON_TAG = "<|python_tag|>";
    static final String MISTRAL_CALLS = "[TOOL_CALLS]";
    static final String MISTRAL_ARGS = "[ARGS]";
    static final String DS_CALLS_BEGIN = "<｜tool▁calls▁begin｜>";
    static final String DS_CALL_BEGIN = "<｜tool▁call▁begin｜>";
    static final String DS_SEP = "<｜tool▁sep｜>";
    static final String DS_CALL_END = "<｜tool▁call▁end｜>";

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PROBE_NAME = "rollout_probe_fn";

    /** Whether the format's markers are special tokens that a text decoded without them would lose. */
    boolean needsSpecialTokens() {
        return this != HERMES;
    }

    /** The config value: {@code hermes}, {@code llama3_json}, {@code mistral} or {@code deepseek}. */
    public String configName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * A format by its config name; {@code qwen} and {@code qwen25} are hermes.
     *
     * @throws IllegalArgumentException naming the allowed values
     */
    public static ToolCallFormat fromConfig(String name) {
        String canonical = AgentSection.toolCallFormatName(name);
        if (canonical == null) {
            throw new IllegalArgumentException(
                    "tool call format '" + name + "' is not one of auto, hermes, llama3_json, mistral, deepseek");
        }
        return valueOf(canonical.toUpperCase(Locale.ROOT));
    }

    /**
     * The format the tokenizer's chat template writes tool calls in: an assistant tool call is
     * rendered and its markers looked for. Hermes when the template renders none of the known
     * markers or cannot render tool calls.
     */
    public static ToolCallFormat detect(Tokenizer tokenizer) {
        String rendered;
        try {
            Map<String, Object> fn = Map.of("name", PROBE_NAME, "arguments", Map.of("x", 1));
            Map<String, Object> call = Map.of("id", "call_probe", "type", "function", "function", fn);
            List<Map<String, Object>> messages = List.of(
                    Map.of("role", "user", "content", "probe"),
                    Map.of("role", "assistant", "content", "", "tool_calls", List.of(call)));
            Map<String, Object> tool = Map.of(
                    "type", "function", "function", Map.of("name", PROBE_NAME, "parameters", Map.of("type", "object")));
            rendered = tokenizer.applyChatTemplate(messages, false, Map.of("tools", List.of(tool)));
        } catch (RuntimeException e) {
            return HERMES;
        }
        return detectIn(rendered);
    }

    /** The format whose markers a rendered conversation shows; hermes when none. */
    static ToolCallFormat detectIn(String rendered) {
        if (rendered.contains(DS_CALL_BEGIN)) {
            return DEEPSEEK;
        }
        if (rendered.contains(MISTRAL_CALLS)) {
            return MISTRAL;
        }
        if (rendered.contains(ToolCallParser.OPEN)) {
            return HERMES;
        }
        if (rendered.contains(PYTHON_TAG) || rendered.contains("\"parameters\"")) {
            return LLAMA3_JSON;
        }
        return HERMES;
    }

    /**
     * The start of a tool call as the format writes it, for a forced call: appended to the prompt, it
     * leaves the model to write the rest (the function's name when none is given, then the
     * arguments and the closing markers).
     *
     * <pre>
     *   hermes       &lt;tool_call&gt;\n                        or  &lt;tool_call&gt;\n{"name": "f", "arguments":
     *   llama3_json  {"name": "                            or  {"name": "f", "parameters":
     *   mistral      [TOOL_CALLS]                          or  [TOOL_CALLS][{"name": "f", "arguments":
     *   deepseek     &lt;｜tool▁calls▁begin｜&gt;&lt;｜tool▁call▁begin｜&gt;  then  function&lt;｜tool▁sep｜&gt;f\n```json\n
     * </pre>
     *
     * @param function the function to call, or null when the model chooses
     */
    public String opening(String function) {
        String name = function == null ? null : quoted(function);
        return switch (this) {
            case HERMES ->
                ToolCallParser.OPEN + "\n" + (name == null ? "" : "{\"name\": " + name + ", \"arguments\": ");
            case LLAMA3_JSON -> name == null ? "{\"name\": \"" : "{\"name\": " + name + ", \"parameters\": ";
            case MISTRAL -> MISTRAL_CALLS + (name == null ? "" : "[{\"name\": " + name + ", \"arguments\": ");
            case DEEPSEEK ->
                DS_CALLS_BEGIN
                        + DS_CALL_BEGIN
                        + (function == null ? "" : "function" + DS_SEP + function + "\n```json\n");
        };
    }

    private static String quoted(String s) {
        try {
            return JSON.writeValueAsString(s);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The tool calls and the remaining content of a completion's text. */
    public ToolCallParser.Parsed parse(String text) {
        return switch (this) {
            case HERMES -> ToolCallParser.parse(text);
            case LLAMA3_JSON -> llama(text);
            case MISTRAL -> mistral(text);
            case DEEPSEEK -> deepseek(text);
        };
    }

    private static ToolCallParser.Parsed none(String text) {
        return new ToolCallParser.Parsed(text, List.of());
    }

    private static ToolCallParser.Parsed found(String content, List<ToolCallParser.ToolCall> calls) {
        String c = content == null ? "" : content.strip();
        return new ToolCallParser.Parsed(c.isEmpty() ? null : c, calls);
    }

    private static ToolCallParser.Parsed llama(String text) {
        String body = text.strip();
        if (body.startsWith(PYTHON_TAG)) {
            body = body.substring(PYTHON_TAG.length()).strip();
        }
        if (!body.startsWith("{")) {
            return none(text);
        }
        List<ToolCallParser.ToolCall> calls = new ArrayList<>();
        int at = 0;
        while (at < body.length()) {
            Json j = jsonAt(body, at);
            ToolCallParser.ToolCall call = j == null ? null : call(j.node(), "parameters");
            if (call == null) {
                return none(text);
            }
            calls.add(call);
            at = j.end();
            while (at < body.length() && (Character.isWhitespace(body.charAt(at)) || body.charAt(at) == ';')) {
                at++;
            }
        }
        return found(null, calls);
    }

    private static ToolCallParser.Parsed mistral(String text) {
        int marker = text.indexOf(MISTRAL_CALLS);
        if (marker < 0) {
            return none(text);
        }
        String content = text.substring(0, marker);
        List<ToolCallParser.ToolCall> calls = new ArrayList<>();
        int at = marker;
        while (at < text.length() && text.startsWith(MISTRAL_CALLS, at)) {
            at = skipSpace(text, at + MISTRAL_CALLS.length());
            if (at < text.length() && text.charAt(at) == '[') {
                Json j = jsonAt(text, at);
                if (j == null || !j.node().isArray()) {
                    return none(text);
                }
                for (JsonNode n : j.node()) {
                    ToolCallParser.ToolCall call = call(n, "arguments");
                    if (call == null) {
                        return none(text);
                    }
                    calls.add(call);
                }
                at = skipSpace(text, j.end());
            } else {
                // The newer form repeats name[ARGS]{...}, each after its own [TOOL_CALLS].
                int args = text.indexOf(MISTRAL_ARGS, at);
                if (args < 0) {
                    return none(text);
                }
                String name = text.substring(at, args).strip();
                Json j = jsonAt(text, args + MISTRAL_ARGS.length());
                if (name.isEmpty() || j == null) {
                    return none(text);
                }
                calls.add(new ToolCallParser.ToolCall(
                        ToolCallParser.newCallId(), name, j.node().toString()));
                at = skipSpace(text, j.end());
            }
        }
        if (calls.isEmpty()) {
            return none(text);
        }
        return found(content + text.substring(at), calls);
    }

    private static ToolCallParser.Parsed deepseek(String text) {
        int begin = text.indexOf(DS_CALLS_BEGIN);
        if (begin < 0) {
            return none(text);
        }
        List<ToolCallParser.ToolCall> calls = new ArrayList<>();
        int at = begin + DS_CALLS_BEGIN.length();
        while (true) {
            int open = text.indexOf(DS_CALL_BEGIN, at);
            if (open < 0) {
                break;
            }
            int close = text.indexOf(DS_CALL_END, open);
            if (close < 0) {
                break;
            }
            String call = text.substring(open + DS_CALL_BEGIN.length(), close);
            int sep = call.indexOf(DS_SEP);
            if (sep < 0) {
                return none(text);
            }
            String left = call.substring(0, sep).strip();
            String right = call.substring(sep + DS_SEP.length());
            String name;
            String args;
            if (left.equals("function")) {
                int nl = right.indexOf('\n');
                name = (nl < 0 ? right : right.substring(0, nl)).strip();
                args = nl < 0 ? "{}" : right.substring(nl + 1).strip();
                if (args.startsWith("```")) {
                    args = args.substring(args.indexOf('\n') + 1);
                    int fence = args.lastIndexOf("```");
                    args = (fence < 0 ? args : args.substring(0, fence)).strip();
                }
            } else {
                name = left;
                args = right.strip();
            }
            Json j = jsonAt(args, 0);
            if (name.isEmpty() || j == null || !j.node().isObject()) {
                return none(text);
            }
            calls.add(new ToolCallParser.ToolCall(
                    ToolCallParser.newCallId(), name, j.node().toString()));
            at = close + DS_CALL_END.length();
        }
        if (calls.isEmpty()) {
            return none(text);
        }
        return found(text.substring(0, begin), calls);
    }

    private static int skipSpace(String s, int at) {
        while (at < s.length() && Character.isWhitespace(s.charAt(at))) {
            at++;
        }
        return at;
    }

    /** A JSON value and the index just after it. */
    private record Json(JsonNode node, int end) {}

    private static Json jsonAt(String s, int at) {
        try (JsonParser p = JSON.getFactory().createParser(s.substring(at))) {
            JsonNode node = JSON.readTree(p);
            if (node == null) {
                return null;
            }
            return new Json(node, at + (int) p.currentLocation().getCharOffset());
        } catch (IOException e) {
            return null;
        }
    }

    /** {"name", "arguments" | "parameters"} as a tool call; null when there is no name. */
    private static ToolCallParser.ToolCall call(JsonNode n, String argsKey) {
        if (n == null
                || !n.isObject()
                || !n.path("name").isTextual()
                || n.get("name").asText().isEmpty()) {
            return null;
        }
        JsonNode args = n.has(argsKey) ? n.get(argsKey) : n.has("arguments") ? n.get("arguments") : n.get("parameters");
        String arguments = args == null || args.isNull() ? "{}" : args.isTextual() ? args.asText() : args.toString();
        return new ToolCallParser.ToolCall(
                ToolCallParser.newCallId(), n.get("name").asText(), arguments);
    }
}
