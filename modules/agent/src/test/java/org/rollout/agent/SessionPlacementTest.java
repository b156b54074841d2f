package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;

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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.rollout.api.AgentEnv;
import org.rollout.api.AgentWorkflow;
import org.rollout.api.GenerationConfig;
import org.rollout.api.WorkflowContext;
import org.rollout.config.InferenceConfig;
import org.rollout.config.RoutingStrategy;
import org.rollout.config.ServerAddress;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.inference.ServerStats;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;

/**
 * An agent's turns stay on one server through each of the proxy's APIs: the proxy names its
 * session as the trajectory (ModelRequest.AFFINITY_KEY), so with an affine routing_strategy every
 * turn goes where the history's prefix is cached. The proxy's handler threads carry no episode
 * context: without the session's name the turns would take turns over the idle servers.
 */
class SessionPlacementTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int TURNS = 4;

    private final List<ModelServer> servers = new ArrayList<>();
    private RemoteInferenceEngine engine;
    private OpenAIProxy proxy;

    @AfterEach
    void stop() {
        if (proxy != null) {
            proxy.close();
        }
        if (engine != null) {
            engine.close();
        }
        servers.forEach(ModelServer::close);
    }

    /**
     * One turn through {@code api}: posts the conversation so far and appends the answer to it;
     * returns the prompt tokens the usage reports cached (-1 where the API has no such count).
     */
    private static int turn(AgentEnv env, String api, List<Map<String, Object>> messages)
            throws IOException, InterruptedException {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("model", "rollout");
        String path;
        switch (api) {
            case "chat" -> {
                path = "/chat/completions";
                body.put("messages", messages);
                body.put("max_completion_tokens", 8);
            }
            case "responses" -> {
                path = "/responses";
                body.put("input", messages);
                body.put("max_output_tokens", 8);
            }
            default -> {
                path = "/messages";
                body.put("messages", messages);
                body.put("max_tokens", 8);
            }
        }
        HttpRequest req = HttpRequest.newBuilder(URI.create(env.baseUrl() + path))
                .timeout(Duration.ofSeconds(60))
                .header("Authorization", "Bearer " + env.apiKey())
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body)))
                .build();
        HttpResponse<String> r = env.httpClient().send(req, HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException(api + " turn failed: " + r.statusCode() + " " + r.body());
        }
        JsonNode reply = JSON.readTree(r.body());
        String text = switch (api) {
            case "chat" ->
                reply.path("choices").path(0).path("message").path("content").asText("");
            case "responses" -> reply.path("output_text").asText("");
            default -> reply.path("content").path(0).path("text").asText("");
        };
        messages.add(Map.of("role", "assistant", "content", text));
        messages.add(PlainChat.user("Go on, turn " + messages.size()));
        return switch (api) {
            case "chat" ->
                reply.path("usage")
                        .path("prompt_tokens_details")
                        .path("cached_tokens")
                        .asInt(-1);
            case "responses" ->
                reply.path("usage")
                        .path("input_tokens_details")
                        .path("cached_tokens")
                        .asInt(-1);
            default -> -1;
        };
    }

    private Map<ServerAddress, Long> requests() {
        Map<ServerAddress, Long> m = new LinkedHashMap<>();
        for (ServerStats s : engine.serverStats()) {
            m.put(s.address(), s.requests());
        }
        return m;
    }

    @ParameterizedTest
    @ValueSource(strings = {"chat", "responses", "messages"})
    void everyTurnOfASessionGoesToTheServerOfItsFirst(String api) throws Exception {
        List<ServerAddress> addresses = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ModelServer s = ModelServer.start(ModelServerConfig.defaults());
            servers.add(s);
            addresses.add(new ServerAddress("127.0.0.1", s.port()));
        }
        engine = new RemoteInferenceEngine(InferenceConfig.builder()
                .serverAddresses(addresses)
                .routingStrategy(RoutingStrategy.GROUP_AFFINITY)
                .requestTimeout(Duration.ofSeconds(60))
                .setupTimeout(Duration.ofSeconds(30))
                .healthCheckInterval(Duration.ofMillis(100))
                .controlTimeout(Duration.ofSeconds(20))
                .build());
        engine.initialize();
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults(),
                engine,
                ByteLevelTokenizer.INSTANCE,
                GenerationConfig.builder().maxTokens(8192).maxNewTokens(8).build());
        List<Integer> cached = new java.util.concurrent.CopyOnWriteArrayList<>();
        AgentWorkflow conversation = (data, env) -> {
            List<Map<String, Object>> messages = new ArrayList<>();
            messages.add(PlainChat.user("Hello"));
            for (int t = 0; t < TURNS; t++) {
                cached.add(turn(env, api, messages));
            }
            return 1.0;
        };
        for (int episode = 0; episode < 3; episode++) {
            Map<ServerAddress, Long> before = requests();
            WorkflowContext ctx = WorkflowContext.builder()
                    .taskId(episode)
                    .sampleIdx(0)
                    .groupSize(1)
                    .build();
            WorkflowContext.callWith(
                    ctx,
                    () -> new ProxyAgentWorkflow(proxy, AgentOptions.defaults(), conversation)
                            .runEpisode(engine, Map.of()));
            Map<ServerAddress, Long> after = requests();
            Map<ServerAddress, Long> used = new LinkedHashMap<>();
            after.forEach((a, n) -> {
                if (n > before.get(a)) {
                    used.put(a, n - before.get(a));
                }
            });
            assertThat(used)
                    .as("%s episode %d: requests per server of its %d turns", api, episode, TURNS)
                    .hasSize(1)
                    .containsValue((long) TURNS);
        }
        if (!api.equals("messages")) {
            // Each later turn finds its history in the server's prefix cache, and the usage says so.
            for (int i = 0; i < cached.size(); i++) {
                if (i % TURNS != 0) {
                    assertThat(cached.get(i))
                            .as("%s turn %d: cached prompt tokens in the usage", api, i % TURNS)
                            .isPositive();
                }
            }
        }
    }
}
