package org.rollout.agent;

import java.util.Objects;
import org.rollout.api.AgentWorkflow;
import org.rollout.api.RolloutWorkflow;
import org.rollout.core.AgentWrapping;
import org.rollout.core.WorkflowResolver;

/**
 * The entry points that put agents behind a running {@link OpenAIProxy}.
 *
 * <pre>
 *   OpenAIProxy proxy = OpenAIProxy.start(ProxyConfig.defaults(), engine, tokenizer, gconfig);
 *   AgentOptions options = AgentOptions.from(settings.agent());
 *   WorkflowResolver resolver = AgentWorkflows.resolver(proxy, options);
 *   RolloutWorkflow w = resolver.resolve("org.rollout.examples.agents.LetterAgent", Map.of()).workflow();
 *   …
 *   proxy.close();
 * </pre>
 */
public final class AgentWorkflows {
    private AgentWorkflows() {}

    /**
     * The {@link AgentWrapping} for core's {@link WorkflowResolver}: {@code wrap(agent)} is a {@link
     * ProxyAgentWorkflow}, {@code wrap(null)} (online mode) an {@link OnlineAgentWorkflow}. Thread-safe.
     */
    public static AgentWrapping wrapping(OpenAIProxy proxy, AgentOptions options) {
        Objects.requireNonNull(proxy, "proxy");
        Objects.requireNonNull(options, "options");
        return new AgentWrapping() {
            @Override
            public RolloutWorkflow wrap(AgentWorkflow agent) {
                return agent == null
                        ? new OnlineAgentWorkflow(proxy, options)
                        : new ProxyAgentWorkflow(proxy, options, agent);
            }

            @Override
            public String toString() {
                return "AgentWrapping{" + proxy.baseUrl() + ", " + options + "}";
            }
        };
    }

    /** A resolver (semantics §8) with {@code rollout.agent.mode} from {@code options} and agents wrapped behind {@code proxy}. */
    public static WorkflowResolver resolver(OpenAIProxy proxy, AgentOptions options) {
        return new WorkflowResolver(options.mode(), wrapping(proxy, options));
    }
}
