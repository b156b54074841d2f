package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class TinyLmTest {
    private static final int V = TinyLmWeights.VOCAB_SIZE;

    /** The architecture written out from scratch, without the incremental context. */
    private static double[] referenceLogits(TinyLmWeights w, int[] ctx) {
        int t = ctx.length - 1;
        double[] hRaw = new double[V];
        for (int k = 0; k <= t; k++) {
            hRaw[ctx[k]] += Math.pow(w.decay(), t - k);
        }
        double norm = 0;
        for (double v : hRaw) {
            norm += v * v;
        }
        norm = Math.sqrt(norm);
        double[] out = new double[V];
        for (int j = 0; j < V; j++) {
            double z = (double) w.bias(j) + w.bigram(ctx[t], j);
            for (int i = 0; i < V; i++) {
                z += hRaw[i] / norm * w.context(i, j);
            }
            out[j] = z;
        }
        return out;
    }

    private static int[] randomTokens(SplittableRandom r, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = r.nextInt(V);
        }
        return t;
    }

    @Test
    void logitsAreBiasPlusBigramPlusContextTableTimesDecayedNormalisedBag() {
        TinyLmWeights w = TinyLmWeights.seeded(21, 0.3, 0.85f);
        int[] ctx = {257, 104, 105, 104, 33, 104, 10, 258, 104};
        double[] got = TinyLm.logits(w, ctx);
        double[] want = referenceLogits(w, ctx);
        for (int j = 0; j < V; j++) {
            assertThat(got[j]).as("logit %d", j).isCloseTo(want[j], within(1e-9));
        }
    }

    @Test
    void sequenceLogprobsAgreeWithNextTokenLogprobsAtEveryPosition() {
        TinyLmWeights w = TinyLmWeights.seeded(4, 0.5, 0.6f);
        int[] tokens = randomTokens(new SplittableRandom(1), 12);
        double[] seq = TinyLm.sequenceLogprobs(w, tokens, 4, 0.7);
        for (int pos = 4; pos < tokens.length; pos++) {
            double[] lp = TinyLm.nextTokenLogprobs(w, java.util.Arrays.copyOf(tokens, pos), 0.7);
            assertThat(seq[pos - 4]).isCloseTo(lp[tokens[pos]], within(1e-12));
        }
    }

    @Test
    void nextTokenLogprobsNormaliseAndGreedyTemperatureMeansUnscaled() {
        TinyLmWeights w = TinyLmWeights.seeded(4, 0.5, 0.6f);
        int[] ctx = {257, 65};
        double total = 0;
        for (double lp : TinyLm.nextTokenLogprobs(w, ctx, 0.5)) {
            total += Math.exp(lp);
        }
        assertThat(total).isCloseTo(1.0, within(1e-12));
        assertThat(TinyLm.nextTokenLogprobs(w, ctx, 0.0)).containsExactly(TinyLm.nextTokenLogprobs(w, ctx, 1.0));
    }

    @Test
    void emptyContextAndOutOfVocabularyTokensAreRejected() {
        TinyLmWeights w = TinyLmWeights.seeded(1);
        assertThatThrownBy(() -> TinyLm.logits(w, new int[0])).hasMessageContaining("the context is empty");
        assertThatThrownBy(() -> TinyLm.logits(w, new int[] {5, 263}))
                .hasMessageContaining("token id 263 at position 1 is outside the vocabulary [0, 263)");
        assertThatThrownBy(() -> TinyLm.sequenceLogprobs(w, new int[] {5, 6}, 0, 1.0))
                .hasMessageContaining("promptLength must be in [1, 2]");
        assertThatThrownBy(() ->
                        TinyLm.accumulateGradient(w, new int[] {5, 6, 7}, 1, new double[1], 1.0, new TinyLmGradient()))
                .hasMessageContaining("scales has 1 entries for 2 generated positions");
    }

    private static double objective(TinyLmWeights w, int[] tokens, int promptLength, double[] scales, double t) {
        double[] lp = TinyLm.sequenceLogprobs(w, tokens, promptLength, t);
        double j = 0;
        for (int i = 0; i < lp.length; i++) {
            j += scales[i] * lp[i];
        }
        return j;
    }

    @ParameterizedTest
    @ValueSource(doubles = {1.0, 0.6})
    void gradientMatchesCentralFiniteDifferences(double temperature) {
        TinyLmWeights w = TinyLmWeights.seeded(8, 0.4, 0.8f);
        SplittableRandom r = new SplittableRandom(99);
        int[] tokens = {257, 117, 115, 101, 114, 10, 72, 105, 33, 258};
        int promptLength = 6;
        double[] scales = new double[tokens.length - promptLength];
        for (int i = 0; i < scales.length; i++) {
            scales[i] = r.nextDouble(-1, 1);
        }
        TinyLmGradient g = new TinyLmGradient();
        double j = TinyLm.accumulateGradient(w, tokens, promptLength, scales, temperature, g);
        assertThat(j).isCloseTo(objective(w, tokens, promptLength, scales, temperature), within(1e-12));

        float[] b = w.biasArray();
        float[] p = w.bigramArray();
        float[] c = w.contextArray();
        int checked = 0;
        for (int trial = 0; trial < 45; trial++) {
            int which = trial % 3;
            int next = trial % 5 == 0 ? tokens[promptLength + r.nextInt(scales.length)] : r.nextInt(V);
            int row = tokens[promptLength - 1 + r.nextInt(scales.length)]; // a previous/context token
            float[] array = which == 0 ? b : which == 1 ? p : c;
            int index = which == 0 ? next : row * V + next;
            double analytic = which == 0 ? g.bias(next) : which == 1 ? g.bigram(row, next) : g.context(row, next);
            float original = array[index];
            float plus = original + 0.01f;
            float minus = original - 0.01f;
            array[index] = plus;
            double jPlus =
                    objective(TinyLmWeights.of(0, w.decay(), b, p, c), tokens, promptLength, scales, temperature);
            array[index] = minus;
            double jMinus =
                    objective(TinyLmWeights.of(0, w.decay(), b, p, c), tokens, promptLength, scales, temperature);
            array[index] = original;
            double numeric = (jPlus - jMinus) / ((double) plus - (double) minus);
            assertThat(analytic)
                    .as("d/d%s[%d] at T=%s", which == 0 ? "b" : which == 1 ? "P" : "C", index, temperature)
                    .isCloseTo(numeric, within(2e-5 + 1e-3 * Math.abs(numeric)));
            checked++;
        }
        assertThat(checked).isEqualTo(45);
        assertThat(g.norm()).isPositive();
    }

    @Test
    void adamStepOnOneContextRaisesTheRewardedTokensLogprob() {
        TinyLmWeights w = TinyLmWeights.seeded(13);
        int[] prompt = {257, 104, 105, 10};
        int rewarded = 'x';
        int[] tokens = {257, 104, 105, 10, rewarded};
        double before = TinyLm.nextTokenLogprobs(w, prompt, 1.0)[rewarded];
        TinyLmGradient g = new TinyLmGradient();
        TinyLm.accumulateGradient(w, tokens, prompt.length, new double[] {1.0}, 1.0, g);
        TinyLmOptimizer.Adam adam = TinyLmOptimizer.adam(0.05, 0.9, 0.999, 1e-8);
        TinyLmWeights after = adam.step(w.withVersion(4), g);
        assertThat(adam.steps()).isEqualTo(1);
        assertThat(after.version()).isEqualTo(4);
        assertThat(TinyLm.nextTokenLogprobs(after, prompt, 1.0)[rewarded]).isGreaterThan(before + 0.1);
    }

    @Test
    void sgdStepWithNegativeScaleLowersTheTokensLogprob() {
        TinyLmWeights w = TinyLmWeights.seeded(13);
        int[] prompt = {257, 104};
        int[] tokens = {257, 104, 'q'};
        double before = TinyLm.nextTokenLogprobs(w, prompt, 1.0)['q'];
        TinyLmGradient g = new TinyLmGradient();
        TinyLm.accumulateGradient(w, tokens, 2, new double[] {-1.0}, 1.0, g);
        TinyLmWeights after = TinyLmOptimizer.sgd(0.5).step(w, g);
        assertThat(TinyLm.nextTokenLogprobs(after, prompt, 1.0)['q']).isLessThan(before - 0.1);
    }

    @Test
    void optimizerHyperParametersAreValidated() {
        assertThatThrownBy(() -> TinyLmOptimizer.sgd(0)).hasMessageContaining("learning_rate must be finite and > 0");
        assertThatThrownBy(() -> TinyLmOptimizer.adam(0.1, 1.0, 0.999, 1e-8))
                .hasMessageContaining("beta1 must be in [0, 1)");
        assertThatThrownBy(() -> TinyLmOptimizer.adam(0.1, 0.9, -0.1, 1e-8))
                .hasMessageContaining("beta2 must be in [0, 1)");
    }

    @Test
    void contextEntriesDecayAndTheNewestTokenDominates() {
        DecayedContext ctx = new DecayedContext(0.5);
        ctx.push(1);
        ctx.push(2);
        ctx.push(2);
        // h_raw = {1: 0.25, 2: 0.5 + 1 = 1.5}
        double norm = Math.sqrt(0.25 * 0.25 + 1.5 * 1.5);
        assertThat(ctx.h(1)).isCloseTo(0.25 / norm, within(1e-15));
        assertThat(ctx.h(2)).isCloseTo(1.5 / norm, within(1e-15));
        assertThat(ctx.last()).isEqualTo(2);
        assertThat(ctx.length()).isEqualTo(3);
        for (int i = 0; i < 200; i++) {
            ctx.push(3);
        }
        assertThat(ctx.presentCount()).as("entries below 1e-30 are dropped").isEqualTo(1);
    }
}
