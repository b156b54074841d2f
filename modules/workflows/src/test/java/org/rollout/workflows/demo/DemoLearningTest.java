package org.rollout.workflows.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.modelserver.TinyLm;
import org.rollout.modelserver.TinyLmWeights;

/**
 * The demo really trains: {@link DemoConfig#defaults()} run for its 40 steps through a real model
 * server (generation over HTTP, weights reloaded every step), with fixed seeds.
 *
 * <p>The Done-when: the mean reward of the last five steps is at least twice that of the
 * first five and at least 0.5. And the model learns to read the prompt, not only to write
 * lowercase letters: the probability of the asked letter as the first token rises from about 0.4%
 * to over 30% on average over the 26 evaluation prompts.
 */
class DemoLearningTest {
    @TempDir
    Path dir;

    @Test
    void theDemoConfigurationLearnsTheLettersTask() throws Exception {
        DemoConfig config = DemoConfig.defaults();
        List<Double> rewards = new ArrayList<>();
        double before;
        double after;
        try (SynchronousDemoLoop loop = new SynchronousDemoLoop(config, dir)) {
            before = meanTargetProbability(loop.trainer().weights());
            for (int step = 0; step < config.steps(); step++) {
                rewards.add(loop.step().meanReward());
            }
            after = meanTargetProbability(loop.trainer().weights());
            assertThat(loop.engine().version()).isEqualTo(config.steps());
            assertThat(loop.server().weightVersion()).isEqualTo(config.steps());
        }

        double first = mean(rewards.subList(0, 5));
        double last = mean(rewards.subList(rewards.size() - 5, rewards.size()));
        StringBuilder curve = new StringBuilder();
        rewards.forEach(r -> curve.append(String.format(Locale.ROOT, "%.3f ", r)));
        System.out.printf(
                Locale.ROOT,
                "demo learning curve (mean reward per step): %s%nfirst five %.3f, last five %.3f;"
                        + " p(target first) %.4f -> %.4f%n",
                curve,
                first,
                last,
                before,
                after);

        assertThat(last).as("last five vs first five, curve: %s", curve).isGreaterThanOrEqualTo(2 * first);
        assertThat(last).as("last five, curve: %s", curve).isGreaterThanOrEqualTo(0.5);
        assertThat(after).as("p(asked letter first), from %s", before).isGreaterThan(0.3);
    }

    /** The model's probability of answering each evaluation prompt with its letter first, averaged. */
    static double meanTargetProbability(TinyLmWeights weights) {
        double sum = 0;
        List<Map<String, Object>> items = LetterTask.evalItems();
        for (Map<String, Object> item : items) {
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> messages = (List<Map<String, Object>>) item.get("messages");
            int[] prompt = ByteLevelTokenizer.INSTANCE.encodeChat(messages, true);
            char target = ((String) item.get(LetterTask.TARGET_KEY)).charAt(0);
            sum += Math.exp(TinyLm.nextTokenLogprobs(weights, prompt, 1.0)[target]);
        }
        return sum / items.size();
    }

    private static double mean(List<Double> xs) {
        return xs.stream().mapToDouble(Double::doubleValue).average().orElseThrow();
    }
}
