package org.rollout.modelserver;

import java.util.Arrays;

/**
 * The model's view of a context x_1..x_t, kept incrementally: the previous token x_t and the
 * exponentially decayed bag {@code h_raw = Σ_k λ^(t−k) onehot(x_k)} with its L2 norm, so that {@code
 * h = h_raw / ‖h_raw‖}. {@link #push} costs O(number of distinct tokens in the bag) ≤ O(V).
 *
 * <p>Entries that decay below {@value #PRUNE_BELOW} are dropped: the newest token's entry is at
 * least 1, so {@code ‖h_raw‖ ≥ 1} and a dropped entry moves no logit by more than {@code 1e-30 ·
 * max|C|}, far below float32 resolution; dropping them keeps long contexts away from subnormal
 * arithmetic (λ^t underflows after a few thousand tokens).
 *
 * <p>Mutable; confined to one thread (the scheduler, or the caller of a {@link TinyLm} method).
 */
final class DecayedContext {
    static final double PRUNE_BELOW = 1e-30;

    private final double decay;
    private final double[] raw = new double[TinyLmWeights.VOCAB_SIZE];
    private final int[] present = new int[TinyLmWeights.VOCAB_SIZE];
    private int presentCount;
    private double norm;
    private int last = -1;
    private int length;

    DecayedContext(double decay) {
        this.decay = decay;
    }

    /** Appends {@code token} as the newest context token. */
    void push(int token) {
        double sq = 0;
        int kept = 0;
        for (int k = 0; k < presentCount; k++) {
            int i = present[k];
            double v = raw[i] * decay;
            if (v < PRUNE_BELOW) {
                raw[i] = 0;
                continue;
            }
            raw[i] = v;
            present[kept++] = i;
        }
        presentCount = kept;
        if (raw[token] == 0) {
            present[presentCount++] = token;
        }
        raw[token] += 1.0;
        for (int k = 0; k < presentCount; k++) {
            double v = raw[present[k]];
            sq += v * v;
        }
        norm = Math.sqrt(sq);
        last = token;
        length++;
    }

    /** The newest token, or −1 when empty. */
    int last() {
        return last;
    }

    /** The number of tokens pushed. */
    int length() {
        return length;
    }

    /** How many distinct tokens have a non-zero entry. */
    int presentCount() {
        return presentCount;
    }

    /** The token of the {@code k}-th non-zero entry, {@code 0 ≤ k < presentCount()}. */
    int presentToken(int k) {
        return present[k];
    }

    /** {@code h[token]}, the normalised entry. */
    double h(int token) {
        return norm == 0 ? 0 : raw[token] / norm;
    }

    /** The normalised vector h as a dense array (for tests and the training path). */
    double[] dense() {
        double[] out = new double[raw.length];
        for (int k = 0; k < presentCount; k++) {
            out[present[k]] = h(present[k]);
        }
        return out;
    }

    @Override
    public String toString() {
        return "DecayedContext{length=" + length + ", last=" + last + ", distinct=" + presentCount + ", h="
                + Arrays.toString(Arrays.copyOf(present, presentCount)) + "}";
    }
}
