package org.rollout.workflows.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.modelserver.TinyLm;
import org.rollout.modelserver.TinyLmGradient;
import org.rollout.modelserver.TinyLmOptimizer;
import org.rollout.modelserver.TinyLmWeights;
import org.rollout.modelserver.WeightFileException;

/**
 * {@link GrpoTrainer}: the step is compared with the same GRPO/PPO-clip gradient computed here by
 * hand from {@link TinyLm}, then the same Adam step, so what the trainer does is pinned down
 * exactly.
 */
class GrpoTrainerTest {
    private static final double LR = 0.05;
    private static final double EPS = 0.2;
    private static final TinyLmWeights W0 = TinyLmWeights.seeded(3, 0.3, 0.9f);
    private static final int[] PROMPT = {257, 'h', 'i', '\n'};

    @TempDir
    Path dir;

    private GrpoTrainer trainer(int warmup) {
        return new GrpoTrainer(W0, new GrpoTrainer.Config(LR, warmup, EPS, 1.0, dir));
    }

    /** A row of the test: tokens, loss mask, behaviour logprobs and the advantage expected for it. */
    private record Spec(int[] tokens, int[] mask, float[] behaviour, double advantage) {}

    /** Σ over rows and masked positions of A · ratio / N · ∇ log p, clipped positions left out. */
    private static TinyLmGradient expectedGradient(long tokens, Spec... rows) {
        TinyLmGradient g = new TinyLmGradient();
        for (Spec r : rows) {
            if (r.advantage == 0) {
                continue;
            }
            int first = Rows.firstMasked(r.mask);
            double[] current = TinyLm.sequenceLogprobs(W0, r.tokens, first, 1.0);
            double[] scales = new double[current.length];
            for (int k = 0; k < current.length; k++) {
                if (r.mask[first + k] == 1) {
                    double ratio = Math.exp(current[k] - r.behaviour[first + k]);
                    boolean clipped = (r.advantage > 0 && ratio > 1 + EPS) || (r.advantage < 0 && ratio < 1 - EPS);
                    scales[k] = clipped ? 0 : r.advantage * ratio / tokens;
                }
            }
            TinyLm.accumulateGradient(W0, r.tokens, first, scales, 1.0, g);
        }
        return g;
    }

    private static Spec spec(int[] output, double advantage) {
        int[] tokens = Rows.concat(PROMPT, output);
        int[] mask = new int[tokens.length];
        Arrays.fill(mask, PROMPT.length, tokens.length, 1);
        return new Spec(tokens, mask, Rows.behaviour(W0, tokens, mask, 0), advantage);
    }

    private static TensorDict rowOf(Spec s, double reward) {
        return Rows.row(s.tokens, s.mask, s.behaviour, reward);
    }

    @Test
    void anOnPolicyStepIsTheGroupNormalisedPolicyGradientFollowedByAnAdamStep() throws Exception {
        // Rewards 1, 0, 0.5: mean 0.5, unbiased std 0.5, so A = (r − 0.5) / (0.5 + 1e-6).
        double s = 0.5 + GrpoTrainer.STD_EPSILON;
        Spec a = spec(new int[] {'a', 'b', 'c', 258}, 0.5 / s);
        Spec b = spec(new int[] {'x', '!'}, -0.5 / s);
        Spec c = spec(new int[] {'q', 'q', 'q'}, 0.0);
        TrainingBatch batch = Rows.batch(4, Rows.group(11, rowOf(a, 1.0), rowOf(b, 0.0), rowOf(c, 0.5)));
        GrpoTrainer trainer = trainer(0);

        StepReport report = trainer.step(batch);

        TinyLmGradient expected = expectedGradient(9, a, b, c);
        TinyLmWeights expectedWeights = TinyLmOptimizer.adam(LR).step(W0, expected);
        assertThat(report.gradientNorm()).isCloseTo(expected.norm(), within(1e-12));
        assertThat(trainer.weights().biasArray()).containsExactly(expectedWeights.biasArray());
        assertThat(trainer.weights().bigramArray()).containsExactly(expectedWeights.bigramArray());
        assertThat(trainer.weights().contextArray()).containsExactly(expectedWeights.contextArray());
        assertThat(report.tokens()).isEqualTo(9);
        assertThat(report.rows()).isEqualTo(3);
        assertThat(report.groups()).isEqualTo(1);
        assertThat(report.batchId()).isEqualTo(4);
        assertThat(report.meanReward()).isCloseTo(0.5, within(1e-9));
        assertThat(report.groupRewardStd()).containsExactly(0.5);
        assertThat(report.clipFraction()).isZero();
    }

    @Test
    void theStepRaisesTheLikelihoodOfTheBetterSampleAndLowersTheWorse() throws Exception {
        Spec good = spec(new int[] {'y', 'e', 's'}, 0);
        Spec bad = spec(new int[] {'n', 'o', '!'}, 0);
        GrpoTrainer trainer = trainer(0);

        trainer.step(Rows.batch(1, Rows.group(1, rowOf(good, 1.0), rowOf(bad, 0.0))));

        assertThat(sum(TinyLm.sequenceLogprobs(trainer.weights(), good.tokens, PROMPT.length, 1.0)))
                .isGreaterThan(sum(TinyLm.sequenceLogprobs(W0, good.tokens, PROMPT.length, 1.0)));
        assertThat(sum(TinyLm.sequenceLogprobs(trainer.weights(), bad.tokens, PROMPT.length, 1.0)))
                .isLessThan(sum(TinyLm.sequenceLogprobs(W0, bad.tokens, PROMPT.length, 1.0)));
    }

    @Test
    void advantagesAreNormalisedWithinEachGroupNeverAcrossGroups() throws Exception {
        Spec a = spec(new int[] {'a', 'b'}, 0);
        Spec b = spec(new int[] {'c', 'd'}, 0);
        Spec c = spec(new int[] {'e', 'f'}, 0);
        Spec d = spec(new int[] {'g', 'h'}, 0);
        GrpoTrainer shifted = trainer(0);
        GrpoTrainer unshifted = new GrpoTrainer(W0, new GrpoTrainer.Config(LR, 0, EPS, 1.0, dir.resolve("u")));

        StepReport r1 = shifted.step(Rows.batch(
                1, Rows.group(1, rowOf(a, 0.0), rowOf(b, 1.0)), Rows.group(2, rowOf(c, 10.0), rowOf(d, 11.0))));
        StepReport r2 = unshifted.step(Rows.batch(
                1, Rows.group(1, rowOf(a, 0.0), rowOf(b, 1.0)), Rows.group(2, rowOf(c, 0.0), rowOf(d, 1.0))));

        assertThat(r1.gradientNorm()).isEqualTo(r2.gradientNorm());
        assertThat(shifted.weights().contextArray())
                .containsExactly(unshifted.weights().contextArray());
        assertThat(r1.meanReward()).isEqualTo(5.5);
    }

    @Test
    void aGroupWhoseRewardsAreEqualOrThatHasOneRowTeachesNothing() throws Exception {
        Spec a = spec(new int[] {'a'}, 0);
        Spec b = spec(new int[] {'b'}, 0);
        GrpoTrainer trainer = trainer(0);

        StepReport report =
                trainer.step(Rows.batch(1, Rows.group(1, rowOf(a, 0.6), rowOf(b, 0.6)), Rows.group(2, rowOf(a, 1.0))));

        assertThat(report.gradientNorm()).isZero();
        assertThat(report.groupRewardStd()).containsExactly(0.0, 0.0);
        assertThat(trainer.weights().contextArray()).containsExactly(W0.contextArray());
        assertThat(trainer.weights().biasArray()).containsExactly(W0.biasArray());
    }

    @Test
    void tokensWhoseRatioLeavesTheClipRangeInTheAdvantagesDirectionGetNoGradient() throws Exception {
        // Both rows were sampled by a policy that found their tokens e times less likely: ratio ≈ 2.7.
        // PPO-clip stops the positive row (ratio > 1 + ε) and keeps the negative one.
        double s = Math.sqrt(0.5) + GrpoTrainer.STD_EPSILON;
        Spec up = shiftedSpec(new int[] {'a', 'b', 'c'}, 0.5 / s);
        Spec down = shiftedSpec(new int[] {'x', 'y'}, -0.5 / s);
        GrpoTrainer trainer = trainer(0);

        StepReport report = trainer.step(Rows.batch(1, Rows.group(1, rowOf(up, 1.0), rowOf(down, 0.0))));

        assertThat(report.clipFraction()).isEqualTo(3.0 / 5.0);
        assertThat(report.gradientNorm())
                .isCloseTo(expectedGradient(5, up, down).norm(), within(1e-12));
        assertThat(report.gradientNorm()).isPositive();
    }

    private static Spec shiftedSpec(int[] output, double advantage) {
        int[] tokens = Rows.concat(PROMPT, output);
        int[] mask = new int[tokens.length];
        Arrays.fill(mask, PROMPT.length, tokens.length, 1);
        return new Spec(tokens, mask, Rows.behaviour(W0, tokens, mask, -1.0), advantage);
    }

    @Test
    void aMultiTurnRowIsTrainedOnItsGeneratedSpansOnly() throws Exception {
        // prompt | out0 (turn 0) | feedback (context) | out1 (turn 1)
        int[] tokens = {257, 'h', 'i', '\n', 'a', 'b', 258, 257, 'n', 'o', '\n', 'c', 258};
        int[] mask = {0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1};
        double s = Math.sqrt(0.5) + GrpoTrainer.STD_EPSILON;
        Spec multi = new Spec(tokens, mask, Rows.behaviour(W0, tokens, mask, 0), 0.5 / s);
        Spec single = spec(new int[] {'z'}, -0.5 / s);
        GrpoTrainer trainer = trainer(0);

        StepReport report = trainer.step(
                Rows.batch(1, Rows.group(1, Rows.row(tokens, mask, multi.behaviour, 1.0), rowOf(single, 0.0))));

        assertThat(report.tokens()).isEqualTo(6);
        assertThat(report.gradientNorm())
                .isCloseTo(expectedGradient(6, multi, single).norm(), within(1e-12));
    }

    @Test
    void writesEachStepsWeightsAsTheNextVersion() throws Exception {
        Spec a = spec(new int[] {'a'}, 0);
        Spec b = spec(new int[] {'b'}, 0);
        TrainingBatch batch = Rows.batch(1, Rows.group(1, rowOf(a, 1.0), rowOf(b, 0.0)));
        GrpoTrainer trainer = trainer(0);

        StepReport first = trainer.step(batch);
        StepReport second = trainer.step(batch);

        assertThat(first.version()).isEqualTo(1);
        assertThat(first.weightsPath()).isEqualTo(dir.resolve("v1.rlm"));
        assertThat(second.version()).isEqualTo(2);
        assertThat(second.weightsPath()).isEqualTo(dir.resolve("v2.rlm"));
        assertThat(trainer.version()).isEqualTo(2);
        assertThat(Files.exists(dir.resolve("v1.rlm"))).isTrue();
        assertThat(TinyLmWeights.read(dir.resolve("v2.rlm"))).isEqualTo(trainer.weights());
        assertThat(trainer.weights().version()).isEqualTo(2);
    }

    @Test
    void warmUpScalesTheFirstStepsLearningRate() throws Exception {
        Spec a = spec(new int[] {'a', 'b'}, 0);
        Spec b = spec(new int[] {'c', 'd'}, 0);
        TrainingBatch batch = Rows.batch(1, Rows.group(1, rowOf(a, 1.0), rowOf(b, 0.0)));
        GrpoTrainer warm = new GrpoTrainer(W0, new GrpoTrainer.Config(LR, 4, EPS, 1.0, dir.resolve("warm")));
        GrpoTrainer full = trainer(0);

        warm.step(batch);
        full.step(batch);

        float[] w0 = W0.biasArray();
        float[] warmBias = warm.weights().biasArray();
        float[] fullBias = full.weights().biasArray();
        for (int i = 0; i < w0.length; i++) {
            assertThat((double) warmBias[i] - w0[i]).isCloseTo(0.25 * (fullBias[i] - w0[i]), within(1e-6));
        }
    }

    @Test
    void aRowTrainedFromItsFirstTokenIsRefusedNamingTheTaskAndRow() {
        int[] tokens = {'a', 'b'};
        TensorDict bad = Rows.row(tokens, new int[] {1, 1}, new float[2], 1.0);
        Spec ok = spec(new int[] {'c'}, 0);

        assertThatThrownBy(() -> trainer(0).step(Rows.batch(1, Rows.group(7, bad, rowOf(ok, 0.0)))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("task 7 row 0: loss_mask is 1 at position 0; the model needs at least one prompt token");
    }

    @Test
    void aTokenOutsideTheModelsVocabularyIsRefusedNamingTheTaskAndRow() {
        int[] tokens = {257, 'h', 999};
        TensorDict bad = Rows.row(tokens, new int[] {0, 0, 1}, new float[3], 1.0);
        Spec ok = spec(new int[] {'c'}, 0);

        assertThatThrownBy(() -> trainer(0).step(Rows.batch(1, Rows.group(7, bad, rowOf(ok, 0.0)))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("task 7 row 0: token id 999 at position 2");
    }

    @Test
    void aGroupWithoutRewardsIsRefusedNamingTheTask() {
        Spec a = spec(new int[] {'a'}, 0);
        TensorDict noRewards = rowOf(a, 1.0).without("rewards");

        assertThatThrownBy(() -> trainer(0).step(Rows.batch(1, Rows.group(8, noRewards))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("task 8: the group has no 'rewards' [B] tensor (got none)");
    }

    @Test
    void aNonFiniteRewardIsRefusedNamingTheTaskAndRow() {
        Spec a = spec(new int[] {'a'}, 0);
        Spec b = spec(new int[] {'b'}, 0);

        assertThatThrownBy(() -> trainer(0).step(Rows.batch(1, Rows.group(9, rowOf(a, 1.0), rowOf(b, Double.NaN)))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("task 9 row 1: reward is NaN");
    }

    @Test
    void weightsThatCannotBeWrittenFailTheStepAndLeaveTheTrainerWhereItWas() throws Exception {
        Path notADirectory = Files.writeString(dir.resolve("file"), "x");
        GrpoTrainer trainer = new GrpoTrainer(W0, new GrpoTrainer.Config(LR, 0, EPS, 1.0, notADirectory));
        Spec a = spec(new int[] {'a'}, 0);
        Spec b = spec(new int[] {'b'}, 0);

        assertThatThrownBy(() -> trainer.step(Rows.batch(1, Rows.group(1, rowOf(a, 1.0), rowOf(b, 0.0)))))
                .isInstanceOf(WeightFileException.class)
                .hasMessageContaining(notADirectory.resolve("v1.rlm").toString())
                .hasMessageContaining("cannot create the weights directory");
        assertThat(trainer.version()).isZero();
        assertThat(trainer.weights()).isEqualTo(W0);
    }

    @Test
    void theConfigurationRefusesValuesThatCannotTrain() {
        assertThatThrownBy(() -> new GrpoTrainer.Config(0, 0, EPS, 1, dir))
                .hasMessage("learning_rate must be finite and > 0, got 0.0");
        assertThatThrownBy(() -> new GrpoTrainer.Config(LR, -1, EPS, 1, dir))
                .hasMessage("warmup_steps must be >= 0, got -1");
        assertThatThrownBy(() -> new GrpoTrainer.Config(LR, 0, 0, 1, dir))
                .hasMessage("eps_clip must be finite and > 0, got 0.0");
        assertThatThrownBy(() -> new GrpoTrainer.Config(LR, 0, EPS, -1, dir))
                .hasMessage("temperature must be finite and >= 0, got -1.0");
    }

    private static double sum(double[] xs) {
        return Arrays.stream(xs).sum();
    }
}
