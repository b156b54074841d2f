package org.rollout.examples.agents;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.responses.EasyInputMessage;
import com.openai.models.responses.Response;
import com.openai.models.responses.ResponseCreateParams;
import com.openai.models.responses.ResponseInputItem;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.rollout.api.AgentEnv;
import org.rollout.api.AgentWorkflow;

/**
 * The built-in letter task as an agent written with the official OpenAI Java SDK: it sends the data
 * item's {@code messages} to its episode's base URL, and scores the reply as the letter demo does.
 *
 * <pre>
 *   data   {"messages": [{"role": "user", "content": "Reply with the letter q."}], "target": "q"}
 *   reply  "qqq…"
 *   reward 0.6 × (lowercase letters among the first 8 characters) / (number of those characters)
 *        + 0.4 × (characters equal to target among them)       / (number of those characters)
 * </pre>
 *
 * <p>Options ({@code workflow_kwargs}): {@code max_completion_tokens} and {@code temperature};
 * when absent the request leaves them out and the proxy's defaults (the run's {@code gconfig})
 * apply. {@code api} chooses how it asks ({@code rollout.agent.api} for {@code bin/rollout local
 * --workflow agent}): {@code chat} (default) with the SDK's chat completions, {@code responses}
 * with the SDK's Responses client, {@code messages} with Anthropic's Messages API over plain HTTP
 * ({@code max_tokens} is required there: {@code max_completion_tokens}, else 512). The engine records every token the SDK's request produced, so nothing here knows about
 * training. Thread-safe: each episode builds and closes its own client.
 */
public final class LetterAgent implements AgentWorkflow {
    /** How many leading characters of the reply are scored. */
    public static final int WINDOW = 8;

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Long maxCompletionTokens;
    private final Double temperature;
    private final String api;

    public LetterAgent() {
        this(Map.of());
    }

    /** @param kwargs {@code max_completion_tokens}, {@code temperature}, {@code api} */
    public LetterAgent(Map<String, Object> kwargs) {
        this.api = kwargs.get("api") instanceof String a ? a : "chat";
        if (!List.of("chat", "responses", "messages").contains(api)) {
            throw new IllegalArgumentException("api must be chat, responses or messages, got " + api);
        }
        this.maxCompletionTokens = kwargs.get("max_completion_tokens") instanceof Number n ? n.longValue() : null;
        this.temperature = kwargs.get("temperature") instanceof Number t ? t.doubleValue() : null;
        if (maxCompletionTokens != null && maxCompletionTokens < 1) {
            throw new IllegalArgumentException("max_completion_tokens must be >= 1, got " + maxCompletionTokens);
        }
    }

    @Override
    public Object run(Map<String, Object> data, AgentEnv env) {
        if (!(data.get("target") instanceof String target) || target.codePointCount(0, target.length()) != 1) {
            throw new IllegalArgumentException(
                    "letter task data needs 'target', one character; got " + data.get("target"));
        }
        String reply = switch (api) {
            case "responses" -> viaResponses(messages(data), env);
            case "messages" -> viaMessages(messages(data), env);
            default -> viaChat(messages(data), env);
        };
        return reward(reply, target);
    }

    private OpenAIClient client(AgentEnv env) {
        return OpenAIOkHttpClient.builder()
                .baseUrl(env.baseUrl().toString())
                .apiKey(env.apiKey())
                .timeout(Duration.ofMinutes(10))
                .maxRetries(0)
                .build();
    }

    private String viaChat(List<Map<?, ?>> messages, AgentEnv env) {
        ChatCompletionCreateParams.Builder params =
                ChatCompletionCreateParams.builder().model("rollout");
        if (maxCompletionTokens != null) {
            params.maxCompletionTokens(maxCompletionTokens);
        }
        if (temperature != null) {
            params.temperature(temperature);
        }
        for (Map<?, ?> m : messages) {
            String content = String.valueOf(m.get("content"));
            switch (String.valueOf(m.get("role"))) {
                case "system" -> params.addSystemMessage(content);
                case "assistant" -> params.addAssistantMessage(content);
                default -> params.addUserMessage(content);
            }
        }
        OpenAIClient client = client(env);
        try {
            ChatCompletion completion = client.chat().completions().create(params.build());
            return completion.choices().getFirst().message().content().orElse("");
        } finally {
            client.close();
        }
    }

    private String viaResponses(List<Map<?, ?>> messages, AgentEnv env) {
        ResponseCreateParams.Builder params = ResponseCreateParams.builder().model("rollout");
        if (maxCompletionTokens != null) {
            params.maxOutputTokens(maxCompletionTokens);
        }
        if (temperature != null) {
            params.temperature(temperature);
        }
        List<ResponseInputItem> input = new ArrayList<>();
        for (Map<?, ?> m : messages) {
            EasyInputMessage.Role role = switch (String.valueOf(m.get("role"))) {
                case "system" -> EasyInputMessage.Role.SYSTEM;
                case "assistant" -> EasyInputMessage.Role.ASSISTANT;
                default -> EasyInputMessage.Role.USER;
            };
            input.add(ResponseInputItem.ofEasyInputMessage(EasyInputMessage.builder()
                    .role(role)
                    .content(String.valueOf(m.get("content")))
                    .build()));
        }
        params.inputOfResponse(input);
        OpenAIClient client = client(env);
        try {
            Response r = client.responses().create(params.build());
            StringBuilder text = new StringBuilder();
            r.output().stream()
                    .filter(item -> item.isMessage())
                    .forEach(item -> item.asMessage()
                            .content()
                            .forEach(c -> c.outputText().ifPresent(t -> text.append(t.text()))));
            return text.toString();
        } finally {
            client.close();
        }
    }

    private String viaMessages(List<Map<?, ?>> messages, AgentEnv env) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("model", "rollout");
        body.put("max_tokens", maxCompletionTokens != null ? maxCompletionTokens : 512L);
        if (temperature != null) {
            body.put("temperature", Math.min(1.0, temperature));
        }
        List<Map<String, Object>> turns = new ArrayList<>();
        StringBuilder system = new StringBuilder();
        for (Map<?, ?> m : messages) {
            String role = String.valueOf(m.get("role"));
            String content = String.valueOf(m.get("content"));
            if (role.equals("system")) {
                system.append(system.isEmpty() ? "" : "\n").append(content);
            } else {
                turns.add(Map.of("role", role.equals("assistant") ? "assistant" : "user", "content", content));
            }
        }
        if (!system.isEmpty()) {
            body.put("system", system.toString());
        }
        body.put("messages", turns);
        // Anthropic's clients append /v1/messages to a base URL without /v1; the session's URL ends in /v1.
        URI url = URI.create(env.baseUrl().toString().replaceAll("/+$", "") + "/messages");
        try (HttpClient http =
                HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build()) {
            HttpResponse<String> r = http.send(
                    HttpRequest.newBuilder(url)
                            .timeout(Duration.ofMinutes(10))
                            .header("content-type", "application/json")
                            .header("x-api-key", env.apiKey())
                            .header("anthropic-version", "2023-06-01")
                            .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            JsonNode answer = JSON.readTree(r.body());
            if (r.statusCode() != 200) {
                throw new IllegalStateException("Messages API answered " + r.statusCode() + ": "
                        + answer.path("error").path("message").asText());
            }
            StringBuilder text = new StringBuilder();
            for (JsonNode block : answer.path("content")) {
                if ("text".equals(block.path("type").asText())) {
                    text.append(block.path("text").asText());
                }
            }
            return text.toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while asking the Messages API", e);
        }
    }

    private static List<Map<?, ?>> messages(Map<String, Object> data) {
        if (!(data.get("messages") instanceof List<?> list) || list.isEmpty()) {
            throw new IllegalArgumentException("letter task data needs a non-empty 'messages' list");
        }
        List<Map<?, ?>> out = new ArrayList<>();
        for (Object m : list) {
            if (!(m instanceof Map<?, ?> map)) {
                throw new IllegalArgumentException("letter task message is not an object: " + m);
            }
            out.add(map);
        }
        return out;
    }

    /** The letter demo's reward for {@code reply} and {@code target}; 0 for an empty reply. */
    public static double reward(String reply, String target) {
        int[] window = reply.codePoints().limit(WINDOW).toArray();
        if (window.length == 0) {
            return 0.0;
        }
        int t = target.codePointAt(0);
        int lower = 0;
        int hits = 0;
        for (int c : window) {
            if (c >= 'a' && c <= 'z') {
                lower++;
            }
            if (c == t) {
                hits++;
            }
        }
        return 0.6 * lower / window.length + 0.4 * hits / window.length;
    }
}
