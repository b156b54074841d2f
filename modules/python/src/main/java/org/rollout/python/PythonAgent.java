package org.rollout.python;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.Map;
import org.rollout.api.AgentEnv;
import org.rollout.api.AgentWorkflow;
import org.rollout.api.GenerationConfig;
import org.rollout.api.WorkflowContractException;

/**
 * A Python agent in AReaL's form, a class with {@code async def run(self, data, **extra_kwargs)}
 * that talks to an OpenAI-compatible client built from {@code base_url} and {@code api_key}, run in
 * the pool's workers as an {@link AgentWorkflow}: the node's agent proxy gives each episode its own
 * session (base URL and key), records its completions, and applies the reward {@code run} returns.
 * Many episodes share one worker's event loop, so an agent costs no process per episode.
 *
 * <pre>
 *   run returns            here
 *   a number               that number: the reward of the episode's last completion
 *   {completion id: n}     rewards by completion id
 *   None                   null: the proxy rejects the episode, saying what was returned
 * </pre>
 *
 * <p>Cancellation, a raise and a worker's death are as for a workflow ({@link PythonEpisode}).
 * Thread-safe.
 */
public final class PythonAgent implements AgentWorkflow, AutoCloseable {
    private final PythonWorkflowPool pool;

    /** @param pool workers of an agent class ({@link PythonWorkflowPool#kind()} is {@code agent}) */
    public PythonAgent(PythonWorkflowPool pool) {
        if (!pool.kind().equals("agent")) {
            throw new IllegalArgumentException(pool.spec() + " is not an agent class (no async run(self, data, **kw))");
        }
        this.pool = pool;
    }

    @Override
    public Object run(Map<String, Object> data, AgentEnv env) throws Exception {
        Map<String, Object> extra = new LinkedHashMap<>();
        extra.put("base_url", env.baseUrl().toString());
        extra.put("api_key", env.apiKey());
        JsonNode done = PythonEpisode.run(pool, GenerationConfig.defaults(), null, data, extra);
        JsonNode result = done.path("result");
        return switch (result.path("kind").asText()) {
            case "reward" ->
                result.path("reward").isNumber()
                        ? (Object) result.path("reward").asDouble()
                        : null;
            case "rewards" -> {
                Map<String, Object> byId = new LinkedHashMap<>();
                result.path("rewards")
                        .properties()
                        .forEach(e -> byId.put(e.getKey(), e.getValue().asDouble()));
                yield byId;
            }
            default ->
                throw new WorkflowContractException(pool.spec() + ".run: the worker sent a result of kind '"
                        + result.path("kind").asText() + "'; expected reward or rewards");
        };
    }

    /** The pool this agent runs in. */
    public PythonWorkflowPool pool() {
        return pool;
    }

    @Override
    public void close() {
        pool.close();
    }

    @Override
    public String toString() {
        return "python:" + pool.spec();
    }
}
