package org.rollout.workflows;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.TensorDict;
import org.rollout.config.InferenceConfig;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLmWeights;
import org.rollout.workflows.python.PythonRewardException;
import org.rollout.workflows.python.PythonRewardFunction;
import org.rollout.workflows.python.PythonRewardPool;

/**
 * The example Python reward ({@code examples/python/rewards/math_exact.py}) named in an {@code rlvr}
 * workflow's kwargs, against a real built-in model server whose weights make greedy decoding answer
 * "42": the rows' rewards are the Python function's verdicts on what the model generated.
 */
class PythonRewardAgainstModelServerTest {
    private static final String PYTHON = "/usr/bin/python3";
    private static final ByteLevelTokenizer TOK = ByteLevelTokenizer.INSTANCE;
    private static final Duration WAIT = Duration.ofSeconds(60);
    static final Path REWARDS = Path.of(System.getProperty("user.dir"), "..", "..", "examples", "python", "rewards")
            .toAbsolutePath()
            .normalize();

    private ModelServer server;
    private RemoteInferenceEngine engine;

    @BeforeEach
    void start() throws Exception {
        assertThat(REWARDS.resolve("math_exact.py")).exists();
        server = ModelServer.start(ModelServerConfig.defaults().withWeights(answers42()));
        engine = new RemoteInferenceEngine(InferenceConfig.builder()
                .addresses("127.0.0.1:" + server.port())
                .requestTimeout(Duration.ofSeconds(30))
                .build());
        PythonRewardPool.configure(new PythonRewardPool.Settings(PYTHON, REWARDS.toString(), 2));
    }

    @AfterEach
    void stop() {
        PythonRewardPool.closeAll();
        PythonRewardPool.configure(PythonRewardPool.Settings.defaults());
        if (engine != null) {
            engine.close();
        }
        if (server != null) {
            server.close();
        }
    }

    /** Weights under which the only likely path after the generation prompt's newline is "4", "2", end. */
    private static TinyLmWeights answers42() {
        int v = TinyLmWeights.VOCAB_SIZE;
        float[] bigram = new float[v * v];
        bigram['\n' * v + '4'] = 40f;
        bigram['4' * v + '2'] = 40f;
        bigram['2' * v + ByteLevelTokenizer.IM_END] = 40f;
        return TinyLmWeights.of(0, TinyLmWeights.DEFAULT_DECAY, new float[v], bigram, new float[v * v]);
    }

    private static Map<String, Object> item(Object answer) {
        Map<String, Object> item = new java.util.HashMap<>();
        item.put("messages", List.of(Map.of("role", "user", "content", "What is 6 * 7? Put the answer in \\boxed{}.")));
        if (answer != null) {
            item.put("answer", answer);
        }
        return item;
    }

    @Test
    void anRlvrRunScoresWhatTheModelGeneratedWithThePythonReward() throws Exception {
        GenerationConfig g =
                GenerationConfig.builder().maxNewTokens(8).greedy(true).build();
        RolloutWorkflow workflow =
                BuiltinWorkflows.create("rlvr", g, TOK, Map.of("reward_fn", "python:math_exact:reward"));
        List<Object> answers = List.of("42", 42, "41", "#### 42", "42.0", 7);
        List<Double> expected = List.of(1.0, 1.0, 0.0, 1.0, 1.0, 0.0);

        List<Future<TensorDict>> episodes = new ArrayList<>();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (Object answer : answers) {
                episodes.add(threads.submit(() -> RLVRWorkflowTest.rowOf(workflow.runEpisode(engine, item(answer)))));
            }
            for (int i = 0; i < answers.size(); i++) {
                TensorDict row = episodes.get(i).get(WAIT.toSeconds(), TimeUnit.SECONDS);
                int[] ids = row.int32("input_ids").toArray();
                int generated = Arrays.stream(row.int32("loss_mask").toArray()).sum();
                int[] output = Arrays.copyOfRange(ids, ids.length - generated, ids.length);
                assertThat(TOK.decode(output, true)).as("completion").isEqualTo("42");
                assertThat((double) row.float32("rewards").get(0))
                        .as("reward for answer %s", answers.get(i))
                        .isEqualTo(expected.get(i));
            }
        }
        assertThat(server.stats().requestsFinished()).isEqualTo(answers.size());
    }

    @Test
    void multiTurnAsksAgainWhileThePythonRewardIsZero() throws Exception {
        GenerationConfig g =
                GenerationConfig.builder().maxNewTokens(8).greedy(true).build();
        Map<String, Object> kwargs =
                Map.of("reward_fn", "python:math_exact:reward", "max_turns", 3, "turn_discount", 0.5);
        RolloutWorkflow workflow = BuiltinWorkflows.create("multi_turn", g, TOK, kwargs);

        TensorDict right = RLVRWorkflowTest.rowOf(workflow.runEpisode(engine, item("42")));
        assertThat(server.stats().requestsFinished()).isEqualTo(1L);
        assertThat(right.float32("rewards").get(0)).isEqualTo(1f);

        // The model always answers 42: three turns, each scored 0 by the Python reward.
        TensorDict wrong = RLVRWorkflowTest.rowOf(workflow.runEpisode(engine, item("41")));
        assertThat(server.stats().requestsFinished()).isEqualTo(4L);
        assertThat(Arrays.stream(wrong.int32("turn_ids").toArray()).max().orElseThrow())
                .isEqualTo(2);
        assertThat(wrong.float32("rewards").get(0)).isEqualTo(0f);
    }

    @Test
    void anItemWithoutAnAnswerFailsItsEpisodeWithThePythonError() {
        GenerationConfig g =
                GenerationConfig.builder().maxNewTokens(8).greedy(true).build();
        RLVRWorkflow workflow =
                new RLVRWorkflow(Map.of("reward_fn", "python:math_exact:reward", "gconfig", g, "tokenizer", TOK));

        // Four attempts (AReaL's three retries), each raising: the last exception fails the episode.
        assertThatThrownBy(() -> workflow.runEpisode(engine, item(null)))
                .isInstanceOf(PythonRewardException.class)
                .hasMessage("python reward math_exact:reward raised KeyError: \"the data item has no 'answer'\"");
    }

    @Test
    void theExampleRewardReadsBoxedAnswersAndLastNumbers() throws Exception {
        PythonRewardFunction f = PythonRewardFunction.load("python:math_exact:reward", PythonRewardPool.configured());
        record Case(String completion, Object answer, double reward) {}
        List<Case> cases = List.of(
                new Case("so the result is \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}", 1.0),
                new Case("\\boxed{3} first, then \\boxed{5}", "5", 1.0),
                new Case("\\boxed{3} first, then \\boxed{5}", "3", 0.0),
                new Case("The total is 1,000.", 1000, 1.0),
                new Case("7 apples, then 8", "7", 0.0),
                new Case("x = 3.50", "#### 3.5", 1.0),
                new Case("\\boxed{$42$}", 42, 1.0),
                new Case("no number here", "1", 0.0),
                new Case("-2.5 degrees", -2.5, 1.0));
        for (Case c : cases) {
            assertThat(f.reward("p", c.completion(), new int[0], new int[0], Map.of("answer", c.answer())))
                    .as("%s vs %s", c.completion(), c.answer())
                    .isEqualTo(c.reward());
        }
    }
}
