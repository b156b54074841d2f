package org.rollout.agent;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.OutputStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A Messages API answer as Anthropic's named events: {@code message_start}, per content block
 * (thinking, text, tool_use) {@code content_block_start}, its deltas and {@code content_block_stop},
 * then {@code message_delta} (stop reason, usage) and {@code message_stop}.
 */
final class MessagesStream {
    private static final ObjectMapper JSON = ProxyRequests.JSON;

    private MessagesStream() {}

    /** Sends {@code t} as the events of a streamed message; {@code input} is its prompt's length. */
    static void send(ProxyExchange ex, String model, Turn t, int input) throws IOException {
        ServerSentEvents.start(ex);
        OutputStream out = ex.responseBody();
        event(out, "message_start", Map.of("message", MessagesApi.message(t.id(), model, null, input)));
        List<Map<String, Object>> blocks = MessagesApi.content(t);
        for (int i = 0; i < blocks.size(); i++) {
            Map<String, Object> block = blocks.get(i);
            String type = (String) block.get("type");
            Map<String, Object> start = new LinkedHashMap<>(block);
            switch (type) {
                case "thinking" -> start.put("thinking", "");
                case "text" -> start.put("text", "");
                default -> start.put("input", Map.of());
            }
            event(out, "content_block_start", Map.of("index", i, "content_block", start));
            switch (type) {
                case "thinking" -> {
                    for (String piece : ServerSentEvents.pieces((String) block.get("thinking"))) {
                        blockDelta(out, i, Map.of("type", "thinking_delta", "thinking", piece));
                    }
                    blockDelta(out, i, Map.of("type", "signature_delta", "signature", ""));
                }
                case "text" -> {
                    for (String piece : ServerSentEvents.pieces((String) block.get("text"))) {
                        blockDelta(out, i, Map.of("type", "text_delta", "text", piece));
                    }
                }
                default ->
                    blockDelta(
                            out,
                            i,
                            Map.of(
                                    "type",
                                    "input_json_delta",
                                    "partial_json",
                                    JSON.writeValueAsString(block.get("input"))));
            }
            event(out, "content_block_stop", Map.of("index", i));
        }
        Map<String, Object> delta = new LinkedHashMap<>();
        delta.put("stop_reason", MessagesApi.stopReason(t));
        delta.put("stop_sequence", t.stopSequence());
        event(
                out,
                "message_delta",
                Map.of(
                        "delta",
                        delta,
                        "usage",
                        MessagesApi.usage(input, t.resp().outputLength())));
        event(out, "message_stop", Map.of());
    }

    private static void blockDelta(OutputStream out, int index, Map<String, Object> delta) throws IOException {
        event(out, "content_block_delta", Map.of("index", index, "delta", delta));
    }

    private static void event(OutputStream out, String type, Map<String, Object> fields) throws IOException {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("type", type);
        e.putAll(fields);
        ServerSentEvents.named(out, type, e);
    }
}
