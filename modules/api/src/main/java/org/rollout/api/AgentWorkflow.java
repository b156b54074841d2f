package org.rollout.api;

import java.util.Map;

/**
 * An agent written as ordinary code against an OpenAI-compatible endpoint: the recommended way to
 * write new agentic RL workflows (semantics §3.1, §8). The engine gives each episode its own base URL,
 * records every completion made under it, and turns the recorded interactions into training rows.
 *
 * <p>The return value assigns rewards:
 *
 * <ul>
 *   <li>a finite {@link Number}: the reward of the episode's last completion;
 *   <li>a {@code Map<String, Number>}: rewards per completion id;
 *   <li>anything else (null, a string, a NaN) rejects the episode with an error that says what was
 *       returned.
 * </ul>
 *
 * <p>Threading and failure are as for {@link RolloutWorkflow}: one virtual thread per episode,
 * blocking code is fine, throwing fails the group, interruption means cancellation.
 */
@FunctionalInterface
public interface AgentWorkflow {

    /**
     * Runs one agent episode.
     *
     * @param data the dataset item, shared by the group's slots; do not modify
     * @param env the episode's endpoint, key and client
     * @return a reward, or rewards per completion id
     */
    Object run(Map<String, Object> data, AgentEnv env) throws Exception;
}
