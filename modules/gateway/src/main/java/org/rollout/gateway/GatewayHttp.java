package org.rollout.gateway;

import java.io.IOException;
import java.io.InputStream;
import org.rollout.http.Http1Server.Exchange;
import org.rollout.http.Http1Server.Request;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's exchange plumbing: a request body read up to {@link GatewayHandler#MAX_REQUEST_BYTES}
 * (413 past it), a JSON answer sent whole, an error sent unless a response has begun, a method check
 * (405 with {@code Allow}).
 */
final class GatewayHttp {
    // Logs under the handler's name, as the gateway's lines always have.
    private static final Logger log = LoggerFactory.getLogger(GatewayHandler.class);

    private GatewayHttp() {}

    /** The body, read from the connection up to one byte past the limit, never more. */
    static byte[] readBody(Request req) throws IOException, Refusal {
        try (InputStream in = req.bodyStream()) {
            byte[] body = in.readNBytes(GatewayHandler.MAX_REQUEST_BYTES + 1);
            if (body.length > GatewayHandler.MAX_REQUEST_BYTES) {
                throw new Refusal(
                        413,
                        "payload_too_large",
                        "request bodies are limited to " + GatewayHandler.MAX_REQUEST_BYTES + " bytes");
            }
            return body;
        }
    }

    static void json(Exchange ex, int status, byte[] body) throws IOException {
        ex.send(status, "application/json", body);
    }

    /** Sends an error unless a response has begun (then the connection just closes). */
    static void respondQuietly(Exchange ex, int status, byte[] body) {
        if (ex.began()) {
            return;
        }
        try {
            json(ex, status, body);
        } catch (IOException e) {
            log.debug("could not send HTTP {} to a trainer that went away: {}", status, e.toString());
        }
    }

    static void expect(Request req, String method) throws Refusal {
        expect(req, method, method);
    }

    static void expect(Request req, String method, String allowed) throws Refusal {
        if (!req.method().equals(method)) {
            throw new Refusal(
                    405, "method_not_allowed", req.path() + " takes " + allowed + ", not " + req.method(), allowed);
        }
    }
}
