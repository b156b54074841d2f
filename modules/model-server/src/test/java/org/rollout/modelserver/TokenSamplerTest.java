package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The sampler against the model's exact distribution. Draws are seeded, so every statistical bound
 * below is checked on one fixed sample: the test is deterministic. Per token the observed count must
 * lie within 5·√expected + 5 of the expected count; over all tokens (rare ones pooled) the
 * chi-square statistic must stay below dof + 5·√(2·dof), a p-value far below 1e-5.
 */
class TokenSamplerTest {
    private static final int V = TinyLmWeights.VOCAB_SIZE;
    private static final int DRAWS = 20_000;
    private static final TinyLmWeights WEIGHTS = TinyLmWeights.seeded(17, 1.0, 0.85f);
    private static final int[] CONTEXT = {257, 117, 115, 101, 114, 10, 104, 105};

    private static double[] logits() {
        return TinyLm.logits(WEIGHTS, CONTEXT);
    }

    @ParameterizedTest
    @ValueSource(doubles = {0.0, 1.0, 0.55})
    void theWholeDistributionHoldsEachSampledTokensReportedLogprobExactly(double temperature) {
        double[] logits = logits();
        double[] all = TokenSampler.logprobs(logits, temperature, new double[V]);
        TokenSampler sampler = new TokenSampler();
        SplittableRandom random = new SplittableRandom(5);
        for (int i = 0; i < 300; i++) {
            int topK = i % 2 == 0 ? -1 : 10;
            double topP = i % 3 == 0 ? 0.9 : 1.0;
            int token = sampler.sample(logits, temperature, topK, topP, random);
            assertThat(all[token]).as("draw %d", i).isEqualTo(sampler.lastLogprob());
        }
    }

    @ParameterizedTest
    @ValueSource(doubles = {1.0, 0.55})
    void sampledFrequenciesMatchExpOfTheReportedLogprobs(double temperature) {
        double[] logits = logits();
        double[] expected = TinyLm.nextTokenLogprobs(WEIGHTS, CONTEXT, temperature);
        TokenSampler sampler = new TokenSampler();
        SplittableRandom random = new SplittableRandom(2024);
        int[] counts = new int[V];
        for (int i = 0; i < DRAWS; i++) {
            int token = sampler.sample(logits, temperature, -1, 1.0, random);
            counts[token]++;
            assertThat(sampler.lastLogprob()).isCloseTo(expected[token], within(1e-9));
        }
        double chiSquare = 0;
        int cells = 0;
        double pooledExpected = 0;
        int pooledObserved = 0;
        for (int j = 0; j < V; j++) {
            double p = Math.exp(expected[j]);
            double e = p * DRAWS;
            // 5 standard deviations, plus 5 counts so that rare tokens (Poisson tails) are not judged normal.
            assertThat((double) counts[j])
                    .as("count of token %d (p=%.5f)", j, p)
                    .isCloseTo(e, within(5 * Math.sqrt(e) + 5));
            if (e >= 5) {
                chiSquare += (counts[j] - e) * (counts[j] - e) / e;
                cells++;
            } else {
                pooledExpected += e;
                pooledObserved += counts[j];
            }
        }
        if (pooledExpected > 0) {
            chiSquare += (pooledObserved - pooledExpected) * (pooledObserved - pooledExpected) / pooledExpected;
            cells++;
        }
        int dof = cells - 1;
        // mean dof, sd sqrt(2 dof): 5 sd above the mean is a p-value far below 1e-5.
        assertThat(chiSquare).as("chi-square over %d cells", cells).isLessThan(dof + 5 * Math.sqrt(2.0 * dof));
        assertThat(cells).as("cells with at least 5 expected draws").isGreaterThan(50);
    }

    @Test
    void greedyIsTheArgmaxWithTheUnscaledLogprobAndDrawsNothing() {
        double[] logits = logits();
        int argmax = 0;
        for (int j = 1; j < V; j++) {
            if (logits[j] > logits[argmax]) {
                argmax = j;
            }
        }
        TokenSampler sampler = new TokenSampler();
        SplittableRandom random = new SplittableRandom(5);
        SplittableRandom untouched = new SplittableRandom(5);
        for (double t : new double[] {0.0, 1e-7}) {
            assertThat(sampler.sample(logits, t, -1, 1.0, random)).isEqualTo(argmax);
            assertThat(sampler.lastLogprob())
                    .isCloseTo(TinyLm.nextTokenLogprobs(WEIGHTS, CONTEXT, 1.0)[argmax], within(1e-12));
        }
        assertThat(random.nextLong()).as("greedy consumes no randomness").isEqualTo(untouched.nextLong());
    }

    @Test
    void sameSeedSameSequenceOfTokens() {
        double[] logits = logits();
        int[] a = new int[200];
        int[] b = new int[200];
        TokenSampler sampler = new TokenSampler();
        SplittableRandom ra = new SplittableRandom(77);
        SplittableRandom rb = new SplittableRandom(77);
        for (int i = 0; i < 200; i++) {
            a[i] = sampler.sample(logits, 0.8, 50, 0.9, ra);
            b[i] = sampler.sample(logits, 0.8, 50, 0.9, rb);
        }
        assertThat(a).containsExactly(b);
        assertThat(Arrays.stream(a).distinct().count()).isGreaterThan(10);
    }

    /** Token ids by probability, descending, ties by id: computed here independently of the sampler. */
    private static Integer[] ranked(double[] lp) {
        Integer[] order = new Integer[V];
        for (int j = 0; j < V; j++) {
            order[j] = j;
        }
        Arrays.sort(order, (x, y) -> lp[x] != lp[y] ? Double.compare(lp[y], lp[x]) : Integer.compare(x, y));
        return order;
    }

    @Test
    void topKNeverSamplesOutsideTheKMostLikelyAndRenormalises() {
        double t = 0.9;
        double[] lp = TinyLm.nextTokenLogprobs(WEIGHTS, CONTEXT, t);
        Integer[] order = ranked(lp);
        Set<Integer> kept = new HashSet<>(Arrays.asList(order).subList(0, 10));
        double keptMass = kept.stream().mapToDouble(j -> Math.exp(lp[j])).sum();
        TokenSampler sampler = new TokenSampler();
        SplittableRandom random = new SplittableRandom(31);
        int[] counts = new int[V];
        for (int i = 0; i < DRAWS; i++) {
            int token = sampler.sample(logits(), t, 10, 1.0, random);
            assertThat(kept).contains(token);
            assertThat(sampler.lastLogprob()).as("logprob before truncation").isCloseTo(lp[token], within(1e-9));
            counts[token]++;
        }
        for (int j : kept) {
            double p = Math.exp(lp[j]) / keptMass;
            assertThat((double) counts[j] / DRAWS).isCloseTo(p, within(5 * Math.sqrt(p * (1 - p) / DRAWS) + 1e-4));
        }
    }

    @Test
    void topPKeepsTheSmallestPrefixWhoseMassBeforeEachTokenIsAtMostTopP() {
        double t = 1.0;
        double topP = 0.3;
        double[] lp = TinyLm.nextTokenLogprobs(WEIGHTS, CONTEXT, t);
        Integer[] order = ranked(lp);
        Set<Integer> nucleus = new HashSet<>();
        double before = 0;
        for (int j : order) {
            if (before > topP) {
                break;
            }
            nucleus.add(j);
            before += Math.exp(lp[j]);
        }
        assertThat(nucleus.size()).isBetween(2, V - 1);
        TokenSampler sampler = new TokenSampler();
        SplittableRandom random = new SplittableRandom(32);
        Set<Integer> seen = new HashSet<>();
        for (int i = 0; i < DRAWS; i++) {
            int token = sampler.sample(logits(), t, -1, topP, random);
            assertThat(nucleus).contains(token);
            seen.add(token);
        }
        assertThat(seen).isEqualTo(nucleus);
    }

    @Test
    void topKAndTopPTogetherKeepTheirIntersection() {
        double[] lp = TinyLm.nextTokenLogprobs(WEIGHTS, CONTEXT, 1.0);
        Integer[] order = ranked(lp);
        TokenSampler sampler = new TokenSampler();
        SplittableRandom random = new SplittableRandom(33);
        for (int i = 0; i < 2000; i++) {
            int token = sampler.sample(logits(), 1.0, 3, 0.99, random);
            assertThat(token).isIn(order[0], order[1], order[2]);
        }
    }

    @Test
    void maskedTokensAreNeverSampled() {
        double[] logits = logits();
        TokenSampler sampler = new TokenSampler();
        SplittableRandom random = new SplittableRandom(34);
        logits[258] = Double.NEGATIVE_INFINITY;
        logits[65] = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < DRAWS; i++) {
            assertThat(sampler.sample(logits, 1.0, -1, 1.0, random)).isNotIn(258, 65);
        }
    }
}
