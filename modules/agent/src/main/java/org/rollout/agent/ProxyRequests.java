package org.rollout.agent;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.Tokenizer;

/**
 * Parses and validates the bodies of {@code /v1/chat/completions} and {@code /v1/completions} (and
 * of {@code /v1/responses} and {@code /v1/messages}, once {@link ResponsesApi} and {@link MessagesApi}
 * have translated them into chat bodies) into
 * what the proxy needs: messages (as sent, for recording; and normalised, for the chat template),
 * tools, and a {@link GenerationConfig} built from the proxy's defaults and the request's fields.
 *
 * <p>Field policy (the same for both endpoints where a field exists):
 *
 * <ul>
 *   <li>mapped: {@code temperature} (0 means greedy), {@code top_p}, {@code max_completion_tokens}
 *       or {@code max_tokens} (not both), {@code stop} (a string or up to 4), {@code seed}, {@code
 *       frequency_penalty}, {@code top_k} (vLLM's extension), {@code n} (must be 1: an agent
 *       that wants several samples sends several requests, each then its own recorded interaction),
 *       {@code tools}, {@code tool_choice} ({@code auto}, {@code none}, {@code required} or a named
 *       function: a forced call is started in the prompt), {@code stream}, {@code
 *       stream_options.include_usage}, {@code logprobs} (the answer's tokens with their sampled
 *       logprobs, in answers that are not streamed) and {@code top_logprobs} (0–20; each token's
 *       list of alternatives is empty: the engine reports only the sampled token's logprob);
 *   <li>refused with 400 because they would change what is sampled and the engine cannot honour
 *       them: {@code presence_penalty} ≠ 0, a non-empty {@code logit_bias}, {@code tool_choice}
 *       {@code allowed_tools} or a built-in tool, {@code response_format} other than {@code text},
 *       {@code best_of} &gt; 1, {@code echo}, {@code suffix}, images and audio in content;
 *   <li>ignored: {@code model}, {@code user}, {@code metadata}, {@code store}, {@code
 *       parallel_tool_calls}, {@code service_tier}, and any field not named here.
 * </ul>
 *
 * <p>Every error is an {@link OpenAIError} 400 whose {@code param} names the field, e.g. {@code
 * messages[2].role}. Stateless and thread-safe.
 */
final class ProxyRequests {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<String> ROLES = Set.of("system", "developer", "user", "assistant", "tool");

    private ProxyRequests() {}

    /** A validated chat completion request. */
    record Chat(
            List<Map<String, Object>> messages,
            List<Map<String, Object>> renderMessages,
            List<Map<String, Object>> tools,
            boolean toolsEnabled,
            GenerationConfig gconfig,
            boolean stream,
            boolean includeUsage,
            boolean logprobs,
            int topLogprobs,
            ForcedToolCall forcedToolCall) {}

    /**
     * A tool call the request forces ({@code tool_choice} {@code required} or a named function).
     *
     * @param function the function's name, or null when any of the tools may be called
     */
    record ForcedToolCall(String function) {}

    /** A validated text completion request: a prompt as text, or as token ids. */
    record Completion(String prompt, int[] promptIds, GenerationConfig gconfig, boolean stream, boolean includeUsage) {}

    static Chat chat(JsonNode body, GenerationConfig defaults, Tokenizer tokenizer) throws OpenAIError {
        ObjectNode o = object(body);
        JsonNode msgs = o.get("messages");
        if (msgs == null || msgs.isNull()) {
            throw OpenAIError.invalid("messages", "Missing required parameter: 'messages'.");
        }
        if (!msgs.isArray() || msgs.isEmpty()) {
            throw OpenAIError.invalid("messages", "'messages' must be a non-empty array of message objects.");
        }
        List<Map<String, Object>> asSent = new ArrayList<>();
        List<Map<String, Object>> rendered = new ArrayList<>();
        for (int i = 0; i < msgs.size(); i++) {
            JsonNode m = msgs.get(i);
            String where = "messages[" + i + "]";
            if (!m.isObject()) {
                throw OpenAIError.invalid(where, where + " must be an object, got " + kind(m) + ".");
            }
            asSent.add(toMap(m));
            rendered.add(renderMessage(m, where));
        }
        List<Map<String, Object>> tools = tools(o.get("tools"));
        boolean toolsEnabled = !tools.isEmpty();
        ForcedToolCall forced = null;
        JsonNode choice = o.get("tool_choice");
        if (choice != null && !choice.isNull()) {
            if (choice.isTextual() && choice.asText().equals("none")) {
                toolsEnabled = false;
            } else if (!(choice.isTextual() && choice.asText().equals("auto"))) {
                forced = forcedToolCall(choice, tools);
            }
        }
        JsonNode presence = o.get("presence_penalty");
        if (presence != null && !presence.isNull() && (!presence.isNumber() || presence.asDouble() != 0)) {
            throw OpenAIError.invalid(
                    "presence_penalty",
                    "unsupported_parameter",
                    "presence_penalty is not supported; omit it or send 0.");
        }
        JsonNode format = o.get("response_format");
        if (format != null
                && !format.isNull()
                && !"text".equals(format.path("type").asText())) {
            throw OpenAIError.invalid(
                    "response_format",
                    "unsupported_value",
                    "response_format " + shortJson(format) + " is not supported; only {\"type\": \"text\"}.");
        }
        JsonNode maxCompletion = o.get("max_completion_tokens");
        JsonNode maxTokens = o.get("max_tokens");
        if (present(maxCompletion) && present(maxTokens)) {
            throw OpenAIError.invalid(
                    "max_tokens",
                    "max_tokens and max_completion_tokens cannot both be set; use max_completion_tokens.");
        }
        GenerationConfig g =
                gconfig(o, defaults, tokenizer, present(maxCompletion) ? "max_completion_tokens" : "max_tokens");
        boolean logprobs = bool(o, "logprobs");
        int top = 0;
        JsonNode topNode = o.get("top_logprobs");
        if (present(topNode)) {
            if (!topNode.isIntegralNumber() || topNode.asInt() < 0 || topNode.asInt() > 20) {
                throw OpenAIError.invalid(
                        "top_logprobs",
                        "'top_logprobs' must be an integer in [0, 20], got " + shortJson(topNode) + ".");
            }
            top = topNode.asInt();
        }
        return new Chat(
                List.copyOf(asSent),
                List.copyOf(rendered),
                tools,
                toolsEnabled,
                g,
                bool(o, "stream"),
                includeUsage(o),
                logprobs,
                top,
                forced);
    }

    /**
     * {@code "required"}, {@code {"type": "function", "function": {"name"}}} (Chat Completions) or
     * {@code {"type": "function", "name"}} (Responses), checked against the request's tools.
     */
    private static ForcedToolCall forcedToolCall(JsonNode choice, List<Map<String, Object>> tools) throws OpenAIError {
        ForcedToolCall forced;
        String nameParam = "tool_choice";
        if (choice.isTextual() && choice.asText().equals("required")) {
            forced = new ForcedToolCall(null);
        } else if (choice.isObject() && "function".equals(choice.path("type").asText())) {
            JsonNode name = choice.path("function").path("name");
            nameParam = "tool_choice.function.name";
            if (name.isMissingNode() && choice.has("name")) {
                name = choice.get("name");
                nameParam = "tool_choice.name";
            }
            if (!name.isTextual() || name.asText().isEmpty()) {
                throw OpenAIError.invalid(nameParam, nameParam + " must name one of the request's tools.");
            }
            forced = new ForcedToolCall(name.asText());
        } else {
            throw OpenAIError.invalid(
                    "tool_choice",
                    "unsupported_value",
                    "tool_choice " + shortJson(choice) + " is not supported; use 'auto', 'none', 'required' or a"
                            + " named function.");
        }
        if (tools.isEmpty()) {
            throw OpenAIError.invalid(
                    "tool_choice", "tool_choice " + shortJson(choice) + " forces a tool call, but 'tools' is empty.");
        }
        if (forced.function() != null
                && tools.stream()
                        .noneMatch(t -> t.get("function") instanceof Map<?, ?> fn
                                && forced.function().equals(fn.get("name")))) {
            throw OpenAIError.invalid(
                    nameParam, nameParam + " '" + forced.function() + "' is not one of the request's tools.");
        }
        return forced;
    }

    static Completion completion(JsonNode body, GenerationConfig defaults, Tokenizer tokenizer) throws OpenAIError {
        ObjectNode o = object(body);
        JsonNode prompt = o.get("prompt");
        String text = null;
        int[] ids = null;
        if (prompt == null || prompt.isNull()) {
            throw OpenAIError.invalid("prompt", "Missing required parameter: 'prompt'.");
        } else if (prompt.isTextual()) {
            text = prompt.asText();
        } else if (prompt.isArray() && prompt.size() == 1 && prompt.get(0).isTextual()) {
            text = prompt.get(0).asText();
        } else if (prompt.isArray() && !prompt.isEmpty() && allInts(prompt)) {
            ids = new int[prompt.size()];
            for (int i = 0; i < ids.length; i++) {
                int id = prompt.get(i).asInt();
                if (id < 0 || id >= tokenizer.vocabSize()) {
                    throw OpenAIError.invalid(
                            "prompt",
                            "prompt[" + i + "] = " + id + " is not a token id of this model (vocabulary size "
                                    + tokenizer.vocabSize() + ").");
                }
                ids[i] = id;
            }
        } else {
            throw OpenAIError.invalid(
                    "prompt",
                    "'prompt' must be a string, a list of one string, or a list of token ids; batched"
                            + " prompts are not supported.");
        }
        if (bool(o, "echo")) {
            throw OpenAIError.invalid("echo", "unsupported_parameter", "echo is not supported.");
        }
        if (present(o.get("suffix"))) {
            throw OpenAIError.invalid("suffix", "unsupported_parameter", "suffix is not supported.");
        }
        JsonNode bestOf = o.get("best_of");
        if (present(bestOf) && !(bestOf.canConvertToInt() && bestOf.asInt() == 1)) {
            throw OpenAIError.invalid("best_of", "unsupported_value", "best_of must be 1.");
        }
        JsonNode presence = o.get("presence_penalty");
        if (presence != null && !presence.isNull() && (!presence.isNumber() || presence.asDouble() != 0)) {
            throw OpenAIError.invalid(
                    "presence_penalty",
                    "unsupported_parameter",
                    "presence_penalty is not supported; omit it or send 0.");
        }
        GenerationConfig g = gconfig(o, defaults, tokenizer, "max_tokens");
        return new Completion(text, ids, g, bool(o, "stream"), includeUsage(o));
    }

    private static GenerationConfig gconfig(ObjectNode o, GenerationConfig defaults, Tokenizer tokenizer, String maxKey)
            throws OpenAIError {
        JsonNode n = o.get("n");
        if (present(n) && !(n.isIntegralNumber() && n.asInt() == 1)) {
            throw OpenAIError.invalid(
                    "n", "unsupported_value", "n must be 1 (got " + shortJson(n) + "): issue one request per sample.");
        }
        JsonNode bias = o.get("logit_bias");
        if (present(bias) && !(bias.isObject() && bias.isEmpty())) {
            throw OpenAIError.invalid("logit_bias", "unsupported_parameter", "logit_bias is not supported.");
        }
        GenerationConfig.Builder b = defaults.toBuilder().nSamples(1);
        JsonNode t = o.get("temperature");
        if (present(t)) {
            double v = number(t, "temperature", 0, 2);
            b.temperature(v).greedy(v == 0);
        }
        JsonNode topP = o.get("top_p");
        if (present(topP)) {
            double v = number(topP, "top_p", 0, 1);
            if (v == 0) {
                throw OpenAIError.invalid("top_p", "top_p must be in (0, 1], got 0.");
            }
            b.topP(v);
        }
        JsonNode max = o.get(maxKey);
        if (present(max)) {
            b.maxNewTokens(positiveInt(max, maxKey));
        }
        JsonNode topK = o.get("top_k");
        if (present(topK)) {
            if (!topK.isIntegralNumber() || !(topK.asInt() >= 1 || topK.asInt() == -1)) {
                throw OpenAIError.invalid("top_k", "top_k must be an integer >= 1, or -1 for no limit.");
            }
            b.topK(topK.asInt());
        }
        JsonNode freq = o.get("frequency_penalty");
        if (present(freq)) {
            b.frequencyPenalty(number(freq, "frequency_penalty", -2, 2));
        }
        JsonNode seed = o.get("seed");
        if (present(seed)) {
            if (!seed.isIntegralNumber() || !seed.canConvertToLong()) {
                throw OpenAIError.invalid("seed", "seed must be an integer, got " + shortJson(seed) + ".");
            }
            b.seed(seed.asLong());
        }
        JsonNode stop = o.get("stop");
        if (present(stop)) {
            b.stop(stops(stop));
        }
        try {
            return b.build().withStopAndPadTokenIds(tokenizer.padTokenId(), tokenizer.eosTokenId());
        } catch (InvalidConfigException e) {
            throw OpenAIError.invalid(e.key(), e.getMessage());
        }
    }

    private static List<String> stops(JsonNode stop) throws OpenAIError {
        List<String> out = new ArrayList<>();
        if (stop.isTextual()) {
            out.add(stop.asText());
        } else if (stop.isArray() && stop.size() <= 4) {
            for (JsonNode s : stop) {
                if (!s.isTextual()) {
                    throw OpenAIError.invalid("stop", "'stop' must be a string or a list of up to 4 strings.");
                }
                out.add(s.asText());
            }
        } else {
            throw OpenAIError.invalid("stop", "'stop' must be a string or a list of up to 4 strings.");
        }
        for (String s : out) {
            if (s.isEmpty()) {
                throw OpenAIError.invalid("stop", "'stop' strings must not be empty.");
            }
        }
        return out;
    }

    /** The message as the chat template needs it; validates the fields. */
    private static Map<String, Object> renderMessage(JsonNode m, String where) throws OpenAIError {
        JsonNode roleNode = m.get("role");
        if (roleNode == null || !roleNode.isTextual()) {
            throw OpenAIError.invalid(where + ".role", where + " has no string 'role'.");
        }
        String role = roleNode.asText();
        if (!ROLES.contains(role)) {
            throw OpenAIError.invalid(
                    where + ".role",
                    "Invalid value for " + where + ".role: '" + role
                            + "'. Supported values are: 'system', 'developer', 'user', 'assistant' and 'tool'.");
        }
        Map<String, Object> out = new LinkedHashMap<>();
        // OpenAI's "developer" messages are system messages for every chat template we render.
        out.put("role", role.equals("developer") ? "system" : role);
        JsonNode calls = m.get("tool_calls");
        boolean hasCalls = role.equals("assistant") && calls != null && calls.isArray() && !calls.isEmpty();
        out.put("content", content(m.get("content"), where, hasCalls));
        if (role.equals("assistant") && present(calls)) {
            out.put("tool_calls", toolCalls(calls, where + ".tool_calls"));
        }
        if (m.hasNonNull("tool_call_id")) {
            out.put("tool_call_id", m.get("tool_call_id").asText());
        }
        if (m.hasNonNull("name")) {
            out.put("name", m.get("name").asText());
        }
        return out;
    }

    private static String content(JsonNode c, String where, boolean mayBeEmpty) throws OpenAIError {
        if (c == null || c.isNull()) {
            if (mayBeEmpty) {
                return "";
            }
            throw OpenAIError.invalid(where + ".content", where + " has no 'content'.");
        }
        if (c.isTextual()) {
            return c.asText();
        }
        if (c.isArray()) {
            StringBuilder sb = new StringBuilder();
            for (int j = 0; j < c.size(); j++) {
                JsonNode part = c.get(j);
                String partWhere = where + ".content[" + j + "]";
                if (part.isTextual()) {
                    sb.append(part.asText());
                } else if (part.isObject()
                        && part.path("text").isTextual()
                        && (!part.has("type") || "text".equals(part.path("type").asText()))) {
                    sb.append(part.get("text").asText());
                } else {
                    throw OpenAIError.invalid(
                            partWhere,
                            "unsupported_value",
                            partWhere + " is a '" + part.path("type").asText(kind(part))
                                    + "' part; only text content is supported.");
                }
            }
            return sb.toString();
        }
        throw OpenAIError.invalid(
                where + ".content", where + ".content must be a string or a list of text parts, got " + kind(c) + ".");
    }

    private static List<Map<String, Object>> toolCalls(JsonNode calls, String where) throws OpenAIError {
        if (!calls.isArray()) {
            throw OpenAIError.invalid(where, where + " must be an array.");
        }
        List<Map<String, Object>> out = new ArrayList<>();
        for (int k = 0; k < calls.size(); k++) {
            JsonNode call = calls.get(k);
            String w = where + "[" + k + "]";
            JsonNode fn = call.path("function");
            if (!fn.path("name").isTextual() || fn.get("name").asText().isEmpty()) {
                throw OpenAIError.invalid(w + ".function.name", w + " has no function name.");
            }
            JsonNode args = fn.get("arguments");
            Object arguments;
            if (args == null || args.isNull()) {
                arguments = Map.of();
            } else if (args.isTextual()) {
                // Chat templates expect the arguments object; OpenAI clients send a JSON string.
                try {
                    arguments = JSON.convertValue(JSON.readTree(args.asText()), Object.class);
                } catch (JsonProcessingException e) {
                    arguments = args.asText();
                }
            } else {
                arguments = JSON.convertValue(args, Object.class);
            }
            Map<String, Object> function = new LinkedHashMap<>();
            function.put("name", fn.get("name").asText());
            function.put("arguments", arguments);
            Map<String, Object> c = new LinkedHashMap<>();
            if (call.hasNonNull("id")) {
                c.put("id", call.get("id").asText());
            }
            c.put("type", "function");
            c.put("function", function);
            out.add(c);
        }
        return out;
    }

    private static List<Map<String, Object>> tools(JsonNode tools) throws OpenAIError {
        if (tools == null || tools.isNull()) {
            return List.of();
        }
        if (!tools.isArray()) {
            throw OpenAIError.invalid("tools", "'tools' must be an array of tool objects.");
        }
        List<Map<String, Object>> out = new ArrayList<>();
        for (int i = 0; i < tools.size(); i++) {
            JsonNode t = tools.get(i);
            String where = "tools[" + i + "]";
            if (!t.isObject() || !"function".equals(t.path("type").asText())) {
                throw OpenAIError.invalid(where + ".type", where + " must be {\"type\": \"function\", ...}.");
            }
            if (!t.path("function").path("name").isTextual()
                    || t.get("function").get("name").asText().isEmpty()) {
                throw OpenAIError.invalid(where + ".function.name", where + " has no function name.");
            }
            out.add(toMap(t));
        }
        return List.copyOf(out);
    }

    static Map<String, Object> toMap(JsonNode node) {
        @SuppressWarnings("unchecked")
        Map<String, Object> m = JSON.convertValue(node, LinkedHashMap.class);
        return m;
    }

    private static ObjectNode object(JsonNode body) throws OpenAIError {
        if (body == null || !body.isObject()) {
            throw OpenAIError.invalid(null, "The request body must be a JSON object, got " + kind(body) + ".");
        }
        return (ObjectNode) body;
    }

    private static boolean includeUsage(ObjectNode o) throws OpenAIError {
        JsonNode opts = o.get("stream_options");
        if (!present(opts)) {
            return false;
        }
        if (!opts.isObject()) {
            throw OpenAIError.invalid("stream_options", "'stream_options' must be an object.");
        }
        JsonNode u = opts.get("include_usage");
        if (present(u) && !u.isBoolean()) {
            throw OpenAIError.invalid("stream_options.include_usage", "'include_usage' must be a boolean.");
        }
        return present(u) && u.asBoolean();
    }

    private static boolean bool(ObjectNode o, String key) throws OpenAIError {
        JsonNode v = o.get(key);
        if (!present(v)) {
            return false;
        }
        if (!v.isBoolean()) {
            throw OpenAIError.invalid(key, "'" + key + "' must be a boolean, got " + kind(v) + ".");
        }
        return v.asBoolean();
    }

    private static double number(JsonNode v, String key, double min, double max) throws OpenAIError {
        if (!v.isNumber() || !(v.asDouble() >= min && v.asDouble() <= max)) {
            throw OpenAIError.invalid(
                    key,
                    "'" + key + "' must be a number in [" + fmt(min) + ", " + fmt(max) + "], got " + shortJson(v)
                            + ".");
        }
        return v.asDouble();
    }

    private static int positiveInt(JsonNode v, String key) throws OpenAIError {
        if (!v.isIntegralNumber() || !v.canConvertToInt() || v.asInt() < 1) {
            throw OpenAIError.invalid(key, "'" + key + "' must be an integer >= 1, got " + shortJson(v) + ".");
        }
        return v.asInt();
    }

    private static boolean allInts(JsonNode array) {
        for (JsonNode n : array) {
            if (!n.isIntegralNumber() || !n.canConvertToInt()) {
                return false;
            }
        }
        return true;
    }

    static boolean present(JsonNode v) {
        return v != null && !v.isNull();
    }

    private static String fmt(double d) {
        return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
    }

    static String kind(JsonNode n) {
        if (n == null || n.isMissingNode()) {
            return "nothing";
        }
        return n.getNodeType().name().toLowerCase(Locale.ROOT);
    }

    /** A JSON value for a message, cut at 60 characters. */
    static String shortJson(JsonNode n) {
        String s = n.toString();
        return s.length() > 60 ? s.substring(0, 60) + "…" : s;
    }
}
