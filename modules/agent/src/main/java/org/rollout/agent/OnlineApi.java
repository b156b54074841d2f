package org.rollout.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.rollout.api.WorkflowContractException;

/**
 * Online mode's endpoints: {@code POST /online/claim} (admin key) hands an external client the next
 * online session waiting, and {@code POST /s/{session}/v1/reward} takes that session's reward ({@code
 * {"reward": 1.0}} or {@code {"reward": {"chatcmpl-…": 1.0}}}).
 */
final class OnlineApi {
    private static final ObjectMapper JSON = ProxyRequests.JSON;
    private static final Duration DEFAULT_CLAIM_WAIT = Duration.ofSeconds(30);
    private static final Duration MAX_CLAIM_WAIT = Duration.ofSeconds(300);

    private final ProxySessions sessions;
    private final JsonBodies bodies;

    OnlineApi(ProxySessions sessions, JsonBodies bodies) {
        this.sessions = sessions;
        this.bodies = bodies;
    }

    void reward(ProxyExchange ex, ProxySession session) throws IOException, OpenAIError {
        if (!session.isOnline()) {
            throw OpenAIError.invalid(
                    null,
                    "not_online_session",
                    "Session '" + session.id() + "' belongs to an agent workflow: its reward is what the agent"
                            + " returns. Only online sessions take a posted reward.");
        }
        JsonNode body = bodies.readJson(ex);
        JsonNode r = body == null ? null : body.get("reward");
        if (r == null || !(r.isNumber() || r.isObject())) {
            throw OpenAIError.invalid(
                    "reward",
                    "The body must be {\"reward\": <number>} or {\"reward\": {\"<completion id>\": <number>}}.");
        }
        Object value = r.isNumber() ? (Object) r.asDouble() : JSON.convertValue(r, LinkedHashMap.class);
        try {
            AgentRewards.apply(value, session.interactions(), session.id());
        } catch (WorkflowContractException e) {
            throw OpenAIError.invalid("reward", e.getMessage());
        }
        if (!session.postReward(value)) {
            throw new OpenAIError(
                    409,
                    "invalid_request_error",
                    "reward",
                    "reward_already_set",
                    "Session '" + session.id() + "' already has its reward.");
        }
        JsonBodies.sendJson(ex, 200, Map.of("status", "ok", "session", session.id()));
    }

    /**
     * Waits up to {@code {"timeout": seconds}} (default 30, at most 300) for an online session and
     * answers {@code {"session", "base_url", "api_key", "data"}}, or 204 when none came.
     */
    void claim(ProxyExchange ex) throws IOException, OpenAIError {
        byte[] raw = bodies.readBody(ex);
        Duration wait = DEFAULT_CLAIM_WAIT;
        if (raw.length > 0) {
            JsonNode body = JsonBodies.parse(raw);
            JsonNode t = body == null ? null : body.get("timeout");
            if (ProxyRequests.present(t)) {
                if (!t.isNumber() || !(t.asDouble() >= 0) || t.asDouble() > MAX_CLAIM_WAIT.toSeconds()) {
                    throw OpenAIError.invalid(
                            "timeout",
                            "'timeout' must be a number of seconds in [0, " + MAX_CLAIM_WAIT.toSeconds() + "].");
                }
                wait = Duration.ofMillis((long) (t.asDouble() * 1000));
            }
        }
        long deadline = System.nanoTime() + wait.toNanos();
        while (true) {
            ProxySession s;
            try {
                s = sessions.claim(Math.max(0, deadline - System.nanoTime()));
            } catch (InterruptedException e) {
                throw ProxyErrors.shuttingDown();
            }
            if (s == null) {
                ex.respond(204, 0);
                return;
            }
            if (s.isClosed()) {
                continue;
            }
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("session", s.id());
            body.put("base_url", s.baseUrl().toString());
            body.put("api_key", s.apiKey());
            body.put("data", s.onlineData());
            JsonBodies.sendJson(ex, 200, body);
            return;
        }
    }
}
