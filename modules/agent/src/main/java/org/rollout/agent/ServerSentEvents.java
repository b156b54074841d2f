package org.rollout.agent;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.rollout.http.Http1Server.Exchange;

/**
 * Writes a streamed answer as server-sent events: the 200 with event-stream headers, then {@code data:}
 * events (Chat Completions, Completions), named events (Responses, Messages) and {@code data: [DONE]}.
 * Each event is flushed as written. The engine returns a completion whole, so text goes out in
 * {@link #pieces} of a few code points.
 */
final class ServerSentEvents {
    private static final ObjectMapper JSON = ProxyRequests.JSON;
    private static final int STREAM_PIECE_CHARS = 16;

    private ServerSentEvents() {}

    /** 200 with server-sent-event headers; the body is then written event by event. */
    static void start(ProxyExchange ex) throws IOException {
        ex.setHeader("Content-Type", "text/event-stream");
        ex.setHeader("Cache-Control", "no-cache");
        ex.respond(200, Exchange.CHUNKED);
    }

    /** A named server-sent event, as the Responses and Messages APIs send them. */
    static void named(OutputStream out, String name, Object data) throws IOException {
        out.write(("event: " + name + "\ndata: " + JSON.writeValueAsString(data) + "\n\n")
                .getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    /** An unnamed event of JSON text, as Chat Completions and Completions send them. */
    static void data(OutputStream out, String json) throws IOException {
        out.write(("data: " + json + "\n\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    /** The {@code data: [DONE]} that ends a Chat Completions or Completions stream. */
    static void done(OutputStream out) throws IOException {
        out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    /** The content in pieces of up to {@value #STREAM_PIECE_CHARS} code points (none when empty). */
    static List<String> pieces(String content) {
        List<String> out = new ArrayList<>();
        int i = 0;
        while (i < content.length()) {
            int end = content.offsetByCodePoints(
                    i, Math.min(STREAM_PIECE_CHARS, content.codePointCount(i, content.length())));
            out.add(content.substring(i, end));
            i = end;
        }
        return out;
    }
}
