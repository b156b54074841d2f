package org.rollout.examples.agents;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.agent.AgentOptions;
import org.rollout.agent.BuiltInModel;
import org.rollout.agent.ExportStyle;
import org.rollout.agent.OpenAIProxy;
import org.rollout.agent.ProxyAgentWorkflow;
import org.rollout.agent.ProxyConfig;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InferenceEngine;
import org.rollout.api.Interaction;
import org.rollout.api.WorkflowContext;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.testengine.ScriptedEngine;

class CalculatorAgentTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Map<String, Object> DATA = Map.of("question", "What is 12*7?", "answer", 84);

    private static EpisodeResult episode(InferenceEngine engine, AgentOptions options, Map<String, Object> kwargs)
            throws Exception {
        try (OpenAIProxy proxy = OpenAIProxy.start(
                ProxyConfig.defaults(),
                engine,
                ByteLevelTokenizer.INSTANCE,
                GenerationConfig.builder().maxTokens(8192).build())) {
            WorkflowContext ctx = WorkflowContext.builder()
                    .taskId(4)
                    .sampleIdx(0)
                    .groupSize(1)
                    .build();
            return WorkflowContext.callWith(
                    ctx,
                    () -> new ProxyAgentWorkflow(proxy, options, new CalculatorAgent(kwargs)).runEpisode(engine, DATA));
        }
    }

    @Test
    void theToolLoopCallsTheCalculatorAndRewardsTheFinalAnswer() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying(
                "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"12*7\"}}\n</tool_call>",
                "The answer is 84.");
        EpisodeResult r = episode(engine, AgentOptions.defaults(), Map.of());

        List<Interaction> turns =
                List.copyOf(((EpisodeResult.Interactions) r).byId().values());
        assertThat(turns).hasSize(2);
        assertThat(turns).extracting(Interaction::reward).containsExactly(1.0, 1.0);
        assertThat(turns.get(0).modelResponse().stopReason().wireName()).isEqualTo("tool_calls");
        assertThat(turns.get(1).parent().id()).isEqualTo(turns.get(0).id());
        Map<String, Object> toolMessage = turns.get(1).messages().get(3);
        assertThat(toolMessage).containsEntry("role", "tool").containsEntry("content", "84");
        String secondPrompt =
                ByteLevelTokenizer.INSTANCE.decode(engine.requests().get(1).inputIds(), false);
        assertThat(secondPrompt).contains("<tool_response>\n84\n</tool_response>");
    }

    @Test
    void concatExportMakesTheToolConversationOneRow() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying(
                "<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"(10+2)*7\"}}</tool_call>",
                "84");
        EpisodeResult r = episode(engine, AgentOptions.defaults().withExportStyle(ExportStyle.CONCAT), Map.of());
        Map<String, Interaction> rows = ((EpisodeResult.Interactions) r).byId();
        assertThat(rows).hasSize(1);
        Interaction leaf = rows.values().iterator().next();
        assertThat(leaf.parent()).isNotNull();
        int[] parentSequence = concat(
                leaf.parent().modelResponse().inputTokens(),
                leaf.parent().modelResponse().outputTokens());
        int[] childInput = leaf.modelResponse().inputTokens();
        assertThat(Arrays.copyOf(childInput, parentSequence.length)).containsExactly(parentSequence);
    }

    @Test
    void theLoopRunsAgainstTheBuiltInModelAndRecordsEveryTurn() throws Exception {
        try (BuiltInModel model = BuiltInModel.seeded()) {
            EpisodeResult r =
                    episode(model.engine, AgentOptions.defaults(), Map.of("max_turns", 3, "max_completion_tokens", 24));
            List<Interaction> turns =
                    List.copyOf(((EpisodeResult.Interactions) r).byId().values());
            // The untrained model rarely calls the tool; whatever it says, the loop ends within max_turns
            // and every completion is recorded with its tokens and a reward of 0 or 1.
            assertThat(turns).hasSizeBetween(1, 3);
            assertThat(turns.getLast().reward()).isIn(0.0, 1.0);
            for (int i = 0; i < turns.size(); i++) {
                Interaction it = turns.get(i);
                assertThat(it.modelResponse().outputLength()).isBetween(1, 24);
                assertThat(it.messages().get(1)).containsEntry("content", "What is 12*7?");
                if (i > 0) {
                    assertThat(it.parent().id()).isEqualTo(turns.get(i - 1).id());
                }
            }
            String prompt = ByteLevelTokenizer.INSTANCE.decode(
                    turns.getFirst().modelResponse().inputTokens(), false);
            assertThat(prompt).contains("<tools>").contains("\"name\": \"calculator\"");
        }
    }

    @Test
    void theCalculatorEvaluatesArithmetic() throws Exception {
        assertThat(Arithmetic.evaluate("12*7")).isEqualTo(84.0);
        assertThat(Arithmetic.evaluate(" -(1 + 2) * 3 / 2 ")).isEqualTo(-4.5);
        assertThat(Arithmetic.format(84.0)).isEqualTo("84");
        assertThat(CalculatorAgent.runTool(JSON.readTree(
                        "{\"name\": \"calculator\", \"arguments\": \"{\\\"expression\\\": \\\"2+2\\\"}\"}")))
                .isEqualTo("4");
    }

    @Test
    void calculatorErrorsAreAnswersTheModelCanRead() throws Exception {
        assertThatThrownBy(() -> Arithmetic.evaluate("1/0")).hasMessage("division by zero at 3");
        assertThatThrownBy(() -> Arithmetic.evaluate("2 +")).hasMessage("expression ends early");
        assertThat(CalculatorAgent.runTool(JSON.readTree(
                        "{\"name\": \"calculator\", \"arguments\": \"{\\\"expression\\\": \\\"(1\\\"}\"}")))
                .isEqualTo("error: missing ')' at 2");
        assertThat(CalculatorAgent.runTool(JSON.readTree("{\"name\": \"search\", \"arguments\": \"{}\"}")))
                .isEqualTo("error: unknown tool 'search'");
    }

    @Test
    void theRewardLooksForTheExpectedNumber() {
        assertThat(CalculatorAgent.reward("It is 84.", 84)).isEqualTo(1.0);
        assertThat(CalculatorAgent.reward("It is 48.", 84)).isEqualTo(0.0);
        assertThat(CalculatorAgent.reward("84", null)).isEqualTo(0.0);
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
