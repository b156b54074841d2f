package org.rollout.agent;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import org.rollout.http.Http1Server;
import org.rollout.http.Http1Server.Exchange;
import org.rollout.http.Http1Server.Request;

/**
 * One request to the proxy and its answer under way: the request's method, path, headers and body,
 * and the response begun on the {@link Exchange} (whole, of a known length, or a server-sent event
 * stream in chunked transfer coding).
 */
final class ProxyExchange {
    private final Request request;
    private final Exchange exchange;
    private OutputStream body;

    ProxyExchange(Request request, Exchange exchange) {
        this.request = request;
        this.exchange = exchange;
    }

    String method() {
        return request.method();
    }

    /** The path, percent-decoded (as sent when it does not decode). */
    String path() {
        try {
            return URI.create(request.path()).getPath();
        } catch (IllegalArgumentException e) {
            return request.path();
        }
    }

    /** The header's value, or null. */
    String header(String name) {
        return request.header(name);
    }

    InputStream requestBody() {
        return request.bodyStream();
    }

    void setHeader(String name, String value) {
        exchange.setHeader(name, value);
    }

    /** Begins the response; {@code length} {@link Exchange#CHUNKED} when unknown (a stream of events). */
    void respond(int status, long length) throws IOException {
        body = exchange.respond(status, length);
    }

    /** Whether the response has begun. */
    boolean responded() {
        return exchange.began();
    }

    /** The body of the response begun with {@link #respond}. */
    OutputStream responseBody() {
        if (body == null) {
            throw new IllegalStateException("no response has begun");
        }
        return body;
    }

    /** A server handler serving each request with {@code handler}. */
    static Http1Server.Handler serving(Handler handler) {
        return (req, ex) -> {
            handler.handle(new ProxyExchange(req, ex));
            return null;
        };
    }

    @FunctionalInterface
    interface Handler {
        void handle(ProxyExchange ex) throws IOException;
    }
}
