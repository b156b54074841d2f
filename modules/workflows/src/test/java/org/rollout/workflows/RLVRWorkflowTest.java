package org.rollout.workflows;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.workflows.IntArrays.concat;
import static org.rollout.workflows.IntArrays.filled;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.ModelRequest;
import org.rollout.api.RewardFunction;
import org.rollout.api.StopReason;
import org.rollout.api.TensorDict;
import org.rollout.api.WorkflowContext;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.core.Tokenizers;
import org.rollout.testengine.ScriptedEngine;

/** {@link RLVRWorkflow} against a scripted engine: the exact row, the request, the reward call. */
class RLVRWorkflowTest {
    private static final ByteLevelTokenizer TOK = ByteLevelTokenizer.INSTANCE;
    private static final GenerationConfig GCONFIG =
            GenerationConfig.builder().nSamples(4).maxNewTokens(16).build();
    private static final List<Map<String, Object>> MESSAGES = List.of(Map.of("role", "user", "content", "Hi"));
    private static final Map<String, Object> DATA = Map.of("messages", MESSAGES, "answer", "ok");
    private static final int[] PROMPT = TOK.encodeChat(MESSAGES, true);
    /** "ok" then EOS. */
    private static final int[] OUTPUT = {'o', 'k', ByteLevelTokenizer.IM_END};

    static TensorDict rowOf(EpisodeResult result) {
        assertThat(result).isInstanceOf(EpisodeResult.Trajectory.class);
        return ((EpisodeResult.Trajectory) result).data();
    }

    @Test
    void returnsOneRowWithThePromptAsContextAndTheOutputAsTurnZero() throws Exception {
        ScriptedEngine engine = ScriptedEngine.scripted().thenOutput(OUTPUT, 3, StopReason.STOP);
        RLVRWorkflow workflow = new RLVRWorkflow((p, c, pi, ci, d) -> 0.75, GCONFIG, TOK, false);

        TensorDict row = rowOf(workflow.runEpisode(engine, DATA));

        int p = PROMPT.length;
        int l = p + OUTPUT.length;
        assertThat(row.keys())
                .containsExactly(
                        "input_ids",
                        "attention_mask",
                        "loss_mask",
                        "logprobs",
                        "versions",
                        "turn_ids",
                        "rewards",
                        "is_truncated");
        assertThat(row.int32("input_ids").shape()).containsExactly(1, l);
        assertThat(row.int32("input_ids").toArray()).containsExactly(concat(PROMPT, OUTPUT));
        assertThat(row.bool("attention_mask").shape()).containsExactly(1, l);
        assertThat(row.bool("attention_mask").countTrue()).isEqualTo(l);
        assertThat(row.int32("loss_mask").toArray()).containsExactly(concat(filled(0, p), filled(1, 3)));
        float[] logprobs = new float[l];
        logprobs[p] = -0.1f;
        logprobs[p + 1] = -0.2f;
        logprobs[p + 2] = -0.3f;
        assertThat(row.float32("logprobs").toArray()).containsExactly(logprobs);
        assertThat(row.int32("versions").toArray()).containsExactly(concat(filled(-1, p), filled(3, 3)));
        assertThat(row.int32("turn_ids").toArray()).containsExactly(concat(filled(-1, p), filled(0, 3)));
        assertThat(row.float32("rewards").shape()).containsExactly(1);
        assertThat(row.float32("rewards").get(0)).isEqualTo(0.75f);
        assertThat(row.bool("is_truncated").shape()).containsExactly(1);
        assertThat(row.bool("is_truncated").get(0)).isFalse();
        assertThat(row.batchSize()).isEqualTo(1);
    }

    @Test
    void marksTheRowTruncatedWhenTheGenerationStoppedOnLength() throws Exception {
        ScriptedEngine engine = ScriptedEngine.scripted().thenOutput(new int[] {'a', 'b'}, 0, StopReason.LENGTH);
        RLVRWorkflow workflow = new RLVRWorkflow((p, c, pi, ci, d) -> 0.0, GCONFIG, TOK, false);

        TensorDict row = rowOf(workflow.runEpisode(engine, DATA));

        assertThat(row.bool("is_truncated").get(0)).isTrue();
    }

    @Test
    void sendsOneSampleWithAFreshRidAndThePadAndEosIdsAppendedToTheStopTokens() throws Exception {
        ScriptedEngine engine =
                ScriptedEngine.scripted().thenOutput(OUTPUT, 0, StopReason.STOP).thenOutput(OUTPUT, 0, StopReason.STOP);
        GenerationConfig g = GCONFIG.toBuilder().stopTokenIds(List.of(7)).build();
        RLVRWorkflow workflow = new RLVRWorkflow((p, c, pi, ci, d) -> 1.0, g, TOK, false);

        workflow.runEpisode(engine, DATA);
        workflow.runEpisode(engine, DATA);

        ModelRequest first = engine.requests().get(0);
        assertThat(first.inputIds()).containsExactly(PROMPT);
        assertThat(first.gconfig().nSamples()).isEqualTo(1);
        assertThat(first.gconfig().maxNewTokens()).isEqualTo(16);
        assertThat(first.gconfig().stopTokenIds())
                .containsExactly(7, ByteLevelTokenizer.ENDOFTEXT, ByteLevelTokenizer.IM_END);
        assertThat(engine.requests().get(1).rid()).isNotEqualTo(first.rid());
    }

    @Test
    void passesThePromptTextWithSpecialTokensTheCompletionWithoutThemTheIdsAndTheData() throws Exception {
        ScriptedEngine engine = ScriptedEngine.scripted().thenOutput(OUTPUT, 0, StopReason.STOP);
        List<Object> seen = new ArrayList<>();
        RLVRWorkflow workflow = new RLVRWorkflow(
                (p, c, pi, ci, d) -> {
                    seen.addAll(List.of(p, c, pi, ci, d));
                    return 1.0;
                },
                GCONFIG,
                TOK,
                false);

        workflow.runEpisode(engine, DATA);

        assertThat(seen.get(0)).isEqualTo("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
        assertThat(seen.get(1)).isEqualTo("ok");
        assertThat((int[]) seen.get(2)).containsExactly(PROMPT);
        assertThat((int[]) seen.get(3)).containsExactly(OUTPUT);
        assertThat(seen.get(4)).isEqualTo(DATA);
    }

    @Test
    void decodesTheCompletionWithSpecialTokensWhenTheGconfigSaysNotToSkipThem() throws Exception {
        ScriptedEngine engine = ScriptedEngine.scripted().thenOutput(OUTPUT, 0, StopReason.STOP);
        AtomicReference<String> completion = new AtomicReference<>();
        GenerationConfig g = GCONFIG.toBuilder().skipSpecialTokens(false).build();
        RLVRWorkflow workflow = new RLVRWorkflow(
                (p, c, pi, ci, d) -> {
                    completion.set(c);
                    return 1.0;
                },
                g,
                TOK,
                false);

        workflow.runEpisode(engine, DATA);

        assertThat(completion.get()).isEqualTo("ok<|im_end|>");
    }

    @Test
    void recordsTheRewardInTheEpisodesStatistics() throws Exception {
        ScriptedEngine engine = ScriptedEngine.scripted().thenOutput(OUTPUT, 0, StopReason.STOP);
        RecordingStats stats = new RecordingStats();
        RLVRWorkflow workflow = new RLVRWorkflow((p, c, pi, ci, d) -> 0.5, GCONFIG, TOK, false);

        WorkflowContext.callWith(
                WorkflowContext.builder().taskId(3).stats(stats).build(), () -> workflow.runEpisode(engine, DATA));

        assertThat(stats.values()).containsExactly(Map.entry("reward", 0.5));
    }

    @Test
    void acceptsAPlainStringPromptUnderPromptAsOneUserMessage() throws Exception {
        ScriptedEngine engine = ScriptedEngine.scripted().thenOutput(OUTPUT, 0, StopReason.STOP);
        RLVRWorkflow workflow = new RLVRWorkflow((p, c, pi, ci, d) -> 1.0, GCONFIG, TOK, false);

        workflow.runEpisode(engine, Map.of("prompt", "Hi"));

        assertThat(engine.requests().get(0).inputIds()).containsExactly(PROMPT);
    }

    @Test
    void readsTheMessagesUnderAConfiguredPromptKey() throws Exception {
        ScriptedEngine engine = ScriptedEngine.scripted().thenOutput(OUTPUT, 0, StopReason.STOP);
        RLVRWorkflow workflow =
                new RLVRWorkflow((p, c, pi, ci, d) -> 1.0, GCONFIG, TOK, false).withPromptKey("conversation");

        workflow.runEpisode(engine, Map.of("conversation", MESSAGES));

        assertThat(engine.requests().get(0).inputIds()).containsExactly(PROMPT);
    }

    @Test
    void refusesAnItemWithoutAPromptNamingTheKeyAndTheTask() {
        RLVRWorkflow workflow = new RLVRWorkflow((p, c, pi, ci, d) -> 1.0, GCONFIG, TOK, false);
        WorkflowContext ctx = WorkflowContext.builder().taskId(12).build();

        assertThatThrownBy(() -> WorkflowContext.callWith(
                        ctx, () -> workflow.runEpisode(ScriptedEngine.scripted(), Map.of("question", "2+2?"))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("task 12")
                .hasMessageContaining("'messages'")
                .hasMessageContaining("'prompt'")
                .hasMessageContaining("[question]");
    }

    @Test
    void refusesAMessageThatIsNotAnObjectNamingItsIndex() {
        RLVRWorkflow workflow = new RLVRWorkflow((p, c, pi, ci, d) -> 1.0, GCONFIG, TOK, false);

        assertThatThrownBy(() -> workflow.runEpisode(ScriptedEngine.scripted(), Map.of("messages", List.of("hello"))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'messages[0]' is not a message object");
    }

    @Test
    void aRewardFunctionFailingOnEveryAttemptFailsTheEpisodeWithItsException() {
        ScriptedEngine engine = ScriptedEngine.scripted().thenOutput(OUTPUT, 0, StopReason.STOP);
        IllegalStateException boom = new IllegalStateException("grader down");
        RLVRWorkflow workflow = new RLVRWorkflow(
                (p, c, pi, ci, d) -> {
                    throw boom;
                },
                GCONFIG,
                TOK,
                false);

        assertThatThrownBy(() -> workflow.runEpisode(engine, DATA)).isSameAs(boom);
    }

    @Test
    void wrapsAPlainRewardFunctionWithAReaLsTimeoutAndRetries() {
        RLVRWorkflow workflow = new RLVRWorkflow((p, c, pi, ci, d) -> 1.0, GCONFIG, TOK, false);

        assertThat(workflow.rewardFunction().timeout()).isEqualTo(TimedRewardFunction.DEFAULT_TIMEOUT);
        assertThat(workflow.rewardFunction().maxRetries()).isEqualTo(3);
    }

    @Test
    void buildsFromKwargsWithARewardFunctionClassName() throws Exception {
        Map<String, Object> kwargs = new HashMap<>();
        kwargs.put("gconfig", GCONFIG);
        kwargs.put("tokenizer", TOK);
        kwargs.put("reward_fn", ConstantReward.class.getName());
        kwargs.put("enable_thinking", false);
        ScriptedEngine engine = ScriptedEngine.scripted().thenOutput(OUTPUT, 0, StopReason.STOP);

        TensorDict row = rowOf(new RLVRWorkflow(kwargs).runEpisode(engine, DATA));

        assertThat(row.float32("rewards").get(0)).isEqualTo(0.25f);
    }

    @Test
    void buildsFromKwargsWithAStaticRewardFunctionField() throws Exception {
        Map<String, Object> kwargs = Map.of(
                "gconfig", GCONFIG, "tokenizer", "builtin", "reward_fn", ConstantReward.class.getName() + "#HALF");
        ScriptedEngine engine = ScriptedEngine.scripted().thenOutput(OUTPUT, 0, StopReason.STOP);

        TensorDict row = rowOf(new RLVRWorkflow(kwargs).runEpisode(engine, DATA));

        assertThat(row.float32("rewards").get(0)).isEqualTo(0.5f);
    }

    @Test
    void kwargsWithoutARewardFunctionAreRefusedNamingTheKey() {
        Map<String, Object> kwargs = Map.of("gconfig", GCONFIG, "tokenizer", TOK);

        assertThatThrownBy(() -> new RLVRWorkflow(kwargs))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'reward_fn'")
                .hasMessageContaining("RewardFunction");
    }

    @Test
    void aRewardFunctionClassThatDoesNotExistIsRefusedNamingIt() {
        Map<String, Object> kwargs = Map.of("gconfig", GCONFIG, "tokenizer", TOK, "reward_fn", "no.such.Reward");

        assertThatThrownBy(() -> new RLVRWorkflow(kwargs))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'reward_fn'")
                .hasMessageContaining("class no.such.Reward not found");
    }

    @Test
    void aRewardFunctionNameOfAnotherTypeIsRefusedNamingTheType() {
        Map<String, Object> kwargs = Map.of("gconfig", GCONFIG, "tokenizer", TOK, "reward_fn", "java.lang.Object");

        assertThatThrownBy(() -> new RLVRWorkflow(kwargs))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("it gives a java.lang.Object");
    }

    @Test
    void aRewardFunctionClassWithoutAPublicNoArgConstructorIsRefusedSayingSo() {
        Map<String, Object> kwargs =
                Map.of("gconfig", GCONFIG, "tokenizer", TOK, "reward_fn", NeedsArgs.class.getName());

        assertThatThrownBy(() -> new RLVRWorkflow(kwargs))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("has no public no-arg constructor");
    }

    @Test
    void aRewardFunctionWhoseConstructorThrowsIsReportedWithTheCause() {
        Map<String, Object> kwargs =
                Map.of("gconfig", GCONFIG, "tokenizer", TOK, "reward_fn", Throwing.class.getName());

        assertThatThrownBy(() -> new RLVRWorkflow(kwargs))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("reward_fn " + Throwing.class.getName() + ": its constructor threw")
                .hasMessageContaining("no grader configured")
                .hasRootCauseMessage("no grader configured");
    }

    @Test
    void aRewardFunctionFieldThatIsMissingOrNotStaticIsRefusedSayingSo() {
        String owner = ConstantReward.class.getName();
        assertThatThrownBy(() ->
                        new RLVRWorkflow(Map.of("gconfig", GCONFIG, "tokenizer", TOK, "reward_fn", owner + "#MISSING")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("has no public field MISSING");
        assertThatThrownBy(() -> new RLVRWorkflow(
                        Map.of("gconfig", GCONFIG, "tokenizer", TOK, "reward_fn", owner + "#instanceField")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("the field is not static");
    }

    @Test
    void anUnknownKwargIsRefusedListingTheKnownOnes() {
        Map<String, Object> kwargs =
                Map.of("gconfig", GCONFIG, "tokenizer", TOK, "reward_fn", new ConstantReward(), "max_turns", 3);

        assertThatThrownBy(() -> new RLVRWorkflow(kwargs))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'max_turns'")
                .hasMessageContaining("not a RLVRWorkflow kwarg")
                .hasMessageContaining("enable_thinking");
    }

    @Test
    void aMissingGconfigOrTokenizerOrAWrongEnableThinkingIsRefusedNamingTheKey() {
        ConstantReward r = new ConstantReward();
        assertThatThrownBy(() -> new RLVRWorkflow(Map.of("tokenizer", TOK, "reward_fn", r)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'gconfig'");
        assertThatThrownBy(() -> new RLVRWorkflow(Map.of("gconfig", GCONFIG, "reward_fn", r)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'tokenizer'");
        assertThatThrownBy(() -> new RLVRWorkflow(
                        Map.of("gconfig", GCONFIG, "tokenizer", TOK, "reward_fn", r, "enable_thinking", "yes")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'enable_thinking'")
                .hasMessageContaining("true or false");
    }

    @Test
    void aTokenizerPathThatDoesNotLoadIsRefusedNamingTheKeyAndThePath() {
        Map<String, Object> kwargs =
                Map.of("gconfig", GCONFIG, "tokenizer", "/no/such/tokenizer", "reward_fn", new ConstantReward());

        assertThatThrownBy(() -> new RLVRWorkflow(kwargs))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'tokenizer'")
                .hasMessageContaining("\"/no/such/tokenizer\"")
                .hasMessageContaining("it does not exist");
    }

    @Test
    void worksWithAHuggingFaceTokenizerAndItsChatTemplate() throws Exception {
        var hf = Tokenizers.load(tinyTokenizerDir().toString());
        int[] prompt = hf.encodeChat(MESSAGES, true);
        int[] output = concat(hf.encode("ok"), new int[] {hf.eosTokenId()});
        ScriptedEngine engine = ScriptedEngine.scripted().thenOutput(output, 1, StopReason.STOP);
        AtomicReference<String> completion = new AtomicReference<>();
        RLVRWorkflow workflow = new RLVRWorkflow(
                (p, c, pi, ci, d) -> {
                    completion.set(c);
                    return 1.0;
                },
                GCONFIG,
                hf,
                true);

        TensorDict row = rowOf(workflow.runEpisode(engine, DATA));

        // The Qwen-style template adds its default system turn; EOS is <|im_end|> (101), pad <|endoftext|> (99).
        assertThat(hf.decode(prompt, false)).startsWith("<|im_start|>system\nYou are a helpful assistant.");
        assertThat(engine.requests().get(0).inputIds()).containsExactly(prompt);
        assertThat(engine.requests().get(0).gconfig().stopTokenIds()).containsExactly(99, 101);
        assertThat(completion.get()).isEqualTo("ok");
        assertThat(row.int32("input_ids").toArray()).containsExactly(concat(prompt, output));
    }

    static Path tinyTokenizerDir() throws Exception {
        return Path.of(RLVRWorkflowTest.class.getResource("/tokenizers/tiny").toURI());
    }

    /** A reward class the kwargs can name. */
    public static final class ConstantReward implements RewardFunction {
        public static final RewardFunction HALF = (p, c, pi, ci, d) -> 0.5;

        public final RewardFunction instanceField = (p, c, pi, ci, d) -> 0.1;

        @Override
        public double reward(String p, String c, int[] pi, int[] ci, Map<String, Object> d) {
            return 0.25;
        }
    }

    /** A reward class without a no-arg constructor. */
    public static final class NeedsArgs implements RewardFunction {
        private final double value;

        public NeedsArgs(double value) {
            this.value = value;
        }

        @Override
        public double reward(String p, String c, int[] pi, int[] ci, Map<String, Object> d) {
            return value;
        }
    }

    /** A reward class whose constructor fails. */
    public static final class Throwing implements RewardFunction {
        public Throwing() {
            throw new IllegalStateException("no grader configured");
        }

        @Override
        public double reward(String p, String c, int[] pi, int[] ci, Map<String, Object> d) {
            return 0;
        }
    }
}
