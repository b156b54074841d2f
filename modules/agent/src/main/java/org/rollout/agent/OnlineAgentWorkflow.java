package org.rollout.agent;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeoutException;
import org.rollout.api.EpisodeResult;
import org.rollout.api.InferenceEngine;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.WorkflowContext;

/**
 * Online mode (semantics §8 rule 0, {@code rollout.agent.mode = online}): each episode opens a proxy session
 * and waits for an external client (any language, any process) to claim it, use it, and post its
 * reward.
 *
 * <pre>
 *   episode: openOnlineSession(episodeKey, data) ─────────────── wait ≤ online_timeout ──► reward ──► export
 *   client:  POST /online/claim (admin key) ──► {session, base_url, api_key, data}
 *            POST {base_url}/chat/completions …   (recorded)
 *            POST {base_url}/reward {"reward": 1.0} or {"reward": {"chatcmpl-…": 1.0}}
 * </pre>
 *
 * <p>No reward in time: {@code Rejected("online session … got no reward within …")}; the proxy
 * closing first: {@code Rejected("online session … was closed before its reward arrived")}. A reward with
 * no completion: {@code Rejected("no completions")}. The session is closed in a finally, so an
 * interrupted episode aborts the client's generation in flight. Export, rewards and the
 * {@code reward} statistic are as in {@link ProxyAgentWorkflow}. Thread-safe.
 */
public final class OnlineAgentWorkflow implements RolloutWorkflow {
    private final OpenAIProxy proxy;
    private final AgentOptions options;

    public OnlineAgentWorkflow(OpenAIProxy proxy, AgentOptions options) {
        this.proxy = Objects.requireNonNull(proxy, "proxy");
        this.options = Objects.requireNonNull(options, "options");
    }

    @Override
    public EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) throws Exception {
        WorkflowContext ctx = WorkflowContext.current();
        ProxySession session =
                proxy.openOnlineSession(ctx.episodeKey(), ProxyAgentWorkflow.templateType(options), data);
        Object reward;
        try {
            reward = session.awaitReward(options.onlineTimeout());
        } catch (EpisodeRejectedException e) {
            return EpisodeResult.rejected(e.reason());
        } catch (TimeoutException e) {
            return EpisodeResult.rejected("online session " + session.id() + " got no reward within "
                    + seconds(options.onlineTimeout()) + " s (rollout.agent.online_timeout); "
                    + session.interactions().size() + " completion(s) recorded");
        } finally {
            session.close();
        }
        return ProxyAgentWorkflow.finish(session.id(), reward, session.interactions(), options, ctx);
    }

    private static String seconds(Duration d) {
        long ms = d.toMillis();
        return ms % 1000 == 0 ? Long.toString(ms / 1000) : Double.toString(ms / 1000.0);
    }

    @Override
    public String toString() {
        return "OnlineAgentWorkflow{" + proxy.baseUrl() + ", " + options.exportStyle() + "}";
    }
}
