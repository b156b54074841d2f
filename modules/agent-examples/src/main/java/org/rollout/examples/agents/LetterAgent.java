package org.rollout.examples.agents;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import java.time.Duration;
import java.util.ArrayList;
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
 * apply. The engine records every token the SDK's request produced, so nothing here knows about
 * training. Thread-safe: each episode builds and closes its own client.
 */
public final class LetterAgent implements AgentWorkflow {
    /** How many leading characters of the reply are scored. */
    public static final int WINDOW = 8;

    private final Long maxCompletionTokens;
    private final Double temperature;

    public LetterAgent() {
        this(Map.of());
    }

    /** @param kwargs {@code max_completion_tokens}, {@code temperature} */
    public LetterAgent(Map<String, Object> kwargs) {
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
        ChatCompletionCreateParams.Builder params =
                ChatCompletionCreateParams.builder().model("rollout");
        if (maxCompletionTokens != null) {
            params.maxCompletionTokens(maxCompletionTokens);
        }
        if (temperature != null) {
            params.temperature(temperature);
        }
        for (Map<?, ?> m : messages(data)) {
            String content = String.valueOf(m.get("content"));
            switch (String.valueOf(m.get("role"))) {
                case "system" -> params.addSystemMessage(content);
                case "assistant" -> params.addAssistantMessage(content);
                default -> params.addUserMessage(content);
            }
        }
        OpenAIClient client = OpenAIOkHttpClient.builder()
                .baseUrl(env.baseUrl().toString())
                .apiKey(env.apiKey())
                .timeout(Duration.ofMinutes(10))
                .maxRetries(0)
                .build();
        try {
            ChatCompletion completion = client.chat().completions().create(params.build());
            String reply = completion.choices().getFirst().message().content().orElse("");
            return reward(reply, target);
        } finally {
            client.close();
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
