package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;

/** Whatever the logits and parameters, a sampled token is one the truncation kept, with its true logprob. */
class TokenSamplerPropertiesTest {
    private static final int V = TinyLmWeights.VOCAB_SIZE;

    @Property(tries = 300)
    void sampledTokenIsKeptAndItsLogprobIsTheScaledLogSoftmax(
            @ForAll long seed,
            @ForAll @DoubleRange(min = 0.05, max = 3.0) double temperature,
            @ForAll @IntRange(min = -1, max = 300) int topK,
            @ForAll @DoubleRange(min = 0.01, max = 1.0) double topP,
            @ForAll @DoubleRange(min = 0.0, max = 8.0) double spread) {
        SplittableRandom r = new SplittableRandom(seed);
        double[] logits = new double[V];
        for (int j = 0; j < V; j++) {
            logits[j] = r.nextGaussian() * spread;
        }
        int k = topK == 0 ? -1 : topK;
        TokenSampler sampler = new TokenSampler();
        int token = sampler.sample(logits, temperature, k, topP, r);

        double[] lp = logits.clone();
        TinyLm.logSoftmaxInPlace(lp, temperature);
        assertThat(sampler.lastLogprob()).isCloseTo(lp[token], within(1e-9));

        Integer[] order = new Integer[V];
        for (int j = 0; j < V; j++) {
            order[j] = j;
        }
        Arrays.sort(order, (x, y) -> lp[x] != lp[y] ? Double.compare(lp[y], lp[x]) : Integer.compare(x, y));
        int keep = k >= 1 && k < V ? k : V;
        double before = 0;
        int rank = -1;
        for (int i = 0; i < keep; i++) {
            if (topP < 1.0 && before > topP) {
                break;
            }
            if (order[i] == token) {
                rank = i;
                break;
            }
            before += Math.exp(lp[order[i]]);
        }
        assertThat(rank).as("token %d is inside the kept set", token).isGreaterThanOrEqualTo(0);
    }
}
