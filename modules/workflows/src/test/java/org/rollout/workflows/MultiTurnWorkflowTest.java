package org.rollout.workflows;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.workflows.IntArrays.concat;
import static org.rollout.workflows.IntArrays.filled;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InferenceEngine;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.RewardFunction;
import org.rollout.api.StopReason;
import org.rollout.api.TensorDict;
import org.rollout.api.Tokenizer;
import org.rollout.api.WorkflowContext;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.core.Tokenizers;
import org.rollout.testengine.ScriptedEngine;

/** {@link MultiTurnWorkflow}: retry with feedback, the discounted reward and the row's layout. */
class MultiTurnWorkflowTest {
    private static final ByteLevelTokenizer TOK = ByteLevelTokenizer.INSTANCE;
    private static final int EOS = ByteLevelTokenizer.IM_END;
    private static final GenerationConfig GCONFIG =
            GenerationConfig.builder().maxNewTokens(4).build();
    private static final Map<String, Object> DATA =
            Map.of("messages", List.of(Map.of("role", "user", "content", "2+2?")));
    private static final int[] PROMPT = TOK.encodeChat(List.of(Map.of("role", "user", "content", "2+2?")), true);
    private static final int[] FEEDBACK =
            TOK.encode("<|im_start|>user\n" + MultiTurnWorkflow.FEEDBACK + "<|im_end|>\n<|im_start|>assistant\n");

    /** A reward function answering from a script and remembering the prompts it saw. */
    private static final class ScriptedReward implements RewardFunction {
        final Deque<Double> rewards;
        final List<String> prompts = new ArrayList<>();

        ScriptedReward(Double... rewards) {
            this.rewards = new ArrayDeque<>(List.of(rewards));
        }

        @Override
        public synchronized double reward(String p, String c, int[] pi, int[] ci, Map<String, Object> d) {
            prompts.add(p);
            return rewards.remove();
        }
    }

    @Test
    void theFeedbackTurnIsAUserTurnInTheChatTemplatesFormEndingWithTheGenerationPrompt() {
        MultiTurnWorkflow workflow = new MultiTurnWorkflow(new ScriptedReward(), GCONFIG, TOK, 2, 1.0);

        assertThat(TOK.decode(workflow.feedbackTokenIds(), false))
                .isEqualTo("<|im_start|>user\nYour answer is either wrong or not parsed correctly. Please try to"
                        + " answer it again.<|im_end|>\n<|im_start|>assistant\n");
    }

    @Test
    void stopsAtTheFirstRewardedTurnWithTheSameRowAsRlvr() throws Exception {
        ScriptedEngine engine = ScriptedEngine.scripted().thenOutput(new int[] {'4', EOS}, 2, StopReason.STOP);
        RecordingStats stats = new RecordingStats();
        MultiTurnWorkflow workflow = new MultiTurnWorkflow(new ScriptedReward(1.0), GCONFIG, TOK, 3, 0.5);

        TensorDict row = RLVRWorkflowTest.rowOf(WorkflowContext.callWith(
                WorkflowContext.builder().stats(stats).build(), () -> workflow.runEpisode(engine, DATA)));

        assertThat(engine.requests()).hasSize(1);
        assertThat(row.int32("input_ids").toArray()).containsExactly(concat(PROMPT, new int[] {'4', EOS}));
        assertThat(row.int32("loss_mask").toArray()).containsExactly(concat(filled(0, PROMPT.length), filled(1, 2)));
        assertThat(row.int32("turn_ids").toArray()).containsExactly(concat(filled(-1, PROMPT.length), filled(0, 2)));
        assertThat(row.float32("rewards").get(0)).isEqualTo(1.0f);
        assertThat(stats.values()).containsExactly(Map.entry("reward", 1.0), Map.entry("num_turns", 1.0));
    }

    @Test
    void retriesWithFeedbackUntilRewardedAndDiscountsTheRewardPerExtraTurn() throws Exception {
        int[] out0 = {'5', '5'}; // cut on length: the workflow closes the turn with EOS
        int[] out1 = {'3', EOS};
        int[] out2 = {'4', EOS};
        ScriptedEngine engine = ScriptedEngine.scripted()
                .thenOutput(out0, 1, StopReason.LENGTH)
                .thenOutput(out1, 2, StopReason.STOP)
                .thenOutput(out2, 3, StopReason.STOP);
        ScriptedReward reward = new ScriptedReward(0.0, 0.0, 0.8);
        RecordingStats stats = new RecordingStats();
        MultiTurnWorkflow workflow = new MultiTurnWorkflow(reward, GCONFIG, TOK, 3, 0.5);

        TensorDict row = RLVRWorkflowTest.rowOf(WorkflowContext.callWith(
                WorkflowContext.builder().stats(stats).build(), () -> workflow.runEpisode(engine, DATA)));

        int[] prompt1 = concat(PROMPT, out0, new int[] {EOS}, FEEDBACK);
        int[] prompt2 = concat(prompt1, out1, FEEDBACK);
        assertThat(engine.requests().get(0).inputIds()).containsExactly(PROMPT);
        assertThat(engine.requests().get(1).inputIds()).containsExactly(prompt1);
        assertThat(engine.requests().get(2).inputIds()).containsExactly(prompt2);
        assertThat(reward.prompts.get(2)).isEqualTo(TOK.decode(prompt2, false));

        int p = PROMPT.length;
        int f = FEEDBACK.length;
        assertThat(row.int32("input_ids").toArray()).containsExactly(concat(prompt2, out2));
        assertThat(row.int32("loss_mask").toArray())
                .containsExactly(
                        concat(filled(0, p), filled(1, 2), filled(0, 1 + f), filled(1, 2), filled(0, f), filled(1, 2)));
        assertThat(row.int32("versions").toArray())
                .containsExactly(concat(
                        filled(-1, p), filled(1, 2), filled(-1, 1 + f), filled(2, 2), filled(-1, f), filled(3, 2)));
        assertThat(row.int32("turn_ids").toArray())
                .containsExactly(concat(
                        filled(-1, p), filled(0, 2), filled(-1, 1 + f), filled(1, 2), filled(-1, f), filled(2, 2)));
        float[] logprobs = row.float32("logprobs").toArray();
        assertThat(logprobs[p]).isEqualTo(-0.1f);
        assertThat(logprobs[p + 1]).isEqualTo(-0.2f);
        assertThat(logprobs[p + 2]).isEqualTo(0f);
        assertThat(row.bool("attention_mask").countTrue()).isEqualTo(prompt2.length + 2);
        assertThat(row.float32("rewards").get(0)).isEqualTo((float) (0.8 * 0.5 * 0.5));
        assertThat(row.bool("is_truncated").get(0)).isFalse();
        assertThat(stats.values()).containsExactly(Map.entry("reward", 0.8 * 0.25), Map.entry("num_turns", 3.0));
    }

    @Test
    void endsAfterMaxTurnsWithRewardZeroAndTruncationFromTheLastTurn() throws Exception {
        ScriptedEngine engine = ScriptedEngine.scripted()
                .thenOutput(new int[] {'x', EOS}, 0, StopReason.STOP)
                .thenOutput(new int[] {'y', 'y'}, 0, StopReason.LENGTH);
        RecordingStats stats = new RecordingStats();
        MultiTurnWorkflow workflow = new MultiTurnWorkflow(new ScriptedReward(0.0, 0.0), GCONFIG, TOK, 2, 0.9);

        TensorDict row = RLVRWorkflowTest.rowOf(WorkflowContext.callWith(
                WorkflowContext.builder().stats(stats).build(), () -> workflow.runEpisode(engine, DATA)));

        assertThat(engine.requests()).hasSize(2);
        assertThat(row.float32("rewards").get(0)).isEqualTo(0f);
        assertThat(row.bool("is_truncated").get(0)).isTrue();
        assertThat(stats.values()).containsExactly(Map.entry("reward", 0.0), Map.entry("num_turns", 2.0));
    }

    @Test
    void anEmptyOutputGetsNoEosBeforeTheFeedback() throws Exception {
        ScriptedEngine engine = ScriptedEngine.scripted()
                .thenOutput(new int[0], 0, StopReason.STOP)
                .thenOutput(new int[] {'4', EOS}, 0, StopReason.STOP);
        MultiTurnWorkflow workflow = new MultiTurnWorkflow(new ScriptedReward(0.0, 1.0), GCONFIG, TOK, 2, 1.0);

        workflow.runEpisode(engine, DATA);

        assertThat(engine.requests().get(1).inputIds()).containsExactly(concat(PROMPT, FEEDBACK));
    }

    @Test
    void worksWithAHuggingFaceTokenizerWhoseTemplateAddsASystemTurn() throws Exception {
        Tokenizer hf = Tokenizers.load(RLVRWorkflowTest.tinyTokenizerDir().toString());
        MultiTurnWorkflow workflow = new MultiTurnWorkflow(new ScriptedReward(0.0, 1.0), GCONFIG, hf, 2, 1.0);
        int eos = hf.eosTokenId();
        int[] prompt = hf.encodeChat(List.of(Map.of("role", "user", "content", "2+2?")), true);
        int[] out0 = hf.encode("5");
        ScriptedEngine engine = ScriptedEngine.scripted()
                .thenOutput(out0, 0, StopReason.LENGTH)
                .thenOutput(concat(hf.encode("4"), new int[] {eos}), 0, StopReason.STOP);

        workflow.runEpisode(engine, DATA);

        // The feedback is the user turn alone: the template's default system turn is not repeated.
        assertThat(hf.decode(workflow.feedbackTokenIds(), false))
                .isEqualTo("<|im_start|>user\n" + MultiTurnWorkflow.FEEDBACK + "<|im_end|>\n<|im_start|>assistant\n");
        assertThat(engine.requests().get(1).inputIds())
                .containsExactly(concat(prompt, out0, new int[] {eos}, workflow.feedbackTokenIds()));
    }

    @Test
    void refusesMaxTurnsBelowOneNamingTheKey() {
        assertThatThrownBy(() -> new MultiTurnWorkflow(new ScriptedReward(), GCONFIG, TOK, 0, 1.0))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'max_turns': 0 (allowed: an integer > 0)");
    }

    @Test
    void refusesATurnDiscountOutsideZeroToOneNamingTheKey() {
        for (double bad : new double[] {0.0, -0.5, 1.5, Double.NaN}) {
            assertThatThrownBy(() -> new MultiTurnWorkflow(new ScriptedReward(), GCONFIG, TOK, 2, bad))
                    .isInstanceOf(InvalidConfigException.class)
                    .hasMessage("invalid value for 'turn_discount': " + bad + " (allowed: a number in (0, 1])");
        }
    }

    @Test
    void buildsFromKwargsAndRefusesMissingOrWrongTurnKeys() throws Exception {
        ScriptedReward r = new ScriptedReward(1.0);
        MultiTurnWorkflow workflow = new MultiTurnWorkflow(
                Map.of("gconfig", GCONFIG, "tokenizer", TOK, "reward_fn", r, "max_turns", 4L, "turn_discount", 0.9));
        assertThat(workflow.maxTurns()).isEqualTo(4);
        assertThat(workflow.turnDiscount()).isEqualTo(0.9);

        assertThatThrownBy(() -> new MultiTurnWorkflow(
                        Map.of("gconfig", GCONFIG, "tokenizer", TOK, "reward_fn", r, "turn_discount", 0.9)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'max_turns'")
                .hasMessageContaining("required by MultiTurnWorkflow");
        assertThatThrownBy(() -> new MultiTurnWorkflow(Map.of(
                        "gconfig", GCONFIG, "tokenizer", TOK, "reward_fn", r, "max_turns", 2.5, "turn_discount", 0.9)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'max_turns': 2.5");
        assertThatThrownBy(() -> new MultiTurnWorkflow(Map.of(
                        "gconfig", GCONFIG, "tokenizer", TOK, "reward_fn", r, "max_turns", 2, "turn_discount", "high")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'turn_discount'");
        assertThatThrownBy(() -> new MultiTurnWorkflow(Map.of(
                        "gconfig",
                        GCONFIG,
                        "tokenizer",
                        TOK,
                        "reward_fn",
                        r,
                        "max_turns",
                        2,
                        "turn_discount",
                        0.9,
                        "enable_thinking",
                        true)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("not a MultiTurnWorkflow kwarg");
    }

    @Test
    void refusesAChatTemplateThatDoesNotExtendAConversationByAppending() {
        Tokenizer trailing = new DelegatingTokenizer(TOK) {
            @Override
            public String applyChatTemplate(List<Map<String, Object>> messages, boolean addGenerationPrompt) {
                return TOK.applyChatTemplate(messages, addGenerationPrompt) + "[end of conversation]";
            }
        };

        assertThatThrownBy(() -> new MultiTurnWorkflow(new ScriptedReward(), GCONFIG, trailing, 2, 1.0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("does not render [assistant] as a prefix of [assistant, user]");
    }

    @Test
    void anEngineAnsweringForAnotherPromptIsAnErrorNamingTheTurn() {
        InferenceEngine lying = new InferenceEngine() {
            @Override
            public ModelResponse generate(ModelRequest request) {
                return ModelResponse.of(
                        new int[] {'?'},
                        new int[] {'x'},
                        new float[] {-1f},
                        new int[] {0},
                        StopReason.STOP,
                        Duration.ZERO);
            }

            @Override
            public int version() {
                return 0;
            }
        };
        MultiTurnWorkflow workflow = new MultiTurnWorkflow(new ScriptedReward(0.0, 0.0), GCONFIG, TOK, 2, 1.0);

        assertThatThrownBy(() -> workflow.runEpisode(lying, DATA))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("turn 1: the engine answered for a prompt that does not extend the conversation");
    }

    /** A tokenizer that forwards everything; tests override one method. */
    private static class DelegatingTokenizer implements Tokenizer {
        private final Tokenizer inner;

        DelegatingTokenizer(Tokenizer inner) {
            this.inner = inner;
        }

        @Override
        public int[] encode(String text) {
            return inner.encode(text);
        }

        @Override
        public String decode(int[] ids, boolean skipSpecialTokens) {
            return inner.decode(ids, skipSpecialTokens);
        }

        @Override
        public int eosTokenId() {
            return inner.eosTokenId();
        }

        @Override
        public int padTokenId() {
            return inner.padTokenId();
        }

        @Override
        public int vocabSize() {
            return inner.vocabSize();
        }

        @Override
        public boolean isSpecial(int id) {
            return inner.isSpecial(id);
        }

        @Override
        public String applyChatTemplate(List<Map<String, Object>> messages, boolean addGenerationPrompt) {
            return inner.applyChatTemplate(messages, addGenerationPrompt);
        }
    }
}
