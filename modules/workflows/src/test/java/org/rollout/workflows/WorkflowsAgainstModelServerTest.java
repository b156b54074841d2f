package org.rollout.workflows;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.TensorDict;
import org.rollout.config.InferenceConfig;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLm;
import org.rollout.workflows.demo.LetterReward;
import org.rollout.workflows.demo.LetterTask;

/**
 * The workflows against a real built-in model server on 127.0.0.1 through {@link
 * RemoteInferenceEngine}: the row holds what the model really generated, with the model's own
 * logprobs.
 */
class WorkflowsAgainstModelServerTest {
    private static final ByteLevelTokenizer TOK = ByteLevelTokenizer.INSTANCE;

    private ModelServer server;
    private RemoteInferenceEngine engine;

    @BeforeEach
    void start() throws Exception {
        server = ModelServer.start(ModelServerConfig.defaults().withSeed(11));
        engine = new RemoteInferenceEngine(InferenceConfig.builder()
                .addresses("127.0.0.1:" + server.port())
                .requestTimeout(Duration.ofSeconds(30))
                .build());
    }

    @AfterEach
    void stop() {
        if (engine != null) {
            engine.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void rlvrRecordsTheServersTokensTheirLogprobsAndTheLettersReward() throws Exception {
        GenerationConfig g = GenerationConfig.builder()
                .maxNewTokens(12)
                .temperature(0.8)
                .seed(5L)
                .build();
        RLVRWorkflow workflow = new RLVRWorkflow(new LetterReward(), g, TOK, false);
        Map<String, Object> item = LetterTask.itemFor('k');

        TensorDict row = RLVRWorkflowTest.rowOf(workflow.runEpisode(engine, item));

        int[] ids = row.int32("input_ids").toArray();
        int[] lossMask = row.int32("loss_mask").toArray();
        int promptLength = TOK.encodeChat(messages(item), true).length;
        int generated = ids.length - promptLength;
        assertThat(generated).isBetween(1, 12);
        assertThat(Arrays.stream(lossMask).sum()).isEqualTo(generated);
        assertThat(Arrays.copyOfRange(row.int32("versions").toArray(), promptLength, ids.length))
                .containsOnly(0);
        // The sampling logprobs are the model's own, at the sampling temperature.
        double[] expected = TinyLm.sequenceLogprobs(server.weights(), ids, promptLength, 0.8);
        float[] logprobs = row.float32("logprobs").toArray();
        for (int i = 0; i < generated; i++) {
            assertThat((double) logprobs[promptLength + i]).isCloseTo(expected[i], within(1e-4));
        }
        int[] output = Arrays.copyOfRange(ids, promptLength, ids.length);
        double reward = LetterReward.score(TOK.decode(output, true), 'k');
        assertThat(row.float32("rewards").get(0)).isEqualTo((float) reward);
        boolean endedOnStop = output[output.length - 1] == ByteLevelTokenizer.IM_END
                || output[output.length - 1] == ByteLevelTokenizer.ENDOFTEXT;
        assertThat(row.bool("is_truncated").get(0)).isEqualTo(!endedOnStop);
    }

    @Test
    void multiTurnTalksToTheServerForEveryTurnUntilMaxTurns() throws Exception {
        GenerationConfig g = GenerationConfig.builder().maxNewTokens(6).seed(9L).build();
        MultiTurnWorkflow workflow = new MultiTurnWorkflow((p, c, pi, ci, d) -> 0.0, g, TOK, 3, 0.5);

        TensorDict row = RLVRWorkflowTest.rowOf(workflow.runEpisode(engine, LetterTask.itemFor('a')));

        int[] turns = row.int32("turn_ids").toArray();
        assertThat(Arrays.stream(turns).max().orElseThrow()).isEqualTo(2);
        assertThat(Arrays.stream(turns).filter(t -> t >= 0).count())
                .isEqualTo(Arrays.stream(row.int32("loss_mask").toArray()).sum());
        assertThat(server.stats().requestsFinished()).isEqualTo(3L);
        assertThat(row.float32("rewards").get(0)).isEqualTo(0f);
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> messages(Map<String, Object> item) {
        return (List<Map<String, Object>>) item.get("messages");
    }
}
