package org.rollout.modelserver;

/**
 * The tiny language model's math, in one place: the server samples with it and the demo GRPO
 * trainer trains with it, so what is trained is exactly what is served.
 *
 * <pre>
 *   logits(next | x_1..x_t) = b + P[x_t] + Cᵀ·h(x_1..x_t)
 *   h = h_raw / ‖h_raw‖,   h_raw = Σ_k λ^(t−k) · onehot(x_k)        (λ = weights.decay())
 *   log p_T(next) = log softmax(logits / T)[next]                    (T below 1e-6 counts as 1)
 * </pre>
 *
 * <p>{@code b} learns what to say unconditionally, {@code P} what follows the previous token, and
 * {@code C} what the whole prompt asked for: a token anywhere in the context (recent ones weighing
 * more) shifts every next-token logit through its row of {@code C}. The log-probability is a
 * linear function of the parameters pushed through a log-softmax, so its gradient is exact and
 * cheap (see {@link #accumulateGradient}).
 *
 * <p>Stateless and thread-safe; every method allocates its own working state. Token ids must lie in
 * {@code [0, V)}; a context must hold at least one token (the model has no start-of-sequence
 * state).
 */
public final class TinyLm {
    /** Temperatures below this are greedy, as in SGLang: logprobs are then reported at T = 1. */
    public static final double GREEDY_BELOW = 1e-6;

    private static final int V = TinyLmWeights.VOCAB_SIZE;

    private TinyLm() {}

    /** The temperature the logprobs are computed at: {@code t}, or 1 when {@code t} is greedy. */
    public static double logprobTemperature(double t) {
        return t < GREEDY_BELOW ? 1.0 : t;
    }

    /** Fills {@code out} (length V) with the logits after {@code ctx}. */
    static void logits(TinyLmWeights w, DecayedContext ctx, double[] out) {
        int prev = ctx.last();
        if (prev < 0) {
            throw new IllegalArgumentException("the context is empty: the model needs at least one token");
        }
        float[] b = w.bias;
        float[] p = w.bigram;
        float[] c = w.context;
        int po = prev * V;
        for (int j = 0; j < V; j++) {
            out[j] = (double) b[j] + p[po + j];
        }
        int n = ctx.presentCount();
        for (int k = 0; k < n; k++) {
            int i = ctx.presentToken(k);
            double hi = ctx.h(i);
            int co = i * V;
            for (int j = 0; j < V; j++) {
                out[j] += hi * c[co + j];
            }
        }
    }

    /** The logits of the next token after {@code context} (non-empty). */
    public static double[] logits(TinyLmWeights w, int[] context) {
        DecayedContext ctx = contextOf(w, context, context.length);
        double[] out = new double[V];
        logits(w, ctx, out);
        return out;
    }

    /** {@code log softmax(logits(context) / T)}: the next token's log-probabilities at temperature T. */
    public static double[] nextTokenLogprobs(TinyLmWeights w, int[] context, double temperature) {
        double[] z = logits(w, context);
        logSoftmaxInPlace(z, logprobTemperature(temperature));
        return z;
    }

    /**
     * {@code log p_T(x_t | x_<t)} for every generated position {@code t = promptLength .. length−1}.
     *
     * @param promptLength at least 1: position 0 has no context to be predicted from
     */
    public static double[] sequenceLogprobs(TinyLmWeights w, int[] tokens, int promptLength, double temperature) {
        checkSequence(tokens, promptLength);
        double t = logprobTemperature(temperature);
        DecayedContext ctx = contextOf(w, tokens, promptLength);
        double[] z = new double[V];
        double[] out = new double[tokens.length - promptLength];
        for (int pos = promptLength; pos < tokens.length; pos++) {
            logits(w, ctx, z);
            logSoftmaxInPlace(z, t);
            out[pos - promptLength] = z[tokens[pos]];
            ctx.push(tokens[pos]);
        }
        return out;
    }

    /**
     * Adds to {@code into} the gradient of {@code J = Σ_t scales[t − promptLength] · log p_T(x_t |
     * x_<t)} over the generated positions, and returns J. With {@code d_j = scale · (1[j = x_t] −
     * p_j) / T} at each position: {@code ∂J/∂b_j += d_j}, {@code ∂J/∂P[x_{t−1}][j] += d_j}, {@code
     * ∂J/∂C[i][j] += h_i · d_j}. λ is a fixed hyper-parameter and gets no gradient.
     *
     * <p>For policy gradient, {@code scales} are the per-token advantages (or advantage × importance
     * weight); {@link TinyLmOptimizer} then moves the weights up this gradient.
     *
     * @param scales one per generated position ({@code tokens.length − promptLength} of them)
     */
    public static double accumulateGradient(
            TinyLmWeights w, int[] tokens, int promptLength, double[] scales, double temperature, TinyLmGradient into) {
        checkSequence(tokens, promptLength);
        if (scales.length != tokens.length - promptLength) {
            throw new IllegalArgumentException("scales has " + scales.length + " entries for "
                    + (tokens.length - promptLength) + " generated positions");
        }
        double t = logprobTemperature(temperature);
        DecayedContext ctx = contextOf(w, tokens, promptLength);
        double[] z = new double[V];
        double[] d = new double[V];
        double objective = 0;
        for (int pos = promptLength; pos < tokens.length; pos++) {
            double scale = scales[pos - promptLength];
            int next = tokens[pos];
            logits(w, ctx, z);
            logSoftmaxInPlace(z, t);
            objective += scale * z[next];
            if (scale != 0) {
                for (int j = 0; j < V; j++) {
                    d[j] = -scale * Math.exp(z[j]) / t;
                }
                d[next] += scale / t;
                into.add(ctx, d);
            }
            ctx.push(next);
        }
        return objective;
    }

    /** Replaces {@code z} by {@code log softmax(z / t)}. */
    static void logSoftmaxInPlace(double[] z, double t) {
        double max = Double.NEGATIVE_INFINITY;
        for (int j = 0; j < z.length; j++) {
            z[j] /= t;
            if (z[j] > max) {
                max = z[j];
            }
        }
        double sum = 0;
        for (double v : z) {
            sum += Math.exp(v - max);
        }
        double logZ = max + Math.log(sum);
        for (int j = 0; j < z.length; j++) {
            z[j] -= logZ;
        }
    }

    static DecayedContext contextOf(TinyLmWeights w, int[] tokens, int count) {
        DecayedContext ctx = new DecayedContext(w.decay());
        for (int i = 0; i < count; i++) {
            ctx.push(checkToken(tokens[i], i));
        }
        return ctx;
    }

    private static void checkSequence(int[] tokens, int promptLength) {
        if (promptLength < 1 || promptLength > tokens.length) {
            throw new IllegalArgumentException(
                    "promptLength must be in [1, " + tokens.length + "] (tokens.length), got " + promptLength);
        }
        for (int i = promptLength; i < tokens.length; i++) {
            checkToken(tokens[i], i);
        }
    }

    static int checkToken(int token, int index) {
        if (token < 0 || token >= V) {
            throw new IllegalArgumentException(
                    "token id " + token + " at position " + index + " is outside the vocabulary [0, " + V + ")");
        }
        return token;
    }
}
