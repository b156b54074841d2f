package org.rollout.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.rollout.api.StopReason;

/**
 * OpenAI's Responses API ({@code POST /v1/responses}) on top of the proxy's chat turn: the request
 * is translated into chat messages and tools, generated and recorded as a chat completion is, and the
 * answer is shaped as a {@code response} object (or its stream of events).
 *
 * <pre>
 *   instructions          → a leading system message (not carried over by previous_response_id)
 *   input "text"          → a user message
 *   {type: message}       → a message of its role; input_text / output_text parts joined
 *   {type: function_call} → a tool call on the preceding assistant message (or a new one)
 *   {type: function_call_output} → a tool message with its call_id
 *   {type: reasoning}     → dropped (chat templates do not render past thinking)
 *   {type: item_reference, id} → the output item of that id of an earlier response of the session
 *   previous_response_id  → that response's conversation (its input and output), then this input
 *   tools [{type: function, name, parameters}] → chat tools
 *   max_output_tokens, temperature, top_p, tool_choice auto|none|required|{type: function, name}, stream, top_logprobs,
 *   include ["message.output_text.logprobs"] → the chat fields of the same meaning
 * </pre>
 *
 * <p>Refused with 400: other item and tool types (images, files, built-in tools), {@code text.format}
 * other than text, a {@code previous_response_id} this session did not answer, and a {@code
 * conversation}. Ignored: {@code store} (every response of a session can be chained), {@code
 * reasoning}, {@code metadata}, {@code user}, {@code truncation}, {@code parallel_tool_calls}.
 */
final class ResponsesApi {
    private static final Set<String> ROLES = Set.of("user", "system", "developer", "assistant");

    private final TurnGenerator turns;
    private final JsonBodies bodies;
    private final String model;

    ResponsesApi(TurnGenerator turns, JsonBodies bodies, String model) {
        this.turns = turns;
        this.bodies = bodies;
        this.model = model;
    }

    /** {@code POST /v1/responses}: a {@code response} object, or its events ({@link ResponsesStream}). */
    void responses(ProxyExchange ex, ProxySession session) throws IOException, OpenAIError {
        JsonNode body = bodies.readJson(ex);
        List<Map<String, Object>> previous = null;
        JsonNode prev = body == null ? null : body.get("previous_response_id");
        if (ProxyRequests.present(prev)) {
            previous = prev.isTextual() ? session.conversation(prev.asText()) : null;
            if (previous == null) {
                throw new OpenAIError(
                        400,
                        "invalid_request_error",
                        "previous_response_id",
                        "previous_response_not_found",
                        "Previous response with id " + ProxyRequests.shortJson(prev) + " not found in session '"
                                + session.id() + "'.");
            }
        }
        Translated tr = translate(body, previous, session::outputItem);
        ProxyRequests.Chat req = turns.translatedChat(
                tr.chatBody(), Map.of("max_completion_tokens", "max_output_tokens", "messages", "input"));
        String id = "resp_" + RandomIds.hex(24);
        long created = System.currentTimeMillis() / 1000;
        // A stream's events start once the engine has answered, so that errors are still plain JSON.
        Turn t = turns.turn(session, req, id);
        remember(session, tr, t);
        List<Map<String, Object>> logprobs = req.logprobs() ? turns.tokenLogprobs(t) : null;
        if (req.stream()) {
            ResponsesStream.send(ex, model, body, tr, t, logprobs, created);
            return;
        }
        JsonBodies.sendJson(ex, 200, response(id, created, model, body, tr.instructions(), t, output(t, logprobs)));
    }

    /** Keeps what later requests of the session may name: the conversation and the output items. */
    private static void remember(ProxySession session, Translated tr, Turn t) {
        session.rememberConversation(t.id(), remembered(tr.conversation(), t));
        session.rememberOutputItems(output(t, null));
    }

    /** A translated request: the chat body, and the conversation to remember without instructions. */
    record Translated(ObjectNode chatBody, List<Map<String, Object>> conversation, String instructions) {}

    /**
     * Translates a Responses body into a chat completion body.
     *
     * @param previous the conversation of {@code previous_response_id}, or null when none is named
     * @param outputItems the output items of the session's earlier responses by id (what an {@code
     *     item_reference} names), null for an id the session did not answer
     */
    static Translated translate(
            JsonNode body, List<Map<String, Object>> previous, Function<String, Map<String, Object>> outputItems)
            throws OpenAIError {
        if (body == null || !body.isObject()) {
            throw OpenAIError.invalid(
                    null, "The request body must be a JSON object, got " + ProxyRequests.kind(body) + ".");
        }
        ObjectNode o = (ObjectNode) body;
        if (ProxyRequests.present(o.get("conversation"))) {
            throw OpenAIError.invalid(
                    "conversation",
                    "unsupported_parameter",
                    "conversation is not supported; chain with previous_response_id.");
        }
        List<Map<String, Object>> conversation = new ArrayList<>(previous == null ? List.of() : previous);
        JsonNode input = o.get("input");
        if (input == null || input.isNull()) {
            throw OpenAIError.invalid("input", "Missing required parameter: 'input'.");
        }
        if (input.isTextual()) {
            conversation.add(message("user", input.asText()));
        } else if (input.isArray()) {
            for (int i = 0; i < input.size(); i++) {
                item(input.get(i), "input[" + i + "]", conversation, outputItems);
            }
        } else {
            throw OpenAIError.invalid("input", "'input' must be a string or an array of input items.");
        }
        if (conversation.isEmpty()) {
            throw OpenAIError.invalid("input", "'input' must hold at least one item.");
        }
        String instructions = null;
        JsonNode ins = o.get("instructions");
        if (ProxyRequests.present(ins)) {
            if (!ins.isTextual()) {
                throw OpenAIError.invalid("instructions", "'instructions' must be a string.");
            }
            instructions = ins.asText();
        }
        ObjectNode chat = ProxyRequests.JSON.createObjectNode();
        ArrayNode messages = chat.putArray("messages");
        if (instructions != null) {
            messages.add(ProxyRequests.JSON.valueToTree(message("system", instructions)));
        }
        for (Map<String, Object> m : conversation) {
            messages.add(ProxyRequests.JSON.valueToTree(m));
        }
        JsonNode tools = o.get("tools");
        if (ProxyRequests.present(tools)) {
            if (!tools.isArray()) {
                throw OpenAIError.invalid("tools", "'tools' must be an array of tool objects.");
            }
            ArrayNode out = chat.putArray("tools");
            for (int i = 0; i < tools.size(); i++) {
                JsonNode t = tools.get(i);
                String where = "tools[" + i + "]";
                if (!"function".equals(t.path("type").asText())) {
                    throw OpenAIError.invalid(
                            where + ".type",
                            "unsupported_value",
                            where + " is a '" + t.path("type").asText() + "' tool; only function tools are supported.");
                }
                if (!t.path("name").isTextual() || t.get("name").asText().isEmpty()) {
                    throw OpenAIError.invalid(where + ".name", where + " has no function name.");
                }
                ObjectNode fn = ProxyRequests.JSON.createObjectNode();
                fn.put("name", t.get("name").asText());
                if (t.hasNonNull("description")) {
                    fn.set("description", t.get("description"));
                }
                if (t.hasNonNull("parameters")) {
                    fn.set("parameters", t.get("parameters"));
                }
                ObjectNode tool = out.addObject();
                tool.put("type", "function");
                tool.set("function", fn);
            }
        }
        JsonNode choice = o.get("tool_choice");
        if (ProxyRequests.present(choice)) {
            chat.set("tool_choice", choice);
        }
        JsonNode format = o.path("text").path("format");
        if (!format.isMissingNode()
                && !format.isNull()
                && !"text".equals(format.path("type").asText())) {
            throw OpenAIError.invalid(
                    "text.format",
                    "unsupported_value",
                    "text.format " + ProxyRequests.shortJson(format) + " is not supported; only {\"type\": \"text\"}.");
        }
        copy(o, "max_output_tokens", chat, "max_completion_tokens");
        for (String key : List.of("temperature", "top_p", "stream", "top_logprobs", "seed", "top_k", "stop")) {
            copy(o, key, chat, key);
        }
        boolean logprobs = ProxyRequests.present(o.get("top_logprobs"));
        JsonNode include = o.get("include");
        if (ProxyRequests.present(include) && include.isArray()) {
            for (JsonNode inc : include) {
                logprobs |= "message.output_text.logprobs".equals(inc.asText());
            }
        }
        chat.put("logprobs", logprobs);
        return new Translated(chat, conversation, instructions);
    }

    private static void copy(ObjectNode from, String key, ObjectNode to, String as) {
        JsonNode v = from.get(key);
        if (ProxyRequests.present(v)) {
            to.set(as, v);
        }
    }

    private static Map<String, Object> message(String role, String content) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("role", role);
        m.put("content", content);
        return m;
    }

    private static void item(
            JsonNode item,
            String where,
            List<Map<String, Object>> out,
            Function<String, Map<String, Object>> outputItems)
            throws OpenAIError {
        if (!item.isObject()) {
            throw OpenAIError.invalid(where, where + " must be an object, got " + ProxyRequests.kind(item) + ".");
        }
        // An item of only an id is a reference: OpenAI's item_reference may leave its type out.
        String type = item.path("type")
                .asText(item.has("role") ? "message" : item.has("id") && item.size() == 1 ? "item_reference" : "");
        switch (type) {
            case "item_reference" -> {
                JsonNode id = item.get("id");
                Map<String, Object> referenced = id != null && id.isTextual() ? outputItems.apply(id.asText()) : null;
                if (referenced == null) {
                    throw OpenAIError.invalid(
                            where + ".id",
                            "item_not_found",
                            "Invalid value for " + where + ".id: no output item "
                                    + (id == null ? "(the id is missing)" : ProxyRequests.shortJson(id))
                                    + " in an earlier response of this session.");
                }
                item(ProxyRequests.JSON.valueToTree(referenced), where, out, outputItems);
            }
            case "message" -> {
                String role = item.path("role").asText();
                if (!ROLES.contains(role)) {
                    throw OpenAIError.invalid(
                            where + ".role",
                            "Invalid value for " + where + ".role: '" + role
                                    + "'. Supported values are: 'user', 'system', 'developer' and 'assistant'.");
                }
                out.add(message(role, text(item.get("content"), where + ".content")));
            }
            case "function_call" -> {
                if (!item.path("name").isTextual() || !item.path("call_id").isTextual()) {
                    throw OpenAIError.invalid(where, where + " needs 'call_id' and 'name'.");
                }
                Map<String, Object> fn = new LinkedHashMap<>();
                fn.put("name", item.get("name").asText());
                fn.put("arguments", item.path("arguments").asText("{}"));
                Map<String, Object> call = new LinkedHashMap<>();
                call.put("id", item.get("call_id").asText());
                call.put("type", "function");
                call.put("function", fn);
                Map<String, Object> last = out.isEmpty() ? null : out.getLast();
                if (last != null && "assistant".equals(last.get("role"))) {
                    Map<String, Object> merged = new LinkedHashMap<>(last);
                    List<Object> calls = new ArrayList<>();
                    if (merged.get("tool_calls") instanceof List<?> l) {
                        calls.addAll(l);
                    }
                    calls.add(call);
                    merged.put("tool_calls", calls);
                    out.set(out.size() - 1, merged);
                } else {
                    Map<String, Object> m = message("assistant", null);
                    m.put("tool_calls", new ArrayList<>(List.of(call)));
                    out.add(m);
                }
            }
            case "function_call_output" -> {
                if (!item.path("call_id").isTextual()) {
                    throw OpenAIError.invalid(where + ".call_id", where + " has no 'call_id'.");
                }
                Map<String, Object> m = message("tool", text(item.get("output"), where + ".output"));
                m.put("tool_call_id", item.get("call_id").asText());
                out.add(m);
            }
            case "reasoning" -> {
                // Past thinking is not rendered again, as chat templates drop it from the history.
            }
            default ->
                throw OpenAIError.invalid(
                        where + ".type",
                        "unsupported_value",
                        where + " is a '" + type + "' item; supported are message, function_call,"
                                + " function_call_output, reasoning and item_reference.");
        }
    }

    private static String text(JsonNode c, String where) throws OpenAIError {
        if (c == null || c.isNull()) {
            throw OpenAIError.invalid(where, where + " is missing.");
        }
        if (c.isTextual()) {
            return c.asText();
        }
        if (c.isArray()) {
            StringBuilder sb = new StringBuilder();
            for (int j = 0; j < c.size(); j++) {
                JsonNode part = c.get(j);
                String type = part.path("type").asText();
                if ((type.equals("input_text") || type.equals("output_text") || type.equals("text"))
                        && part.path("text").isTextual()) {
                    sb.append(part.get("text").asText());
                } else if (type.equals("refusal")) {
                    sb.append(part.path("refusal").asText());
                } else {
                    throw OpenAIError.invalid(
                            where + "[" + j + "]",
                            "unsupported_value",
                            where + "[" + j + "] is a '" + type + "' part; only text content is supported.");
                }
            }
            return sb.toString();
        }
        throw OpenAIError.invalid(where, where + " must be a string or a list of text parts.");
    }

    // ---------------------------------------------------------------- answers

    /**
     * The output items: reasoning, then the message (when it has text), then one item per tool call.
     * The message of an answer cut by its token budget is {@code incomplete}, as the response is.
     */
    static List<Map<String, Object>> output(Turn t, List<Map<String, Object>> logprobs) {
        List<Map<String, Object>> items = new ArrayList<>();
        String suffix = t.id().substring("resp_".length());
        if (t.reasoning() != null) {
            items.add(reasoningItem("rs_" + suffix, t.reasoning()));
        }
        String content = t.parsed().content();
        if (content != null && !(content.isEmpty() && t.parsed().hasToolCalls())) {
            String status = t.stop() == StopReason.LENGTH ? "incomplete" : "completed";
            items.add(messageItem("msg_" + suffix, content, logprobs, status));
        }
        for (int i = 0; i < t.parsed().toolCalls().size(); i++) {
            items.add(functionCallItem(
                    "fc_" + i + "_" + suffix, t.parsed().toolCalls().get(i), "completed"));
        }
        return items;
    }

    static Map<String, Object> reasoningItem(String id, String text) {
        Map<String, Object> item = new LinkedHashMap<>();
        item.put("id", id);
        item.put("type", "reasoning");
        item.put("summary", List.of());
        item.put("content", text == null ? List.of() : List.of(reasoningText(text)));
        return item;
    }

    /** A {@code reasoning_text} content part. */
    static Map<String, Object> reasoningText(String text) {
        Map<String, Object> part = new LinkedHashMap<>();
        part.put("type", "reasoning_text");
        part.put("text", text);
        return part;
    }

    static Map<String, Object> outputText(String text, List<Map<String, Object>> logprobs) {
        Map<String, Object> part = new LinkedHashMap<>();
        part.put("type", "output_text");
        part.put("text", text);
        part.put("annotations", List.of());
        part.put("logprobs", logprobs == null ? List.of() : logprobs);
        return part;
    }

    static Map<String, Object> messageItem(String id, String text, List<Map<String, Object>> logprobs, String status) {
        Map<String, Object> item = new LinkedHashMap<>();
        item.put("id", id);
        item.put("type", "message");
        item.put("status", status);
        item.put("role", "assistant");
        item.put("content", text == null ? List.of() : List.of(outputText(text, logprobs)));
        return item;
    }

    static Map<String, Object> functionCallItem(String id, ToolCallParser.ToolCall c, String status) {
        Map<String, Object> item = new LinkedHashMap<>();
        item.put("id", id);
        item.put("type", "function_call");
        item.put("status", status);
        item.put("call_id", c.id());
        item.put("name", c.name());
        item.put("arguments", status.equals("completed") ? c.arguments() : "");
        return item;
    }

    /**
     * The {@code response} object.
     *
     * @param t the generated turn, or null for the in-progress response of a stream's first events
     */
    static Map<String, Object> response(
            String id,
            long createdAt,
            String model,
            JsonNode request,
            String instructions,
            Turn t,
            List<Map<String, Object>> output) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("id", id);
        r.put("object", "response");
        r.put("created_at", createdAt);
        boolean incomplete = t != null && t.stop() == StopReason.LENGTH;
        r.put("status", t == null ? "in_progress" : incomplete ? "incomplete" : "completed");
        r.put("error", null);
        r.put("incomplete_details", incomplete ? Map.of("reason", "max_output_tokens") : null);
        r.put("instructions", instructions);
        r.put("max_output_tokens", number(request.get("max_output_tokens")));
        r.put("model", model);
        r.put("output", output);
        r.put("parallel_tool_calls", true);
        r.put(
                "previous_response_id",
                request.path("previous_response_id").isTextual()
                        ? request.get("previous_response_id").asText()
                        : null);
        Map<String, Object> reasoning = new LinkedHashMap<>();
        reasoning.put("effort", null);
        reasoning.put("summary", null);
        r.put("reasoning", reasoning);
        r.put("store", true);
        r.put("temperature", number(request.get("temperature")));
        r.put("text", Map.of("format", Map.of("type", "text")));
        r.put(
                "tool_choice",
                request.path("tool_choice").isTextual()
                        ? request.get("tool_choice").asText()
                        : request.path("tool_choice").isObject()
                                ? ProxyRequests.JSON.convertValue(request.get("tool_choice"), Map.class)
                                : "auto");
        r.put(
                "tools",
                request.has("tools") && request.get("tools").isArray()
                        ? ProxyRequests.JSON.convertValue(request.get("tools"), List.class)
                        : List.of());
        r.put("top_p", number(request.get("top_p")));
        r.put("truncation", "disabled");
        r.put("usage", t == null ? null : usage(t));
        r.put("user", null);
        r.put(
                "metadata",
                request.path("metadata").isObject()
                        ? ProxyRequests.JSON.convertValue(request.get("metadata"), Map.class)
                        : Map.of());
        return r;
    }

    private static Object number(JsonNode n) {
        return n != null && n.isNumber() ? n.numberValue() : null;
    }

    static Map<String, Object> usage(Turn t) {
        int in = t.resp().inputLength();
        int out = t.resp().outputLength();
        int reasoningTokens = 0;
        Map<String, Object> u = new LinkedHashMap<>();
        u.put("input_tokens", in);
        // The prompt tokens the server found in its prefix cache; 0 when it did not say.
        u.put(
                "input_tokens_details",
                Map.of("cached_tokens", t.resp().cachedTokens().orElse(0)));
        u.put("output_tokens", out);
        u.put("output_tokens_details", Map.of("reasoning_tokens", reasoningTokens));
        u.put("total_tokens", in + out);
        return u;
    }

    /** The conversation a later previous_response_id continues: this request's and the answer's. */
    static List<Map<String, Object>> remembered(List<Map<String, Object>> conversation, Turn t) {
        List<Map<String, Object>> all = new ArrayList<>(conversation);
        Map<String, Object> answer = new LinkedHashMap<>(t.message());
        answer.remove("reasoning_content");
        all.add(answer);
        return List.copyOf(all);
    }
}
