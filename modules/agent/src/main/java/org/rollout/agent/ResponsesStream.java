package org.rollout.agent;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.OutputStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A Responses API answer as its named events: {@code response.created}, {@code response.in_progress},
 * then per output item (reasoning, message, function call) its added, delta, done events, and {@code
 * response.completed} (or {@code response.incomplete}); every event numbered by {@code
 * sequence_number}.
 */
final class ResponsesStream {
    private final OutputStream out;
    private int seq;

    private ResponsesStream(OutputStream out) {
        this.out = out;
    }

    /**
     * Sends {@code t} as the events of a streamed response.
     *
     * @param logprobs the answer tokens' logprobs when the request asked for them, else null
     */
    static void send(
            ProxyExchange ex,
            String model,
            JsonNode body,
            ResponsesApi.Translated tr,
            Turn t,
            List<Map<String, Object>> logprobs,
            long created)
            throws IOException {
        ServerSentEvents.start(ex);
        new ResponsesStream(ex.responseBody()).write(model, body, tr, t, logprobs, created);
    }

    private void write(
            String model,
            JsonNode body,
            ResponsesApi.Translated tr,
            Turn t,
            List<Map<String, Object>> logprobs,
            long created)
            throws IOException {
        Map<String, Object> pending =
                ResponsesApi.response(t.id(), created, model, body, tr.instructions(), null, List.of());
        event("response.created", Map.of("response", pending));
        event("response.in_progress", Map.of("response", pending));
        List<Map<String, Object>> items = ResponsesApi.output(t, logprobs);
        for (int index = 0; index < items.size(); index++) {
            Map<String, Object> item = items.get(index);
            String itemId = (String) item.get("id");
            switch ((String) item.get("type")) {
                case "reasoning" -> {
                    event("response.output_item.added", itemEvent(index, ResponsesApi.reasoningItem(itemId, null)));
                    // As for a message's text: the part is announced empty, then filled by deltas.
                    Map<String, Object> added = partEvent(itemId, index);
                    added.put("part", ResponsesApi.reasoningText(""));
                    event("response.content_part.added", added);
                    for (String piece : ServerSentEvents.pieces(t.reasoning())) {
                        Map<String, Object> d = partEvent(itemId, index);
                        d.put("delta", piece);
                        event("response.reasoning_text.delta", d);
                    }
                    Map<String, Object> done = partEvent(itemId, index);
                    done.put("text", t.reasoning());
                    event("response.reasoning_text.done", done);
                    Map<String, Object> partDone = partEvent(itemId, index);
                    partDone.put("part", ResponsesApi.reasoningText(t.reasoning()));
                    event("response.content_part.done", partDone);
                }
                case "message" -> {
                    String text = t.parsed().content();
                    event(
                            "response.output_item.added",
                            itemEvent(index, ResponsesApi.messageItem(itemId, null, null, "in_progress")));
                    Map<String, Object> added = partEvent(itemId, index);
                    added.put("part", ResponsesApi.outputText("", null));
                    event("response.content_part.added", added);
                    List<String> textPieces = ServerSentEvents.pieces(text);
                    for (int p = 0; p < textPieces.size(); p++) {
                        Map<String, Object> d = partEvent(itemId, index);
                        d.put("delta", textPieces.get(p));
                        // The pieces need not follow token boundaries: the last delta carries
                        // every token's logprob (as the done event does).
                        boolean last = p == textPieces.size() - 1;
                        d.put("logprobs", last && logprobs != null ? logprobs : List.of());
                        event("response.output_text.delta", d);
                    }
                    Map<String, Object> done = partEvent(itemId, index);
                    done.put("text", text);
                    done.put("logprobs", logprobs == null ? List.of() : logprobs);
                    event("response.output_text.done", done);
                    Map<String, Object> partDone = partEvent(itemId, index);
                    partDone.put("part", ResponsesApi.outputText(text, logprobs));
                    event("response.content_part.done", partDone);
                }
                default -> {
                    ToolCallParser.ToolCall c = t.parsed()
                            .toolCalls()
                            .get(index - (items.size() - t.parsed().toolCalls().size()));
                    event(
                            "response.output_item.added",
                            itemEvent(index, ResponsesApi.functionCallItem(itemId, c, "in_progress")));
                    Map<String, Object> d = new LinkedHashMap<>();
                    d.put("item_id", itemId);
                    d.put("output_index", index);
                    d.put("delta", c.arguments());
                    event("response.function_call_arguments.delta", d);
                    Map<String, Object> done = new LinkedHashMap<>();
                    done.put("item_id", itemId);
                    done.put("output_index", index);
                    done.put("name", c.name());
                    done.put("arguments", c.arguments());
                    event("response.function_call_arguments.done", done);
                }
            }
            event("response.output_item.done", itemEvent(index, item));
        }
        Map<String, Object> finished = ResponsesApi.response(t.id(), created, model, body, tr.instructions(), t, items);
        event(
                "incomplete".equals(finished.get("status")) ? "response.incomplete" : "response.completed",
                Map.of("response", finished));
    }

    private static Map<String, Object> itemEvent(int index, Map<String, Object> item) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("output_index", index);
        e.put("item", item);
        return e;
    }

    private static Map<String, Object> partEvent(String itemId, int index) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("item_id", itemId);
        e.put("output_index", index);
        e.put("content_index", 0);
        return e;
    }

    private void event(String type, Map<String, Object> fields) throws IOException {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("type", type);
        e.put("sequence_number", seq++);
        e.putAll(fields);
        ServerSentEvents.named(out, type, e);
    }
}
