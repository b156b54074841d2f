package org.rollout.agent;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.rollout.api.AgentWorkflow;
import org.rollout.api.EpisodeResult;
import org.rollout.api.InferenceEngine;
import org.rollout.api.Interaction;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.WorkflowContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs an {@link AgentWorkflow} behind the node's {@link OpenAIProxy} as a {@link RolloutWorkflow}:
 * AReaL's {@code OpenAIProxyWorkflow} (semantics §8).
 *
 * <pre>
 *   runEpisode(engine, data)
 *     open a proxy session keyed by WorkflowContext.current().episodeKey() ({task_id}:{sample_idx})
 *     agent.run(data, env{baseUrl, apiKey, httpClient, context})   on this (virtual) thread
 *     close the session (finally; also when interrupted or when the agent throws)
 *     rewards: what the agent returned → AgentRewards.apply               (contract error if not a reward)
 *     no completion recorded                     → Rejected("no completions")
 *     InteractionExport.export(style, turn_discount) → EpisodeResult.Interactions
 *     record "reward" (the last completion's) under the context's stat scope
 * </pre>
 *
 * <p>The {@code engine} argument is not used: completions go through the proxy, which holds the
 * node's engine. An agent may throw {@link EpisodeRejectedException} to reject its episode; any
 * other exception propagates (the group fails). Interruption (cancellation) closes the session,
 * which aborts the generation in flight.
 *
 * <p>Thread-safe: the slots of a group share one instance; all state is per call.
 */
public final class ProxyAgentWorkflow implements RolloutWorkflow {
    private static final Logger log = LoggerFactory.getLogger(ProxyAgentWorkflow.class);

    private final OpenAIProxy proxy;
    private final AgentOptions options;
    private final AgentWorkflow agent;

    public ProxyAgentWorkflow(OpenAIProxy proxy, AgentOptions options, AgentWorkflow agent) {
        this.proxy = Objects.requireNonNull(proxy, "proxy");
        this.options = Objects.requireNonNull(options, "options");
        this.agent = Objects.requireNonNull(agent, "agent");
    }

    /** The agent this workflow runs. */
    public AgentWorkflow agent() {
        return agent;
    }

    @Override
    public EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) throws Exception {
        WorkflowContext ctx = WorkflowContext.current();
        ProxySession session = proxy.openSession(ctx.episodeKey(), templateType(options));
        Object returned;
        try {
            returned = agent.run(data, new SessionEnv(session.baseUrl(), session.apiKey(), ctx.httpClient(), ctx));
        } catch (EpisodeRejectedException e) {
            log.info("agent episode {} rejected: {}", session.id(), e.reason());
            return EpisodeResult.rejected(e.reason());
        } finally {
            session.close();
        }
        return finish(session.id(), returned, session.interactions(), options, ctx);
    }

    /** The session's completions rewarded and exported; shared with the online and process workflows. */
    static EpisodeResult finish(
            String episode, Object returned, List<Interaction> recorded, AgentOptions options, WorkflowContext ctx) {
        List<Interaction> rewarded = AgentRewards.apply(returned, recorded, episode);
        if (rewarded.isEmpty()) {
            return EpisodeResult.rejected("no completions");
        }
        Map<String, Interaction> exported =
                InteractionExport.export(rewarded, options.exportStyle(), options.turnDiscount());
        Double last = rewarded.getLast().reward();
        if (last != null) {
            ctx.stats().scalar("reward", last);
        }
        return EpisodeResult.interactions(exported);
    }

    static Interaction.ChatTemplateType templateType(AgentOptions options) {
        return options.exportStyle() == ExportStyle.CONCAT
                ? Interaction.ChatTemplateType.CONCAT
                : Interaction.ChatTemplateType.HF;
    }

    @Override
    public String toString() {
        return "ProxyAgentWorkflow{" + agent.getClass().getName() + ", " + options.exportStyle() + ", turn_discount="
                + options.turnDiscount() + "}";
    }
}
