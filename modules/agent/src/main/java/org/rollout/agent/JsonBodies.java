package org.rollout.agent;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/**
 * Request bodies in and JSON answers out: a body is read up to {@code max_request_bytes} (413 past it,
 * 400 when empty or not JSON); an answer is sent whole with its length.
 */
final class JsonBodies {
    private static final ObjectMapper JSON = ProxyRequests.JSON;

    private final int maxRequestBytes;

    JsonBodies(int maxRequestBytes) {
        this.maxRequestBytes = maxRequestBytes;
    }

    /** The body as JSON; 400 when it is empty or not JSON. */
    JsonNode readJson(ProxyExchange ex) throws IOException, OpenAIError {
        byte[] raw = readBody(ex);
        if (raw.length == 0) {
            throw OpenAIError.invalid(null, "The request body is empty; send a JSON object.");
        }
        return parse(raw);
    }

    static JsonNode parse(byte[] raw) throws OpenAIError {
        try {
            return JSON.readTree(raw);
        } catch (IOException e) {
            String why = e instanceof JsonProcessingException j ? j.getOriginalMessage() : e.toString();
            throw OpenAIError.invalid(null, "The request body is not valid JSON: " + why);
        }
    }

    /** The body's bytes, possibly none; 413 when its declared or actual length is over the limit. */
    byte[] readBody(ProxyExchange ex) throws IOException, OpenAIError {
        int max = maxRequestBytes;
        String declared = ex.header("Content-Length");
        if (declared != null) {
            try {
                if (Long.parseLong(declared.trim()) > max) {
                    throw ProxyErrors.tooLarge(max);
                }
            } catch (NumberFormatException e) {
                throw OpenAIError.invalid(null, "Content-Length is not a number.");
            }
        }
        try (InputStream in = ex.requestBody()) {
            byte[] body = in.readNBytes(max + 1);
            if (body.length > max) {
                throw ProxyErrors.tooLarge(max);
            }
            return body;
        }
    }

    static void sendJson(ProxyExchange ex, int status, Object body) throws IOException {
        byte[] bytes = JSON.writeValueAsBytes(body);
        ex.setHeader("Content-Type", "application/json");
        ex.respond(status, bytes.length);
        try (OutputStream out = ex.responseBody()) {
            out.write(bytes);
        }
    }
}
