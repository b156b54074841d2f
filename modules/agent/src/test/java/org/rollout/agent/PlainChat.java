package org.rollout.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.rollout.api.AgentEnv;

/** A chat call the way a plain-HttpClient agent makes it. */
final class PlainChat {
    private static final ObjectMapper JSON = new ObjectMapper();

    private PlainChat() {}

    /** The completion's JSON; fails on any non-200. */
    static JsonNode complete(AgentEnv env, List<Map<String, Object>> messages, Map<String, Object> extra)
            throws IOException, InterruptedException {
        Map<String, Object> body = new LinkedHashMap<>(extra);
        body.put("model", "rollout");
        body.put("messages", messages);
        HttpRequest req = HttpRequest.newBuilder(URI.create(env.baseUrl() + "/chat/completions"))
                .timeout(Duration.ofSeconds(60))
                .header("Authorization", "Bearer " + env.apiKey())
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body)))
                .build();
        HttpResponse<String> r = env.httpClient().send(req, HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException("chat completion failed: " + r.statusCode() + " " + r.body());
        }
        return JSON.readTree(r.body());
    }

    /** The assistant message of a completion as a map, to append to the conversation. */
    static Map<String, Object> message(JsonNode completion) {
        @SuppressWarnings("unchecked")
        Map<String, Object> m =
                JSON.convertValue(completion.get("choices").get(0).get("message"), LinkedHashMap.class);
        return m;
    }

    static Map<String, Object> user(String text) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("role", "user");
        m.put("content", text);
        return m;
    }
}
