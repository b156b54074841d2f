package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.AgentEnv;
import org.rollout.api.AgentWorkflow;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.Interaction;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.WorkflowContext;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.core.ResolvedWorkflow;
import org.rollout.core.WorkflowResolver;
import org.rollout.testengine.ScriptedEngine;

/** Online mode and workflow resolution (semantics §8) with the proxy's AgentWrapping. */
class OnlineModeTest {
    private static final AgentOptions ONLINE =
            AgentOptions.defaults().withMode("online").withOnlineTimeout(Duration.ofSeconds(60));

    private OpenAIProxy proxy;

    @AfterEach
    void stop() {
        if (proxy != null) {
            proxy.close();
        }
    }

    private void start(ScriptedEngine engine) throws Exception {
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults(),
                engine,
                ByteLevelTokenizer.INSTANCE,
                GenerationConfig.builder().maxNewTokens(32).build());
    }

    private static CompletableFuture<EpisodeResult> runInBackground(RolloutWorkflow w, Map<String, Object> data) {
        CompletableFuture<EpisodeResult> f = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try {
                WorkflowContext ctx = WorkflowContext.builder()
                        .taskId(30)
                        .sampleIdx(0)
                        .groupSize(1)
                        .build();
                f.complete(WorkflowContext.callWith(ctx, () -> w.runEpisode(null, data)));
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        return f;
    }

    private ProxyHttp.Reply claim() throws Exception {
        return ProxyHttp.post(proxy.baseUrl() + "/online/claim", "areal-admin-key", "{\"timeout\": 30}");
    }

    @Test
    void anExternalClientClaimsTheSessionChatsAndPostsTheReward() throws Exception {
        start(ScriptedEngine.replying("four"));
        RolloutWorkflow online =
                AgentWorkflows.resolver(proxy, ONLINE).resolve(null, null).workflow();
        assertThat(online).isInstanceOf(OnlineAgentWorkflow.class);
        CompletableFuture<EpisodeResult> episode = runInBackground(online, Map.of("question", "2+2?"));

        ProxyHttp.Reply claimed = claim();
        assertThat(claimed.status()).isEqualTo(200);
        JsonNode c = claimed.body();
        assertThat(c.get("session").asText()).isEqualTo("30:0");
        assertThat(c.get("data").get("question").asText()).isEqualTo("2+2?");
        String base = c.get("base_url").asText();
        String key = c.get("api_key").asText();
        ProxyHttp.Reply chat = ProxyHttp.post(base + "/chat/completions", key, ProxyHttp.chatBody("2+2?"));
        assertThat(chat.status()).isEqualTo(200);
        ProxyHttp.Reply rewarded = ProxyHttp.post(base + "/reward", key, "{\"reward\": 1.0}");
        assertThat(rewarded.status()).isEqualTo(200);

        EpisodeResult r = episode.get(30, TimeUnit.SECONDS);
        Interaction it =
                ((EpisodeResult.Interactions) r).byId().values().iterator().next();
        assertThat(it.id()).isEqualTo(chat.body().get("id").asText());
        assertThat(it.reward()).isEqualTo(1.0);
        assertThat(proxy.openSessions()).isZero();
    }

    @Test
    void rewardsPerCompletionIdArePostedAsAMap() throws Exception {
        start(ScriptedEngine.replying("a", "b"));
        CompletableFuture<EpisodeResult> episode = runInBackground(new OnlineAgentWorkflow(proxy, ONLINE), Map.of());
        JsonNode c = claim().body();
        String base = c.get("base_url").asText();
        String key = c.get("api_key").asText();
        String first = ProxyHttp.post(base + "/chat/completions", key, ProxyHttp.chatBody("1"))
                .body()
                .get("id")
                .asText();
        ProxyHttp.post(base + "/chat/completions", key, ProxyHttp.chatBody("2"));
        ProxyHttp.Reply unknown = ProxyHttp.post(base + "/reward", key, "{\"reward\": {\"chatcmpl-nope\": 1}}");
        assertThat(unknown.status()).isEqualTo(400);
        assertThat(unknown.error().get("param").asText()).isEqualTo("reward");
        assertThat(unknown.error().get("message").asText()).contains("[chatcmpl-nope]");
        ProxyHttp.Reply ok = ProxyHttp.post(base + "/reward", key, "{\"reward\": {\"" + first + "\": 0.5}}");
        assertThat(ok.status()).isEqualTo(200);
        ProxyHttp.Reply twice = ProxyHttp.post(base + "/reward", key, "{\"reward\": 1}");
        assertThat(twice.status()).isIn(404, 409);

        EpisodeResult r = episode.get(30, TimeUnit.SECONDS);
        assertThat(((EpisodeResult.Interactions) r).byId().values())
                .extracting(Interaction::reward)
                .containsExactly(0.5, 0.0);
    }

    @Test
    void aSecondRewardIsRefusedWith409WhileTheSessionIsOpen() throws Exception {
        start(ScriptedEngine.scripted());
        ProxySession s = proxy.openOnlineSession("9:0", Interaction.ChatTemplateType.HF, Map.of());
        assertThat(ProxyHttp.post(s.baseUrl() + "/reward", s.apiKey(), "{\"reward\": 1}")
                        .status())
                .isEqualTo(200);
        ProxyHttp.Reply twice = ProxyHttp.post(s.baseUrl() + "/reward", s.apiKey(), "{\"reward\": 2}");
        assertThat(twice.status()).isEqualTo(409);
        assertThat(twice.error().get("code").asText()).isEqualTo("reward_already_set");
    }

    @Test
    void anOnlineEpisodeWithoutARewardInTimeIsRejected() throws Exception {
        start(ScriptedEngine.scripted());
        EpisodeResult r = runInBackground(
                        new OnlineAgentWorkflow(proxy, ONLINE.withOnlineTimeout(Duration.ofMillis(300))), Map.of())
                .get(30, TimeUnit.SECONDS);
        assertThat(r)
                .isEqualTo(EpisodeResult.rejected("online session 30:0 got no reward within 0.3 s"
                        + " (rollout.agent.online_timeout); 0 completion(s) recorded"));
        assertThat(proxy.openSessions()).isZero();
    }

    @Test
    void anOnlineEpisodeEndsRejectedWhenTheProxyCloses() throws Exception {
        start(ScriptedEngine.scripted());
        CompletableFuture<EpisodeResult> episode = runInBackground(new OnlineAgentWorkflow(proxy, ONLINE), Map.of());
        BuiltInModel.await("the online session to open", Duration.ofSeconds(30), () -> proxy.openSessions() == 1);
        proxy.close();
        assertThat(episode.get(30, TimeUnit.SECONDS))
                .isEqualTo(EpisodeResult.rejected("online session 30:0 was closed before its reward arrived"));
    }

    @Test
    void claimingNeedsTheAdminKey() throws Exception {
        start(ScriptedEngine.scripted());
        ProxyHttp.Reply r = ProxyHttp.post(proxy.baseUrl() + "/online/claim", "sk-wrong", "{}");
        assertThat(r.status()).isEqualTo(401);
        assertThat(r.error().get("code").asText()).isEqualTo("invalid_api_key");
    }

    @Test
    void claimingWhenNoSessionWaitsAnswers204() throws Exception {
        start(ScriptedEngine.scripted());
        ProxyHttp.Reply r = ProxyHttp.post(proxy.baseUrl() + "/online/claim", "areal-admin-key", "{\"timeout\": 0.1}");
        assertThat(r.status()).isEqualTo(204);
    }

    @Test
    void anAgentSessionTakesNoPostedReward() throws Exception {
        start(ScriptedEngine.scripted());
        ProxySession s = proxy.openSession("9:1", Interaction.ChatTemplateType.HF);
        ProxyHttp.Reply r = ProxyHttp.post(s.baseUrl() + "/reward", s.apiKey(), "{\"reward\": 1}");
        assertThat(r.status()).isEqualTo(400);
        assertThat(r.error().get("code").asText()).isEqualTo("not_online_session");
    }

    // ------------------------------------------------------------ semantics §8 resolution with the proxy's wrapping

    /** An agent class the resolver instantiates. */
    public static final class EchoAgent implements AgentWorkflow {
        public EchoAgent() {}

        @Override
        public Object run(Map<String, Object> data, AgentEnv env) {
            return 1.0;
        }
    }

    @Test
    void anAgentClassResolvesToAProxyAgentWorkflow() throws Exception {
        start(ScriptedEngine.scripted());
        ResolvedWorkflow r =
                AgentWorkflows.resolver(proxy, AgentOptions.defaults()).resolve(EchoAgent.class, null);
        assertThat(r.workflow())
                .isInstanceOfSatisfying(
                        ProxyAgentWorkflow.class, w -> assertThat(w.agent()).isInstanceOf(EchoAgent.class));
        assertThat(r.description()).contains("behind the OpenAI proxy");
    }

    @Test
    void anAgentInstanceAndItsNameResolveBehindTheProxy() throws Exception {
        start(ScriptedEngine.scripted());
        WorkflowResolver resolver = AgentWorkflows.resolver(proxy, AgentOptions.defaults());
        EchoAgent agent = new EchoAgent();
        assertThat(resolver.resolve(agent, Map.of()).workflow())
                .isInstanceOfSatisfying(
                        ProxyAgentWorkflow.class, w -> assertThat(w.agent()).isSameAs(agent));
        assertThat(resolver.resolve(EchoAgent.class.getName(), Map.of()).workflow())
                .isInstanceOf(ProxyAgentWorkflow.class);
    }

    @Test
    void noWorkflowOutsideOnlineModeIsRefused() throws Exception {
        start(ScriptedEngine.scripted());
        WorkflowResolver resolver = AgentWorkflows.resolver(proxy, AgentOptions.defaults());
        assertThatThrownBy(() -> resolver.resolve(null, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("rollout.agent.mode is 'inline', not 'online'");
    }
}
