package org.rollout.gateway;

import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
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

    static byte[] readBody(HttpExchange ex) throws IOException, Refusal {
        try (InputStream in = ex.getRequestBody()) {
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

    static void json(HttpExchange ex, int status, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(status, body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    /** Sends an error unless a response has begun (then the connection just closes). */
    static void respondQuietly(HttpExchange ex, int status, byte[] body) {
        if (ex.getResponseCode() != -1) {
            return;
        }
        try {
            json(ex, status, body);
        } catch (IOException e) {
            log.debug("could not send HTTP {} to a trainer that went away: {}", status, e.toString());
        }
    }

    static void expect(HttpExchange ex, String method) throws Refusal {
        expect(ex, method, method);
    }

    static void expect(HttpExchange ex, String method, String allowed) throws Refusal {
        if (!ex.getRequestMethod().equals(method)) {
            throw new Refusal(
                    405,
                    "method_not_allowed",
                    ex.getRequestURI().getRawPath() + " takes " + allowed + ", not " + ex.getRequestMethod(),
                    allowed);
        }
    }
}
