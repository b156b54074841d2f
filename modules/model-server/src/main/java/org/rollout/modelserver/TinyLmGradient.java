package org.rollout.modelserver;

import java.util.Arrays;

/**
 * A gradient buffer with the shape of {@link TinyLmWeights} (b, P, C), in double precision.
 * {@link TinyLm#accumulateGradient} adds into it; {@link TinyLmOptimizer#step} consumes it.
 *
 * <p>Mutable and not thread-safe: give each thread its own buffer and {@link #add(TinyLmGradient)}
 * them together. {@link #clear()} before reusing it for the next batch.
 */
public final class TinyLmGradient {
    private static final int V = TinyLmWeights.VOCAB_SIZE;

    final double[] bias = new double[V];
    final double[] bigram = new double[V * V];
    final double[] context = new double[V * V];

    /** An all-zero gradient. */
    public TinyLmGradient() {}

    /** Resets every entry to zero. */
    public void clear() {
        Arrays.fill(bias, 0);
        Arrays.fill(bigram, 0);
        Arrays.fill(context, 0);
    }

    /** Adds {@code d} (∂J/∂logits at one position) through the context {@code ctx}. */
    void add(DecayedContext ctx, double[] d) {
        int po = ctx.last() * V;
        for (int j = 0; j < V; j++) {
            bias[j] += d[j];
            bigram[po + j] += d[j];
        }
        int n = ctx.presentCount();
        for (int k = 0; k < n; k++) {
            int i = ctx.presentToken(k);
            double hi = ctx.h(i);
            int co = i * V;
            for (int j = 0; j < V; j++) {
                context[co + j] += hi * d[j];
            }
        }
    }

    /** Adds {@code other} entry by entry. */
    public void add(TinyLmGradient other) {
        addInto(bias, other.bias);
        addInto(bigram, other.bigram);
        addInto(context, other.context);
    }

    private static void addInto(double[] a, double[] b) {
        for (int i = 0; i < a.length; i++) {
            a[i] += b[i];
        }
    }

    /** Multiplies every entry by {@code factor} (e.g. 1 / batch size). */
    public void scale(double factor) {
        for (double[] a : new double[][] {bias, bigram, context}) {
            for (int i = 0; i < a.length; i++) {
                a[i] *= factor;
            }
        }
    }

    /** The L2 norm over all entries. */
    public double norm() {
        double sq = 0;
        for (double[] a : new double[][] {bias, bigram, context}) {
            for (double v : a) {
                sq += v * v;
            }
        }
        return Math.sqrt(sq);
    }

    /** ∂J/∂b[next]. */
    public double bias(int next) {
        return bias[next];
    }

    /** ∂J/∂P[prev][next]. */
    public double bigram(int prev, int next) {
        return bigram[prev * V + next];
    }

    /** ∂J/∂C[contextToken][next]. */
    public double context(int contextToken, int next) {
        return context[contextToken * V + next];
    }
}
