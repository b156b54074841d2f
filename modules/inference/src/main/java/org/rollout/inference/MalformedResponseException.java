package org.rollout.inference;

import java.nio.charset.StandardCharsets;
import org.rollout.api.GenerationException;
import org.rollout.config.ServerAddress;

/**
 * A server answered a generate request with HTTP 2xx but a body that is not a valid response of its
 * protocol (docs/protocol.md): not JSON, not an object, a missing or null field, an entry of the
 * wrong shape, a token/logprob count mismatch, an ambiguous logprob, an unknown finish reason, or
 * more tokens than requested.
 *
 * <p>The message names the server, the rid, the field (as a JSON path such as
 * {@code meta_info.output_token_logprobs[3]}) and what is wrong, then a short excerpt of the body
 * (at most {@value #EXCERPT_CHARS} characters), never the whole body.
 *
 * <p>The engine treats it as a broken server: the server is ejected and the segment is retried on
 * another one (docs/inference.md, "Failover").
 */
public final class MalformedResponseException extends GenerationException {
    /** The longest body excerpt a message carries. */
    public static final int EXCERPT_CHARS = 200;

    private final ServerAddress server;
    private final String rid;
    private final String field;

    public MalformedResponseException(ServerAddress server, String rid, String field, String problem, byte[] body) {
        super("malformed response from " + server + " for rid " + rid + ": " + field + " " + problem + " (body: "
                + excerpt(body) + ")");
        this.server = server;
        this.rid = rid;
        this.field = field;
    }

    /** The server that sent the response. */
    public ServerAddress server() {
        return server;
    }

    /** The request id of the segment. */
    public String rid() {
        return rid;
    }

    /** The offending field as a JSON path, or {@code body} when the body as a whole is wrong. */
    public String field() {
        return field;
    }

    /** The first {@value #EXCERPT_CHARS} characters of {@code body} on one line, with "…" when cut. */
    static String excerpt(byte[] body) {
        if (body == null || body.length == 0) {
            return "<empty>";
        }
        int len = Math.min(body.length, EXCERPT_CHARS * 4);
        String s = new String(body, 0, len, StandardCharsets.UTF_8);
        boolean cut = len < body.length;
        if (s.length() > EXCERPT_CHARS) {
            s = s.substring(0, EXCERPT_CHARS);
            cut = true;
        }
        s = s.replace('\n', ' ').replace('\r', ' ');
        return cut ? s + "…" : s;
    }
}
