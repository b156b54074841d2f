package org.rollout.modelserver;

import java.util.Arrays;

/**
 * vLLM's logprob alternatives ({@code logprobs: k}, {@code prompt_logprobs: k}): at one position,
 * the token actually there (sampled, or the prompt's own) with its logprob and rank, and the k most
 * likely tokens of the same distribution.
 *
 * <pre>
 *   distribution (V logprobs) ──► order: logprob descending, ties by lower id
 *                                   ├─ top k          → ranks 1..k
 *                                   └─ chosen token   → its 1-based place in that order
 * </pre>
 *
 * <p>As in vLLM, the chosen token is always reported: when it is outside the top k, a position has
 * k + 1 entries (the chosen one ranked below k), else k. Ties are broken by the lower id, so ranks
 * are a strict order and the chosen token's rank agrees with the top k's; vLLM counts the tokens
 * whose logprob is at least the chosen one's instead, which differs only on exact ties.
 *
 * <p>Costs O(V·k) per position; callers compute it only when k &gt; 0 is asked for. Stateless;
 * the {@link Position} values are immutable once built.
 */
final class TopLogprobs {
    /** vLLM's default {@code --max-logprobs}: the largest k a request may ask for. */
    static final int MAX = 20;

    private static final int V = TinyLmWeights.VOCAB_SIZE;

    private TopLogprobs() {}

    /**
     * The alternatives at one position.
     *
     * @param chosen the token at this position
     * @param chosenLogprob its logprob
     * @param chosenRank its 1-based rank in the distribution
     * @param topIds the k most likely tokens, most likely first
     * @param topLogprobs their logprobs, in the same order (non-increasing)
     */
    record Position(int chosen, double chosenLogprob, int chosenRank, int[] topIds, double[] topLogprobs) {
        /** Entries as vLLM lists them: the chosen token, then the top k without it (k or k + 1 in all). */
        int size() {
            return chosenRank <= topIds.length ? topIds.length : topIds.length + 1;
        }

        /** The id of entry {@code i} in vLLM's order. */
        int id(int i) {
            return i == 0 ? chosen : topIds[topIndex(i)];
        }

        /** The logprob of entry {@code i} in vLLM's order. */
        double logprob(int i) {
            return i == 0 ? chosenLogprob : topLogprobs[topIndex(i)];
        }

        /** The rank of entry {@code i} in vLLM's order. */
        int rank(int i) {
            return i == 0 ? chosenRank : topIndex(i) + 1;
        }

        /** Entry {@code i ≥ 1} is the (i−1)th top entry, or the i-th when the chosen one came before it. */
        private int topIndex(int i) {
            if (i < 1 || i >= size()) {
                throw new IndexOutOfBoundsException("entry " + i + " of " + size());
            }
            return chosenRank <= i ? i : i - 1;
        }
    }

    /**
     * The alternatives in {@code logprobs} (V entries, a normalised distribution) at a position holding
     * {@code chosen}.
     *
     * @param k how many top tokens, in [0, {@link #MAX}]
     */
    static Position at(double[] logprobs, int chosen, int k) {
        if (logprobs.length != V) {
            throw new IllegalArgumentException("a distribution has " + V + " logprobs, got " + logprobs.length);
        }
        if (k < 0 || k > MAX) {
            throw new IllegalArgumentException("k must be in [0, " + MAX + "], got " + k);
        }
        if (chosen < 0 || chosen >= V) {
            throw new IllegalArgumentException("chosen token " + chosen + " is outside the vocabulary [0, " + V + ")");
        }
        int[] ids = new int[k];
        int filled = 0;
        for (int j = 0; j < V; j++) {
            if (filled == k && (k == 0 || !before(logprobs, j, ids[k - 1]))) {
                continue;
            }
            int at = filled < k ? filled++ : k - 1;
            while (at > 0 && before(logprobs, j, ids[at - 1])) {
                ids[at] = ids[at - 1];
                at--;
            }
            ids[at] = j;
        }
        double[] values = new double[k];
        for (int i = 0; i < k; i++) {
            values[i] = logprobs[ids[i]];
        }
        int rank = 1;
        for (int j = 0; j < V; j++) {
            if (before(logprobs, j, chosen)) {
                rank++;
            }
        }
        return new Position(chosen, logprobs[chosen], rank, ids, values);
    }

    /**
     * The alternatives at every position {@code from .. tokens.length − 1} of {@code tokens} under
     * {@code w} at temperature {@code temperature}: the prompt's {@code log p(x_t | x_<t)} with the
     * same arithmetic as {@link TinyLm#sequenceLogprobs}, so the chosen logprobs equal its values.
     *
     * @param from at least 1: position 0 has no context to be predicted from
     */
    static Position[] ofSequence(TinyLmWeights w, int[] tokens, int from, double temperature, int k) {
        if (from < 1 || from > tokens.length) {
            throw new IllegalArgumentException("from must be in [1, " + tokens.length + "], got " + from);
        }
        double t = TinyLm.logprobTemperature(temperature);
        DecayedContext ctx = TinyLm.contextOf(w, tokens, from);
        double[] z = new double[V];
        Position[] out = new Position[tokens.length - from];
        for (int pos = from; pos < tokens.length; pos++) {
            TinyLm.logits(w, ctx, z);
            TinyLm.logSoftmaxInPlace(z, t);
            out[pos - from] = at(z, TinyLm.checkToken(tokens[pos], pos), k);
            ctx.push(tokens[pos]);
        }
        return out;
    }

    /** The chosen logprobs of {@code positions}, in order. */
    static double[] chosenLogprobs(Position[] positions) {
        return Arrays.stream(positions).mapToDouble(Position::chosenLogprob).toArray();
    }

    /** Whether token {@code a} comes before token {@code b}: more likely, or as likely with a lower id. */
    private static boolean before(double[] logprobs, int a, int b) {
        return logprobs[a] > logprobs[b] || (logprobs[a] == logprobs[b] && a < b);
    }
}
