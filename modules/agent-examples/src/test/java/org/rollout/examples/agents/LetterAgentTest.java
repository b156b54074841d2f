package org.rollout.examples.agents;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.rollout.agent.AgentOptions;
import org.rollout.agent.AgentWorkflows;
import org.rollout.agent.BuiltInModel;
import org.rollout.agent.OpenAIProxy;
import org.rollout.agent.ProxyConfig;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.Interaction;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.WorkflowContext;
import org.rollout.core.ByteLevelTokenizer;

class LetterAgentTest {
    private static final Map<String, Object> DATA =
            Map.of("messages", List.of(Map.of("role", "user", "content", "Reply with the letter q.")), "target", "q");

    @Test
    void theRewardWeighsLowercaseAndTargetLettersOverTheFirstEightCharacters() {
        assertThat(LetterAgent.reward("qqqqqqqq", "q")).isCloseTo(1.0, within(1e-12));
        assertThat(LetterAgent.reward("q", "q")).isCloseTo(1.0, within(1e-12));
        assertThat(LetterAgent.reward("abcdefgh", "q")).isCloseTo(0.6, within(1e-12));
        assertThat(LetterAgent.reward("QQQQ", "q")).isCloseTo(0.0, within(1e-12));
        // First 8 of "qqAA    zzz": q q A A ␠ ␠ ␠ ␠ → 2 lowercase, 2 targets.
        assertThat(LetterAgent.reward("qqAA    zzz", "q")).isCloseTo(0.6 * 2 / 8 + 0.4 * 2 / 8, within(1e-12));
        assertThat(LetterAgent.reward("", "q")).isZero();
    }

    @ParameterizedTest(name = "over the {0} API")
    @ValueSource(strings = {"chat", "responses", "messages"})
    void itTrainsTheLetterTaskThroughTheProxyOnTheBuiltInModel(String api) throws Exception {
        try (BuiltInModel model = BuiltInModel.seeded();
                OpenAIProxy proxy = OpenAIProxy.start(
                        ProxyConfig.defaults(),
                        model.engine,
                        ByteLevelTokenizer.INSTANCE,
                        GenerationConfig.defaults())) {
            RolloutWorkflow w = AgentWorkflows.resolver(proxy, AgentOptions.defaults())
                    .resolve(LetterAgent.class.getName(), Map.of("max_completion_tokens", 8, "api", api))
                    .workflow();
            WorkflowContext ctx = WorkflowContext.builder()
                    .taskId(1)
                    .sampleIdx(0)
                    .groupSize(1)
                    .build();
            EpisodeResult r = WorkflowContext.callWith(ctx, () -> w.runEpisode(model.engine, DATA));

            Interaction it =
                    ((EpisodeResult.Interactions) r).byId().values().iterator().next();
            String reply = (String) it.outputMessages().getFirst().get("content");
            assertThat(it.reward()).isCloseTo(LetterAgent.reward(reply == null ? "" : reply, "q"), within(1e-12));
            assertThat(it.modelResponse().outputLength()).isBetween(1, 8);
            assertThat(it.messages()).containsExactly(Map.of("role", "user", "content", "Reply with the letter q."));
            assertThat(it.id())
                    .startsWith(
                            switch (api) {
                                case "responses" -> "resp_";
                                case "messages" -> "msg_";
                                default -> "chatcmpl-";
                            });
        }
    }
}
