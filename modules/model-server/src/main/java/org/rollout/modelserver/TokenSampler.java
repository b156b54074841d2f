package org.rollout.modelserver;

import java.util.SplittableRandom;

/**
 * Draws one token from logits the way SGLang's sampler does, and reports its logprob the way SGLang
 * reports it.
 *
 * <ul>
 *   <li>Greedy (temperature below 1e-6): the argmax (lowest id on ties); logprob = {@code log
 *       softmax(logits)[token]}.
 *   <li>Otherwise: {@code p = softmax(logits / T)}; top-k keeps the k most likely tokens (ties by
 *       lower id); top-p then keeps a token when the mass of the more likely kept tokens before it
 *       is at most {@code top_p} (so the most likely token is always kept); one uniform draw picks
 *       from the kept tokens in proportion to p. The logprob is {@code log p[token]}: temperature
 *       scaled, before truncation.
 * </ul>
 *
 * <p>The logits passed in already carry the penalties (frequency penalty, min_new_tokens masking
 * with −∞), as SGLang applies them before sampling and before computing logprobs.
 *
 * <p>Holds scratch arrays: one instance per thread (the scheduler owns one). Exactly one {@code
 * nextDouble()} is drawn per non-greedy token and none per greedy token, so a seeded request's
 * draws do not depend on anything else in the batch.
 */
final class TokenSampler {
    private static final int V = TinyLmWeights.VOCAB_SIZE;

    private final double[] probs = new double[V];
    private final int[] order = new int[V];
    private final int[] scratch = new int[V];
    private double lastLogprob;

    /** Samples a token from {@code logits} (not modified). {@link #lastLogprob()} then holds its logprob. */
    int sample(double[] logits, double temperature, int topK, double topP, SplittableRandom random) {
        if (temperature < TinyLm.GREEDY_BELOW) {
            int best = 0;
            for (int j = 1; j < V; j++) {
                if (logits[j] > logits[best]) {
                    best = j;
                }
            }
            lastLogprob = logits[best] - logSumExp(logits, 1.0);
            return best;
        }
        double max = Double.NEGATIVE_INFINITY;
        for (int j = 0; j < V; j++) {
            max = Math.max(max, logits[j] / temperature);
        }
        double sum = 0;
        for (int j = 0; j < V; j++) {
            double e = Math.exp(logits[j] / temperature - max);
            probs[j] = e;
            sum += e;
        }
        double logSum = Math.log(sum);
        for (int j = 0; j < V; j++) {
            probs[j] /= sum;
        }
        int token;
        boolean truncate = (topK >= 1 && topK < V) || topP < 1.0;
        if (!truncate) {
            double u = random.nextDouble();
            double cumulative = 0;
            token = -1;
            int lastPositive = 0;
            for (int j = 0; j < V; j++) {
                if (probs[j] > 0) {
                    lastPositive = j;
                    cumulative += probs[j];
                    if (u < cumulative) {
                        token = j;
                        break;
                    }
                }
            }
            if (token < 0) {
                token = lastPositive; // u beyond the rounded total mass
            }
        } else {
            sortByProbability();
            int keep = topK >= 1 && topK < V ? topK : V;
            if (topP < 1.0) {
                double before = 0;
                for (int r = 0; r < keep; r++) {
                    if (before > topP) {
                        keep = r;
                        break;
                    }
                    before += probs[order[r]];
                }
            }
            double keptMass = 0;
            for (int r = 0; r < keep; r++) {
                keptMass += probs[order[r]];
            }
            double u = random.nextDouble() * keptMass;
            double cumulative = 0;
            token = order[0];
            for (int r = 0; r < keep; r++) {
                int j = order[r];
                if (probs[j] <= 0) {
                    break;
                }
                token = j;
                cumulative += probs[j];
                if (u < cumulative) {
                    break;
                }
            }
        }
        lastLogprob = logits[token] / temperature - max - logSum;
        return token;
    }

    /** The logprob of the token the last {@link #sample} call returned. */
    double lastLogprob() {
        return lastLogprob;
    }

    /**
     * Fills {@code out} with every token's logprob as {@link #sample} reports the sampled one's
     * ({@code log softmax(logits / T)}, at T = 1 when greedy), with the same arithmetic: {@code
     * out[token]} equals {@link #lastLogprob()} exactly. What vLLM's logprob alternatives are drawn
     * from.
     *
     * @return {@code out}
     */
    static double[] logprobs(double[] logits, double temperature, double[] out) {
        if (temperature < TinyLm.GREEDY_BELOW) {
            double logZ = logSumExp(logits, 1.0);
            for (int j = 0; j < V; j++) {
                out[j] = logits[j] - logZ;
            }
            return out;
        }
        double max = Double.NEGATIVE_INFINITY;
        for (int j = 0; j < V; j++) {
            max = Math.max(max, logits[j] / temperature);
        }
        double sum = 0;
        for (int j = 0; j < V; j++) {
            sum += Math.exp(logits[j] / temperature - max);
        }
        double logSum = Math.log(sum);
        for (int j = 0; j < V; j++) {
            out[j] = logits[j] / temperature - max - logSum;
        }
        return out;
    }

    static double logSumExp(double[] logits, double temperature) {
        double max = Double.NEGATIVE_INFINITY;
        for (double l : logits) {
            max = Math.max(max, l / temperature);
        }
        double sum = 0;
        for (double l : logits) {
            sum += Math.exp(l / temperature - max);
        }
        return max + Math.log(sum);
    }

    /** Fills {@code order} with token ids by probability, descending, ties by ascending id (merge sort). */
    private void sortByProbability() {
        for (int j = 0; j < V; j++) {
            order[j] = j;
        }
        for (int width = 1; width < V; width *= 2) {
            for (int lo = 0; lo < V - width; lo += 2 * width) {
                int mid = lo + width;
                int hi = Math.min(lo + 2 * width, V);
                int a = lo;
                int b = mid;
                int k = lo;
                while (a < mid && b < hi) {
                    scratch[k++] = before(order[b], order[a]) ? order[b++] : order[a++];
                }
                while (a < mid) {
                    scratch[k++] = order[a++];
                }
                while (b < hi) {
                    scratch[k++] = order[b++];
                }
                System.arraycopy(scratch, lo, order, lo, hi - lo);
            }
        }
    }

    private boolean before(int x, int y) {
        return probs[x] > probs[y] || (probs[x] == probs[y] && x < y);
    }
}
