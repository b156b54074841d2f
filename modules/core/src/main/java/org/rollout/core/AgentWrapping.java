package org.rollout.core;

import org.rollout.api.AgentWorkflow;
import org.rollout.api.RolloutWorkflow;

/**
 * Turns an {@link AgentWorkflow} into the {@link RolloutWorkflow} a slot runs: AReaL's {@code
 * OpenAIProxyWorkflow}. Each episode gets its own OpenAI-compatible base URL on the node's proxy;
 * the proxy records every completion, and the recorded interactions become the episode's result.
 *
 * <p>The runtime provides one when the node has an OpenAI proxy running; without one (a null
 * {@code AgentWrapping} given to {@link WorkflowResolver}) agent workflows and online mode are
 * refused. Implementations must be thread-safe.
 */
@FunctionalInterface
public interface AgentWrapping {

    /**
     * The workflow that runs {@code agent} behind the proxy.
     *
     * @param agent the agent, or null in online mode, where an external client drives the
     *     episode through the proxy and the workflow only waits for its session to end
     * @return never null
     */
    RolloutWorkflow wrap(AgentWorkflow agent);
}
