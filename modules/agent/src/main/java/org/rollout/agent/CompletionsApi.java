package org.rollout.agent;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.OutputStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.rollout.api.Interaction;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;

/**
 * OpenAI's legacy Completions API ({@code POST /v1/completions}): a prompt (text or token ids) is
 * generated as is, with no chat template, recorded as an {@link Interaction} of its prompt and text,
 * and answered as a {@code text_completion} or its {@code data:} chunks.
 */
final class CompletionsApi {
    private static final ObjectMapper JSON = ProxyRequests.JSON;

    private final TurnGenerator turns;
    private final JsonBodies bodies;
    private final String model;

    CompletionsApi(TurnGenerator turns, JsonBodies bodies, String model) {
        this.turns = turns;
        this.bodies = bodies;
        this.model = model;
    }

    void completion(ProxyExchange ex, ProxySession session) throws IOException, OpenAIError {
        ProxyRequests.Completion req =
                ProxyRequests.completion(bodies.readJson(ex), turns.defaults(), turns.tokenizer());
        int[] prompt =
                req.promptIds() != null ? req.promptIds() : turns.tokenizer().encode(req.prompt());
        turns.checkContext(prompt.length, req.gconfig(), "prompt");
        String id = "cmpl-" + RandomIds.hex(15);
        ModelResponse resp = turns.generate(session, ModelRequest.of(prompt, req.gconfig()));
        String text = turns.outputText(resp, req.gconfig());
        String promptText =
                req.prompt() != null ? req.prompt() : turns.tokenizer().decode(prompt, false);
        Interaction it = Interaction.builder(id)
                .modelResponse(resp)
                .messages(List.of(Map.of("prompt", promptText)))
                .outputMessages(List.of(Map.of("text", text)))
                .chatTemplateType(Interaction.ChatTemplateType.HF)
                .build();
        if (!session.record(it)) {
            throw ProxyErrors.sessionClosedDuring(session);
        }
        long created = System.currentTimeMillis() / 1000;
        Map<String, Object> usage = TurnGenerator.usage(resp);
        String finish = resp.stopReason().wireName();
        if (req.stream()) {
            ServerSentEvents.start(ex);
            OutputStream out = ex.responseBody();
            List<String> pieces = ServerSentEvents.pieces(text);
            for (int i = 0; i <= pieces.size(); i++) {
                boolean last = i == pieces.size();
                ServerSentEvents.data(
                        out,
                        JSON.writeValueAsString(completionBody(
                                id,
                                created,
                                last ? "" : pieces.get(i),
                                last ? finish : null,
                                null,
                                "text_completion")));
            }
            if (req.includeUsage()) {
                Map<String, Object> u = completionBody(id, created, null, null, usage, "text_completion");
                u.put("choices", List.of());
                ServerSentEvents.data(out, JSON.writeValueAsString(u));
            }
            ServerSentEvents.done(out);
            return;
        }
        JsonBodies.sendJson(ex, 200, completionBody(id, created, text, finish, usage, "text_completion"));
    }

    private Map<String, Object> completionBody(
            String id, long created, String text, String finish, Map<String, Object> usage, String object) {
        Map<String, Object> choice = new LinkedHashMap<>();
        choice.put("index", 0);
        choice.put("text", text);
        choice.put("logprobs", null);
        choice.put("finish_reason", finish);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("id", id);
        body.put("object", object);
        body.put("created", created);
        body.put("model", model);
        body.put("choices", List.of(choice));
        if (usage != null) {
            body.put("usage", usage);
        }
        return body;
    }
}
