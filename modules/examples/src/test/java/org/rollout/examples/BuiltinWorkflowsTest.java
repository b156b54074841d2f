package org.rollout.examples;

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
import org.rollout.examples.demo.LetterReward;
import org.rollout.examples.demo.LetterTask;

/** {@link BuiltinWorkflows}: the names a configuration can use for {@code rollout.workflow}. */
class BuiltinWorkflowsTest {
    private static final ByteLevelTokenizer TOK = ByteLevelTokenizer.INSTANCE;
    private static final GenerationConfig GCONFIG =
            GenerationConfig.builder().maxNewTokens(8).build();

    @Test
    void rlvrIsAnRlvrWorkflowWithTheGivenRewardFunction() throws Exception {
        RolloutWorkflow w = BuiltinWorkflows.create(
                "rlvr", GCONFIG, TOK, Map.of("reward_fn", (RewardFunction) (p, c, pi, ci, d) -> 0.4));
        ScriptedEngine engine = new ScriptedEngine().then(new int[] {'a'}, 0, StopReason.LENGTH);

        TensorDict row = RLVRWorkflowTest.rowOf(w.runEpisode(engine, Map.of("prompt", "hi")));

        assertThat(w).isInstanceOf(RLVRWorkflow.class);
        assertThat(row.float32("rewards").get(0)).isEqualTo(0.4f);
        assertThat(engine.requests().get(0).gconfig().maxNewTokens()).isEqualTo(8);
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
        ScriptedEngine engine = new ScriptedEngine().then(new int[] {'q', 'q', 'x', 'X'}, 0, StopReason.LENGTH);

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
