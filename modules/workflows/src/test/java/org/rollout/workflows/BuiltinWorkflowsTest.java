package org.rollout.workflows;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.RewardFunction;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.StopReason;
import org.rollout.api.TensorDict;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.testengine.ScriptedEngine;
import org.rollout.workflows.demo.LetterReward;
import org.rollout.workflows.demo.LetterTask;

/** {@link BuiltinWorkflows}: the names a configuration can use for {@code rollout.workflow}. */
class BuiltinWorkflowsTest {
    private static final ByteLevelTokenizer TOK = ByteLevelTokenizer.INSTANCE;
    private static final GenerationConfig GCONFIG =
            GenerationConfig.builder().maxNewTokens(8).build();

    @Test
    void rlvrIsAnRlvrWorkflowWithTheGivenRewardFunction() throws Exception {
        RolloutWorkflow w = BuiltinWorkflows.create(
                "rlvr", GCONFIG, TOK, Map.of("reward_fn", (RewardFunction) (p, c, pi, ci, d) -> 0.4));
        ScriptedEngine engine = ScriptedEngine.scripted().thenOutput(new int[] {'a'}, 0, StopReason.LENGTH);

        TensorDict row = RLVRWorkflowTest.rowOf(w.runEpisode(engine, Map.of("prompt", "hi")));

        assertThat(w).isInstanceOf(RLVRWorkflow.class);
        assertThat(row.float32("rewards").get(0)).isEqualTo(0.4f);
        assertThat(engine.requests().get(0).gconfig().maxNewTokens()).isEqualTo(8);
    }

    @Test
    void theRewardsLimitsComeFromTheKwargsAndBoundASlowReward() throws Exception {
        // A reward that hangs until it is interrupted, as a stuck verifier does.
        RewardFunction slow = (p, c, pi, ci, d) -> {
            new java.util.concurrent.CountDownLatch(1).await();
            return 1.0;
        };
        RolloutWorkflow w = BuiltinWorkflows.create(
                "rlvr", GCONFIG, TOK, Map.of("reward_fn", slow, "reward_timeout", 0.2, "reward_max_retries", 1));
        assertThat(((RLVRWorkflow) w).rewardFunction().timeout()).isEqualTo(java.time.Duration.ofMillis(200));
        assertThat(((RLVRWorkflow) w).rewardFunction().maxRetries()).isEqualTo(1);

        ScriptedEngine engine = ScriptedEngine.scripted().thenOutput(new int[] {'a'}, 0, StopReason.LENGTH);
        long start = System.nanoTime();
        TensorDict row = RLVRWorkflowTest.rowOf(w.runEpisode(engine, Map.of("prompt", "hi")));
        long millis = (System.nanoTime() - start) / 1_000_000;

        // Two attempts of 0.2 s each time out, and the last timeout's reward is 0, as AReaL's.
        assertThat(row.float32("rewards").get(0)).isEqualTo(0.0f);
        assertThat(millis)
                .as("two bounded attempts of a reward that never returns")
                .isLessThan(10_000);

        RolloutWorkflow defaults = BuiltinWorkflows.create("demo", GCONFIG, TOK, Map.of());
        assertThat(((RLVRWorkflow) defaults).rewardFunction().timeout()).isEqualTo(TimedRewardFunction.DEFAULT_TIMEOUT);
        assertThat(((RLVRWorkflow) defaults).rewardFunction().maxRetries())
                .isEqualTo(TimedRewardFunction.DEFAULT_MAX_RETRIES);
        RolloutWorkflow multi = BuiltinWorkflows.create(
                "multi_turn",
                GCONFIG,
                TOK,
                Map.of(
                        "reward_fn", new LetterReward(),
                        "max_turns", 2,
                        "turn_discount", 1.0,
                        "reward_timeout", 60,
                        "reward_max_retries", 0));
        assertThat(multi).isInstanceOf(MultiTurnWorkflow.class);
    }

    @Test
    void badRewardLimitsAreRefusedNamingTheKwarg() {
        RewardFunction r = new LetterReward();
        assertThatThrownBy(() ->
                        BuiltinWorkflows.create("rlvr", GCONFIG, TOK, Map.of("reward_fn", r, "reward_timeout", 0)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'reward_timeout'")
                .hasMessageContaining("seconds > 0");
        assertThatThrownBy(() -> BuiltinWorkflows.create(
                        "rlvr", GCONFIG, TOK, Map.of("reward_fn", r, "reward_max_retries", 1.5)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'reward_max_retries'");
        assertThatThrownBy(() -> BuiltinWorkflows.create(
                        "rlvr",
                        GCONFIG,
                        TOK,
                        Map.of("reward_fn", TimedRewardFunction.withDefaults(r), "reward_max_retries", 2)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'reward_max_retries'")
                .hasMessageContaining("its own limits");
    }

    @Test
    void multiTurnIsAMultiTurnWorkflowWithItsTurnKwargs() {
        RolloutWorkflow w = BuiltinWorkflows.create(
                "multi_turn",
                GCONFIG,
                TOK,
                Map.of("reward_fn", new LetterReward(), "max_turns", 3, "turn_discount", 0.5));

        assertThat(w).isInstanceOfSatisfying(MultiTurnWorkflow.class, m -> {
            assertThat(m.maxTurns()).isEqualTo(3);
            assertThat(m.turnDiscount()).isEqualTo(0.5);
        });
    }

    @Test
    void demoIsRlvrWithTheLettersReward() throws Exception {
        RolloutWorkflow w = BuiltinWorkflows.create("demo", GCONFIG, TOK, Map.of());
        ScriptedEngine engine =
                ScriptedEngine.scripted().thenOutput(new int[] {'q', 'q', 'x', 'X'}, 0, StopReason.LENGTH);

        TensorDict row = RLVRWorkflowTest.rowOf(w.runEpisode(engine, LetterTask.itemFor('q')));

        assertThat(row.float32("rewards").get(0)).isEqualTo((float) ((0.6 * 3 + 0.4 * 2) / 4));
    }

    @Test
    void anUnknownNameIsRefusedUnderRolloutWorkflowListingTheNamesAndThatAClassNameWorks() {
        assertThatThrownBy(() -> BuiltinWorkflows.create("rlhf", GCONFIG, TOK, Map.of()))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'rollout.workflow': \"rlhf\"")
                .hasMessageContaining("one of rlvr, multi_turn, demo")
                .hasMessageContaining("the name of a RolloutWorkflow class");
    }

    @Test
    void rlvrWithoutARewardFunctionIsRefusedNamingTheKwarg() {
        assertThatThrownBy(() -> BuiltinWorkflows.create("rlvr", GCONFIG, TOK, Map.of()))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'reward_fn'");
    }

    @Test
    void gconfigOrTokenizerInTheKwargsIsRefusedBecauseTheConfigurationGivesThem() {
        assertThatThrownBy(() -> BuiltinWorkflows.create("demo", GCONFIG, TOK, Map.of("tokenizer", "builtin")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'workflow_kwargs.tokenizer'")
                .hasMessageContaining("tokenizer_path");
    }

    @Test
    void theDemoRefusesAnotherRewardFunction() {
        assertThatThrownBy(() -> BuiltinWorkflows.create("demo", GCONFIG, TOK, Map.of("reward_fn", new LetterReward())))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'workflow_kwargs.reward_fn'")
                .hasMessageContaining("use rlvr");
    }

    @Test
    void knowsItsNames() {
        assertThat(BuiltinWorkflows.NAMES).containsExactly("rlvr", "multi_turn", "demo");
        assertThat(BuiltinWorkflows.isBuiltin("demo")).isTrue();
        assertThat(BuiltinWorkflows.isBuiltin("org.example.MyWorkflow")).isFalse();
    }
}
