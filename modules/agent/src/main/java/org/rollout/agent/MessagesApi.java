package org.rollout.agent;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.rollout.api.StopReason;

/**
 * Anthropic's Messages API ({@code POST /v1/messages}) on top of the proxy's chat turn: the request
 * is translated into chat messages and tools, generated and recorded as a chat completion is, and the
 * answer is shaped as a {@code message} with content blocks (or its stream of events).
 *
 * <pre>
 *   system (string or text blocks)      → a leading system message
 *   user text blocks                    → a user message
 *   user tool_result blocks             → one tool message each, tool_call_id = tool_use_id
 *   assistant text + tool_use blocks    → an assistant message with tool_calls (input as arguments)
 *   thinking / redacted_thinking blocks → dropped (chat templates do not render past thinking)
 *   tools [{name, description, input_schema}] → chat function tools
 *   max_tokens (required), temperature, top_p, top_k, stop_sequences, stream
 *   tool_choice auto | none | any | {type: tool, name} → the chat tool_choice auto | none | required | a named function
 * </pre>
 *
 * <p>Answers: content blocks thinking (the model's thinking block, {@code signature} empty), text,
 * tool_use; {@code stop_reason} {@code tool_use}, {@code max_tokens}, {@code stop_sequence} (with the
 * matched {@code stop_sequence}) or {@code end_turn}. Refused with
 * 400: images, documents, server tools. Ignored: {@code metadata},
 * {@code thinking} (the chat template decides whether the model thinks), {@code service_tier}.
 * Errors are Anthropic's {@code {"type": "error", "error": {"type", "message"}}}.
 */
final class MessagesApi {
    private final TurnGenerator turns;
    private final JsonBodies bodies;
    private final String model;

    MessagesApi(TurnGenerator turns, JsonBodies bodies, String model) {
        this.turns = turns;
        this.bodies = bodies;
        this.model = model;
    }

    /** {@code POST /v1/messages}: a {@code message}, or its events ({@link MessagesStream}). */
    void messages(ProxyExchange ex, ProxySession session) throws IOException, OpenAIError {
        ProxyRequests.Chat req = turns.translatedChat(
                translate(bodies.readJson(ex)),
                Map.of("max_completion_tokens", "max_tokens", "stop", "stop_sequences"));
        Turn t = turns.turn(session, req, "msg_" + RandomIds.hex(12));
        int input = t.resp().inputLength();
        if (!req.stream()) {
            JsonBodies.sendJson(ex, 200, message(t.id(), model, t, input));
            return;
        }
        MessagesStream.send(ex, model, t, input);
    }

    /** {@code POST /v1/messages/count_tokens}: {@code {"input_tokens"}} of the prompt the body renders to. */
    void countTokens(ProxyExchange ex) throws IOException, OpenAIError {
        ProxyRequests.Chat req =
                turns.translatedChat(translate(bodies.readJson(ex), false), Map.of("stop", "stop_sequences"));
        JsonBodies.sendJson(ex, 200, Map.of("input_tokens", turns.promptTokens(req).length));
    }

    /** Translates a Messages body into a chat completion body. */
    static ObjectNode translate(JsonNode body) throws OpenAIError {
        return translate(body, true);
    }

    /**
     * @param needsMaxTokens false for {@code count_tokens}, whose body has no {@code max_tokens}
     */
    static ObjectNode translate(JsonNode body, boolean needsMaxTokens) throws OpenAIError {
        if (body == null || !body.isObject()) {
            throw OpenAIError.invalid(
                    null, "The request body must be a JSON object, got " + ProxyRequests.kind(body) + ".");
        }
        ObjectNode o = (ObjectNode) body;
        ObjectNode chat = ProxyRequests.JSON.createObjectNode();
        ArrayNode messages = chat.putArray("messages");
        JsonNode system = o.get("system");
        if (ProxyRequests.present(system)) {
            messages.add(message("system", text(system, "system")));
        }
        JsonNode msgs = o.get("messages");
        if (msgs == null || !msgs.isArray() || msgs.isEmpty()) {
            throw OpenAIError.invalid("messages", "messages: a non-empty array of messages is required.");
        }
        for (int i = 0; i < msgs.size(); i++) {
            JsonNode m = msgs.get(i);
            String where = "messages." + i;
            String role = m.path("role").asText();
            if (!role.equals("user") && !role.equals("assistant")) {
                throw OpenAIError.invalid(where + ".role", where + ".role: Input should be 'user' or 'assistant'.");
            }
            JsonNode content = m.get("content");
            if (content == null || content.isNull()) {
                throw OpenAIError.invalid(where + ".content", where + ".content: Field required.");
            }
            if (content.isTextual()) {
                messages.add(message(role, content.asText()));
            } else if (!content.isArray()) {
                throw OpenAIError.invalid(
                        where + ".content", where + ".content must be a string or an array of content blocks.");
            } else if (role.equals("user")) {
                userBlocks(content, where, messages);
            } else {
                assistantBlocks(content, where, messages);
            }
        }
        JsonNode max = o.get("max_tokens");
        if (needsMaxTokens && !ProxyRequests.present(max)) {
            throw OpenAIError.invalid("max_tokens", "max_tokens: Field required.");
        }
        if (ProxyRequests.present(max)) {
            chat.set("max_completion_tokens", max);
        }
        JsonNode tools = o.get("tools");
        if (ProxyRequests.present(tools)) {
            if (!tools.isArray()) {
                throw OpenAIError.invalid("tools", "tools: Input should be a valid list.");
            }
            ArrayNode out = chat.putArray("tools");
            for (int i = 0; i < tools.size(); i++) {
                JsonNode t = tools.get(i);
                String where = "tools." + i;
                String type = t.path("type").asText("custom");
                if (!type.equals("custom")) {
                    throw OpenAIError.invalid(
                            where + ".type",
                            where + " is a '" + type + "' tool; only custom (client) tools are supported.");
                }
                if (!t.path("name").isTextual() || t.get("name").asText().isEmpty()) {
                    throw OpenAIError.invalid(where + ".name", where + ".name: Field required.");
                }
                ObjectNode fn = ProxyRequests.JSON.createObjectNode();
                fn.put("name", t.get("name").asText());
                if (t.hasNonNull("description")) {
                    fn.set("description", t.get("description"));
                }
                if (t.hasNonNull("input_schema")) {
                    fn.set("parameters", t.get("input_schema"));
                }
                ObjectNode tool = out.addObject();
                tool.put("type", "function");
                tool.set("function", fn);
            }
        }
        JsonNode choice = o.get("tool_choice");
        if (ProxyRequests.present(choice)) {
            String type = choice.path("type").asText();
            switch (type) {
                case "auto", "none" -> chat.put("tool_choice", type);
                case "any" -> chat.put("tool_choice", "required");
                case "tool" -> {
                    ObjectNode named = chat.putObject("tool_choice");
                    named.put("type", "function");
                    named.set("name", choice.get("name"));
                }
                default ->
                    throw OpenAIError.invalid(
                            "tool_choice",
                            "tool_choice " + ProxyRequests.shortJson(choice)
                                    + " is not supported; use auto, none, any or tool.");
            }
        }
        JsonNode stops = o.get("stop_sequences");
        if (ProxyRequests.present(stops) && !(stops.isArray() && stops.isEmpty())) {
            chat.set("stop", stops);
        }
        JsonNode t = o.get("temperature");
        if (ProxyRequests.present(t)) {
            if (!t.isNumber() || t.asDouble() < 0 || t.asDouble() > 1) {
                throw OpenAIError.invalid("temperature", "temperature: Input should be a number in [0, 1].");
            }
            chat.set("temperature", t);
        }
        for (String key : List.of("top_p", "top_k", "stream")) {
            JsonNode v = o.get(key);
            if (ProxyRequests.present(v)) {
                chat.set(key, v);
            }
        }
        return chat;
    }

    private static ObjectNode message(String role, String content) {
        ObjectNode m = ProxyRequests.JSON.createObjectNode();
        m.put("role", role);
        m.put("content", content);
        return m;
    }

    private static void userBlocks(JsonNode blocks, String where, ArrayNode out) throws OpenAIError {
        StringBuilder text = null;
        for (int j = 0; j < blocks.size(); j++) {
            JsonNode b = blocks.get(j);
            String w = where + ".content." + j;
            switch (b.path("type").asText()) {
                case "text" -> {
                    text = text == null ? new StringBuilder() : text;
                    text.append(b.path("text").asText());
                }
                case "tool_result" -> {
                    if (text != null) {
                        out.add(message("user", text.toString()));
                        text = null;
                    }
                    if (!b.path("tool_use_id").isTextual()) {
                        throw OpenAIError.invalid(w + ".tool_use_id", w + ".tool_use_id: Field required.");
                    }
                    JsonNode c = b.get("content");
                    ObjectNode m = message("tool", c == null || c.isNull() ? "" : text(c, w + ".content"));
                    m.put("tool_call_id", b.get("tool_use_id").asText());
                    out.add(m);
                }
                default -> throw unsupportedBlock(b, w);
            }
        }
        if (text != null) {
            out.add(message("user", text.toString()));
        }
    }

    private static void assistantBlocks(JsonNode blocks, String where, ArrayNode out) throws OpenAIError {
        StringBuilder text = new StringBuilder();
        ArrayNode calls = ProxyRequests.JSON.createArrayNode();
        for (int j = 0; j < blocks.size(); j++) {
            JsonNode b = blocks.get(j);
            String w = where + ".content." + j;
            switch (b.path("type").asText()) {
                case "text" -> text.append(b.path("text").asText());
                case "tool_use" -> {
                    if (!b.path("name").isTextual() || !b.path("id").isTextual()) {
                        throw OpenAIError.invalid(w, w + ": a tool_use block needs 'id' and 'name'.");
                    }
                    ObjectNode fn = ProxyRequests.JSON.createObjectNode();
                    fn.put("name", b.get("name").asText());
                    fn.put(
                            "arguments",
                            b.path("input").isMissingNode()
                                    ? "{}"
                                    : b.get("input").toString());
                    ObjectNode call = calls.addObject();
                    call.put("id", b.get("id").asText());
                    call.put("type", "function");
                    call.set("function", fn);
                }
                case "thinking", "redacted_thinking" -> {
                    // Past thinking is not rendered again, as chat templates drop it from the history.
                }
                default -> throw unsupportedBlock(b, w);
            }
        }
        ObjectNode m = message("assistant", text.toString());
        if (!calls.isEmpty()) {
            if (text.isEmpty()) {
                m.putNull("content");
            }
            m.set("tool_calls", calls);
        }
        out.add(m);
    }

    private static OpenAIError unsupportedBlock(JsonNode b, String where) {
        return OpenAIError.invalid(
                where + ".type",
                where + " is a '" + b.path("type").asText() + "' block; supported are text, tool_use, tool_result"
                        + " and thinking.");
    }

    private static String text(JsonNode c, String where) throws OpenAIError {
        if (c.isTextual()) {
            return c.asText();
        }
        if (c.isArray()) {
            StringBuilder sb = new StringBuilder();
            for (int j = 0; j < c.size(); j++) {
                JsonNode part = c.get(j);
                if (!"text".equals(part.path("type").asText())
                        || !part.path("text").isTextual()) {
                    throw unsupportedBlock(part, where + "." + j);
                }
                sb.append(part.get("text").asText());
            }
            return sb.toString();
        }
        throw OpenAIError.invalid(where, where + " must be a string or an array of text blocks.");
    }

    // ---------------------------------------------------------------- answers

    /** The content blocks: thinking, text (when there is any), then one tool_use per call. */
    static List<Map<String, Object>> content(Turn t) {
        List<Map<String, Object>> blocks = new ArrayList<>();
        if (t.reasoning() != null) {
            blocks.add(thinkingBlock(t.reasoning()));
        }
        String text = t.parsed().content();
        if (text != null && !(text.isEmpty() && t.parsed().hasToolCalls())) {
            blocks.add(textBlock(text));
        }
        for (ToolCallParser.ToolCall c : t.parsed().toolCalls()) {
            blocks.add(toolUseBlock(c, input(c.arguments())));
        }
        return blocks;
    }

    static Map<String, Object> thinkingBlock(String thinking) {
        Map<String, Object> b = new LinkedHashMap<>();
        b.put("type", "thinking");
        b.put("thinking", thinking);
        b.put("signature", "");
        return b;
    }

    static Map<String, Object> textBlock(String text) {
        Map<String, Object> b = new LinkedHashMap<>();
        b.put("type", "text");
        b.put("text", text);
        return b;
    }

    static Map<String, Object> toolUseBlock(ToolCallParser.ToolCall c, Object input) {
        Map<String, Object> b = new LinkedHashMap<>();
        b.put("type", "tool_use");
        b.put("id", c.id());
        b.put("name", c.name());
        b.put("input", input);
        return b;
    }

    /** The tool call's arguments as the JSON object Anthropic's {@code input} is ({} when they are not one). */
    static Object input(String arguments) {
        try {
            JsonNode n = ProxyRequests.JSON.readTree(arguments);
            if (n != null && n.isObject()) {
                return ProxyRequests.JSON.convertValue(n, LinkedHashMap.class);
            }
        } catch (JsonProcessingException e) {
            // not JSON: an empty input below
        }
        return Map.of();
    }

    static String stopReason(Turn t) {
        if (t.stop() == StopReason.TOOL_CALLS) {
            return "tool_use";
        }
        if (t.stopSequence() != null) {
            return "stop_sequence";
        }
        return t.stop() == StopReason.LENGTH ? "max_tokens" : "end_turn";
    }

    static Map<String, Object> usage(int input, int output) {
        Map<String, Object> u = new LinkedHashMap<>();
        u.put("input_tokens", input);
        u.put("output_tokens", output);
        u.put("cache_creation_input_tokens", 0);
        u.put("cache_read_input_tokens", 0);
        return u;
    }

    /**
     * The {@code message} object.
     *
     * @param t the generated turn, or null for the empty message of a stream's message_start
     */
    static Map<String, Object> message(String id, String model, Turn t, int inputTokens) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", id);
        m.put("type", "message");
        m.put("role", "assistant");
        m.put("model", model);
        m.put("content", t == null ? List.of() : content(t));
        m.put("stop_reason", t == null ? null : stopReason(t));
        m.put("stop_sequence", t == null ? null : t.stopSequence());
        m.put("usage", usage(inputTokens, t == null ? 0 : t.resp().outputLength()));
        return m;
    }

    /** An OpenAI-shaped error in Anthropic's shape, with the same status. */
    static Map<String, Object> errorBody(OpenAIError e) {
        String type = switch (e.status()) {
            case 400, 405, 409 -> "invalid_request_error";
            case 401 -> "authentication_error";
            case 403 -> "permission_error";
            case 404 -> "not_found_error";
            case 413 -> "request_too_large";
            case 503 -> "overloaded_error";
            default -> "api_error";
        };
        Map<String, Object> error = new LinkedHashMap<>();
        error.put("type", type);
        error.put("message", e.getMessage());
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("type", "error");
        body.put("error", error);
        return body;
    }
}
