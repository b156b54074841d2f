package org.rollout.examples.agents;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
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
 * A multi-turn, tool-using agent written against the plain OpenAI HTTP API with the JDK's
 * HttpClient: the model may call a {@code calculator} tool, the agent evaluates each call and sends
 * the result back, until the model answers without a tool call or {@code max_turns} completions
 * were made.
 *
 * <pre>
 *   data   {"question": "What is 12*7?", "answer": 84}
 *   turn   POST {base}/chat/completions  messages + tools=[calculator(expression)]
 *            tool_calls → append the assistant message and one {"role": "tool", …} per call, loop
 *            no tool call → the final answer
 *   reward 1.0 when the final answer contains the expected number, else 0.0
 * </pre>
 *
 * <p>Every completion of the loop is recorded by the proxy; with {@code export_style = concat}
 * the whole conversation, tool results included as masked context, becomes one training row.
 * Options ({@code workflow_kwargs}): {@code max_turns} (default 4), {@code max_completion_tokens}
 * (default 256), {@code temperature} (default 1.0). Thread-safe: per-episode state is local.
 */
public final class CalculatorAgent implements AgentWorkflow {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The tool, in OpenAI's form. */
    public static final Map<String, Object> CALCULATOR_TOOL = Map.of(
            "type",
            "function",
            "function",
            Map.of(
                    "name", "calculator",
                    "description", "Evaluates an arithmetic expression with + - * / and parentheses.",
                    "parameters",
                            Map.of(
                                    "type", "object",
                                    "properties", Map.of("expression", Map.of("type", "string")),
                                    "required", List.of("expression"))));

    private final int maxTurns;
    private final int maxCompletionTokens;
    private final double temperature;

    public CalculatorAgent() {
        this(Map.of());
    }

    /** @param kwargs {@code max_turns}, {@code max_completion_tokens}, {@code temperature} */
    public CalculatorAgent(Map<String, Object> kwargs) {
        this.maxTurns = ((Number) kwargs.getOrDefault("max_turns", 4)).intValue();
        this.maxCompletionTokens = ((Number) kwargs.getOrDefault("max_completion_tokens", 256)).intValue();
        this.temperature = ((Number) kwargs.getOrDefault("temperature", 1.0)).doubleValue();
        if (maxTurns < 1) {
            throw new IllegalArgumentException("max_turns must be >= 1, got " + maxTurns);
        }
    }

    @Override
    public Object run(Map<String, Object> data, AgentEnv env) throws IOException, InterruptedException {
        String question = String.valueOf(data.get("question"));
        List<Map<String, Object>> messages = new ArrayList<>();
        messages.add(message("system", "Use the calculator tool for arithmetic, then answer with the number."));
        messages.add(message("user", question));
        for (int turn = 0; turn < maxTurns; turn++) {
            JsonNode reply = complete(env, messages).path("choices").path(0).path("message");
            @SuppressWarnings("unchecked")
            Map<String, Object> assistant = JSON.convertValue(reply, LinkedHashMap.class);
            messages.add(assistant);
            JsonNode calls = reply.path("tool_calls");
            if (!calls.isArray() || calls.isEmpty()) {
                return reward(reply.path("content").asText(""), data.get("answer"));
            }
            for (JsonNode call : calls) {
                Map<String, Object> result = message("tool", runTool(call.path("function")));
                result.put("tool_call_id", call.path("id").asText());
                messages.add(result);
            }
        }
        return 0.0; // out of turns without a final answer
    }

    private JsonNode complete(AgentEnv env, List<Map<String, Object>> messages)
            throws IOException, InterruptedException {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("model", "rollout");
        body.put("messages", messages);
        body.put("tools", List.of(CALCULATOR_TOOL));
        body.put("max_completion_tokens", maxCompletionTokens);
        body.put("temperature", temperature);
        HttpRequest request = HttpRequest.newBuilder(URI.create(env.baseUrl() + "/chat/completions"))
                .timeout(Duration.ofMinutes(10))
                .header("Authorization", "Bearer " + env.apiKey())
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body)))
                .build();
        HttpResponse<String> response = env.httpClient().send(request, HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IOException("chat completion at " + env.baseUrl() + " failed with " + response.statusCode() + ": "
                    + response.body());
        }
        return JSON.readTree(response.body());
    }

    /** The tool's answer to one call: the value, or a message the model can read. */
    static String runTool(JsonNode function) {
        if (!"calculator".equals(function.path("name").asText())) {
            return "error: unknown tool '" + function.path("name").asText() + "'";
        }
        try {
            JsonNode args = JSON.readTree(function.path("arguments").asText("{}"));
            return Arithmetic.format(Arithmetic.evaluate(args.path("expression").asText()));
        } catch (IOException | IllegalArgumentException e) {
            return "error: " + e.getMessage();
        }
    }

    /** 1.0 when {@code answer} (a number) appears in {@code content}, else 0.0. */
    static double reward(String content, Object answer) {
        if (!(answer instanceof Number n)) {
            return 0.0;
        }
        String expected = Arithmetic.format(n.doubleValue());
        return content.contains(expected) ? 1.0 : 0.0;
    }

    private static Map<String, Object> message(String role, String content) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("role", role);
        m.put("content", content);
        return m;
    }
}
