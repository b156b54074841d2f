package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.rollout.testing.Gen;
import org.rollout.testing.Property;

/** Whatever the logits and parameters, a sampled token is one the truncation kept, with its true logprob. */
class TokenSamplerPropertiesTest {
    private static final int V = TinyLmWeights.VOCAB_SIZE;

    /** Sampling parameters, and the seed and spread of random Gaussian logits. */
    private record Case(long seed, double temperature, int topK, double topP, double spread) {}

    @Test
    void sampledTokenIsKeptAndItsLogprobIsTheScaledLogSoftmax() {
        Gen<Case> cases = random -> new Case(
                Gen.longs().generate(random),
                Gen.doubles(0.05, 3.0).generate(random),
                Gen.ints(-1, 300).generate(random),
                Gen.doubles(0.01, 1.0).generate(random),
                Gen.doubles(0.0, 8.0).generate(random));
        Property.forAll(
                "sampledTokenIsKeptAndItsLogprobIsTheScaledLogSoftmax",
                300,
                cases,
                c -> sampledTokenIsKept(c.seed(), c.temperature(), c.topK(), c.topP(), c.spread()));
    }

    private static void sampledTokenIsKept(long seed, double temperature, int topK, double topP, double spread) {
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
