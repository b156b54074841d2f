package org.rollout.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** Raw HTTP calls to the proxy, for tests that check status codes and bodies byte by byte. */
final class ProxyHttp {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient CLIENT = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10))
            .build();

    /** A status and the body parsed as JSON (null when empty). */
    record Reply(int status, JsonNode body, String raw) {
        JsonNode error() {
            return body.get("error");
        }
    }

    private ProxyHttp() {}

    static Reply post(String url, String key, String body) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url))
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (key != null) {
            b.header("Authorization", "Bearer " + key);
        }
        return send(b.build());
    }

    static Reply get(String url, String key) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url))
                .timeout(Duration.ofSeconds(60))
                .GET();
        if (key != null) {
            b.header("Authorization", "Bearer " + key);
        }
        return send(b.build());
    }

    private static Reply send(HttpRequest request) throws IOException, InterruptedException {
        HttpResponse<String> r = CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
        String raw = r.body();
        JsonNode body = null;
        if (raw != null && !raw.isEmpty() && raw.startsWith("{")) {
            body = JSON.readTree(raw);
        }
        return new Reply(r.statusCode(), body, raw);
    }

    static String chatBody(String userText) {
        return "{\"model\": \"any\", \"messages\": [{\"role\": \"user\", \"content\": " + quote(userText) + "}]}";
    }

    static String quote(String s) {
        try {
            return JSON.writeValueAsString(s);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
