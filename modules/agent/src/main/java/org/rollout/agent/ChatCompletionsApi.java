package org.rollout.agent;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * OpenAI's Chat Completions API ({@code POST /v1/chat/completions}): the request's messages and
 * tools become one recorded {@link Turn}, answered as a {@code chat.completion} or, with {@code
 * "stream": true}, as its chunks: a role chunk, content chunks, a tool-call chunk, the finish chunk, a
 * usage chunk when {@code stream_options.include_usage}, then {@code data: [DONE]}.
 */
final class ChatCompletionsApi {
    private static final ObjectMapper JSON = ProxyRequests.JSON;

    private final TurnGenerator turns;
    private final JsonBodies bodies;
    private final String model;

    ChatCompletionsApi(TurnGenerator turns, JsonBodies bodies, String model) {
        this.turns = turns;
        this.bodies = bodies;
        this.model = model;
    }

    void chatCompletion(ProxyExchange ex, ProxySession session) throws IOException, OpenAIError {
        ProxyRequests.Chat req = ProxyRequests.chat(bodies.readJson(ex), turns.defaults(), turns.tokenizer());
        Turn t = turns.turn(session, req, "chatcmpl-" + RandomIds.hex(15));
        long created = System.currentTimeMillis() / 1000;
        Map<String, Object> usage = TurnGenerator.usage(t.resp());
        if (req.stream()) {
            streamChat(ex, t, created, req.includeUsage() ? usage : null, req.logprobs());
            return;
        }
        Map<String, Object> responseMessage = new LinkedHashMap<>(t.message());
        responseMessage.put("refusal", null);
        Map<String, Object> choice = new LinkedHashMap<>();
        choice.put("index", 0);
        choice.put("message", responseMessage);
        choice.put("logprobs", req.logprobs() ? Map.of("content", turns.tokenLogprobs(t)) : null);
        choice.put("finish_reason", t.stop().wireName());
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("id", t.id());
        body.put("object", "chat.completion");
        body.put("created", created);
        body.put("model", model);
        body.put("choices", List.of(choice));
        body.put("usage", usage);
        body.put("system_fingerprint", null);
        JsonBodies.sendJson(ex, 200, body);
    }

    /**
     * The answer as chat-completion chunks. With {@code logprobs}, the chunk that ends the answer
     * carries every generated token's logprob (the text went out in pieces that need not follow
     * token boundaries; a client that gathers {@code logprobs.content} over the chunks gets them all).
     */
    private void streamChat(ProxyExchange ex, Turn t, long created, Map<String, Object> usage, boolean logprobs)
            throws IOException {
        ServerSentEvents.start(ex);
        OutputStream out = ex.responseBody();
        String id = t.id();
        boolean withUsage = usage != null;
        Map<String, Object> role = new LinkedHashMap<>();
        role.put("role", "assistant");
        role.put("content", "");
        ServerSentEvents.data(out, chunk(id, created, role, null, withUsage));
        if (t.reasoning() != null) {
            for (String piece : ServerSentEvents.pieces(t.reasoning())) {
                ServerSentEvents.data(out, chunk(id, created, Map.of("reasoning_content", piece), null, withUsage));
            }
        }
        String content = t.parsed().content() == null ? "" : t.parsed().content();
        for (String piece : ServerSentEvents.pieces(content)) {
            ServerSentEvents.data(out, chunk(id, created, Map.of("content", piece), null, withUsage));
        }
        if (t.parsed().hasToolCalls()) {
            List<Map<String, Object>> calls = new ArrayList<>();
            for (int i = 0; i < t.parsed().toolCalls().size(); i++) {
                Map<String, Object> c = new LinkedHashMap<>();
                c.put("index", i);
                c.putAll(TurnGenerator.toolCallJson(t.parsed().toolCalls().get(i)));
                calls.add(c);
            }
            ServerSentEvents.data(out, chunk(id, created, Map.of("tool_calls", calls), null, withUsage));
        }
        Map<String, Object> finish = chunkBody(id, created, Map.of(), t.stop().wireName(), withUsage);
        if (logprobs) {
            @SuppressWarnings("unchecked")
            Map<String, Object> choice = (Map<String, Object>) ((List<Object>) finish.get("choices")).getFirst();
            choice.put("logprobs", Map.of("content", turns.tokenLogprobs(t)));
        }
        ServerSentEvents.data(out, JSON.writeValueAsString(finish));
        if (withUsage) {
            Map<String, Object> last = chunkEnvelope(id, created, List.of());
            last.put("usage", usage);
            ServerSentEvents.data(out, JSON.writeValueAsString(last));
        }
        ServerSentEvents.done(out);
    }

    private String chunk(String id, long created, Map<String, Object> delta, String finish, boolean withUsage)
            throws JsonProcessingException {
        return JSON.writeValueAsString(chunkBody(id, created, delta, finish, withUsage));
    }

    private Map<String, Object> chunkBody(
            String id, long created, Map<String, Object> delta, String finish, boolean withUsage) {
        Map<String, Object> choice = new LinkedHashMap<>();
        choice.put("index", 0);
        choice.put("delta", delta);
        choice.put("logprobs", null);
        choice.put("finish_reason", finish);
        Map<String, Object> body = chunkEnvelope(id, created, new ArrayList<>(List.of(choice)));
        if (withUsage) {
            body.put("usage", null);
        }
        return body;
    }

    private Map<String, Object> chunkEnvelope(String id, long created, List<Object> choices) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("id", id);
        body.put("object", "chat.completion.chunk");
        body.put("created", created);
        body.put("model", model);
        body.put("system_fingerprint", null);
        body.put("choices", choices);
        return body;
    }
}
