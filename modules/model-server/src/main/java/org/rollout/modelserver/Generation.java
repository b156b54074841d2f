package org.rollout.modelserver;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

/**
 * One request's generation state. Created by a handler thread, then owned by the scheduler thread
 * (every mutable field below is touched only there); the handler only waits on {@link #result}.
 */
final class Generation {
    final String rid;
    final int[] prompt;
    final SamplingParams params;
    final SplittableRandom random;
    final long submittedNanos = System.nanoTime();
    final CompletableFuture<GenerationResult> result = new CompletableFuture<>();

    // Scheduler-thread confined from submission on.
    DecayedContext context;
    int[] output = new int[16];
    double[] logprobs = new double[16];
    int length;
    int[] counts;
    FinishReason finish;
    /** With simulated output lengths: the sequence length (prompt + output) where it ends; else 0. */
    long simulatedEnd;

    /** The first prompt position whose logprob is computed at prefill, or -1 for none. */
    final int inputLogprobStart;
    /** {@code log p(prompt[t] | prompt[<t])} for {@code t = max(1, inputLogprobStart) ..}, set at prefill. */
    double[] inputLogprobs;

    /**
     * vLLM's {@code prompt_logprobs} count: the top alternatives reported at each prompt position
     * (with the prompt token's rank), or -1 for none.
     */
    final int promptAlternatives;
    /** vLLM's {@code logprobs} count: the top alternatives reported at each sampled position; 0 for none. */
    final int sampledAlternatives;
    /** The prompt's alternatives at the positions of {@link #inputLogprobs}, set at prefill; or null. */
    TopLogprobs.Position[] inputAlternatives;
    /** The alternatives at each sampled position while {@code sampledAlternatives > 0}; else null. */
    List<TopLogprobs.Position> outputAlternatives;

    Generation(String rid, int[] prompt, SamplingParams params, long seed) {
        this(rid, prompt, params, seed, -1);
    }

    Generation(String rid, int[] prompt, SamplingParams params, long seed, int inputLogprobStart) {
        this(rid, prompt, params, seed, inputLogprobStart, null);
    }

    Generation(String rid, int[] prompt, SamplingParams params, long seed, int inputLogprobStart, LoraAdapter adapter) {
        this(rid, prompt, params, seed, inputLogprobStart, adapter, -1, 0);
    }

    /**
     * @param promptAlternatives top alternatives per prompt position, or -1 for none; at least 0
     *     requires {@code inputLogprobStart} 0
     * @param sampledAlternatives top alternatives per sampled position, 0 for none
     */
    Generation(
            String rid,
            int[] prompt,
            SamplingParams params,
            long seed,
            int inputLogprobStart,
            LoraAdapter adapter,
            int promptAlternatives,
            int sampledAlternatives) {
        if (promptAlternatives >= 0 && inputLogprobStart != 0) {
            throw new IllegalArgumentException(
                    "prompt alternatives cover the whole prompt: inputLogprobStart must be 0, got "
                            + inputLogprobStart);
        }
        this.rid = rid;
        this.prompt = prompt.clone();
        this.params = params;
        this.random = new SplittableRandom(seed);
        this.inputLogprobStart = inputLogprobStart;
        this.adapter = adapter;
        this.promptAlternatives = promptAlternatives;
        this.sampledAlternatives = sampledAlternatives;
        this.outputAlternatives = sampledAlternatives > 0 ? new ArrayList<>() : null;
    }

    /** The LoRA adapter this generation runs with, or null for the base weights. */
    final LoraAdapter adapter;

    /** The prefix-cache namespace of requests without an adapter (an adapter's is the adapter itself). */
    private static final Object BASE_MODEL_PREFIXES = new Object() {
        @Override
        public String toString() {
            return "base model";
        }
    };

    /** Scheduler-thread confined: the hold on the prefix cache from admission to completion, or null. */
    RadixCache.Lease prefixLease;

    // Scheduler-thread confined: the served weights with the adapter applied, and the weights they came from.
    private TinyLmWeights adaptedFrom;
    private TinyLmWeights adapted;

    /** The weights this generation decodes with under the served {@code w}: {@code w}, or {@code w} with its adapter. */
    TinyLmWeights weightsUnder(TinyLmWeights w) {
        if (adapter == null) {
            return w;
        }
        if (adaptedFrom != w) {
            adapted = adapter.applyTo(w);
            adaptedFrom = w;
        }
        return adapted;
    }

    /**
     * Computes the prompt's logprobs under {@code w} at the request's temperature when they were
     * asked for: what SGLang's prefill reports as {@code input_token_logprobs}.
     */
    void scorePrompt(TinyLmWeights served) {
        TinyLmWeights w = weightsUnder(served);
        if (promptAlternatives >= 0) {
            inputAlternatives = prompt.length > 1
                    ? TopLogprobs.ofSequence(w, prompt, 1, params.temperature(), promptAlternatives)
                    : new TopLogprobs.Position[0];
            inputLogprobs = TopLogprobs.chosenLogprobs(inputAlternatives);
        } else if (inputLogprobStart >= 0 && prompt.length > 1) {
            inputLogprobs = TinyLm.sequenceLogprobs(w, prompt, Math.max(1, inputLogprobStart), params.temperature());
        } else if (inputLogprobStart >= 0) {
            inputLogprobs = new double[0];
        }
    }

    /**
     * Whose prefixes this request may reuse: KV computed under an adapter is that adapter's, so each
     * adapter (a loaded instance: one loaded again under the same name is another) and the base model
     * have their own.
     */
    Object prefixNamespace() {
        return adapter == null ? BASE_MODEL_PREFIXES : adapter;
    }

    /**
     * The most prompt tokens this request may take from the prefix cache, as SGLang's {@code
     * adjust_max_prefix_ids}: the last prompt token is always computed (its logits give the first
     * output token), and so is every position whose logprob is asked for ({@code
     * logprob_start_len}; vLLM's {@code prompt_logprobs} and {@code echo} scoring start at 0).
     */
    int reusablePrefix() {
        int most = prompt.length - 1;
        if (inputLogprobStart >= 0) {
            most = Math.min(most, inputLogprobStart);
        }
        return Math.max(most, 0);
    }

    /**
     * The tokens whose KV a GPU server holds when this request ends, which SGLang inserts into its
     * cache: the prompt and every output token but the last (sampled, never fed back).
     */
    int[] computedSequence() {
        int[] s = Arrays.copyOf(prompt, prompt.length + Math.max(0, length - 1));
        System.arraycopy(output, 0, s, prompt.length, s.length - prompt.length);
        return s;
    }

    /** The prompt tokens found in the prefix cache at admission: 0 before it, or with the cache off. */
    int cachedTokens() {
        return prefixLease == null ? 0 : prefixLease.cachedTokens();
    }

    boolean prefilled() {
        return context != null;
    }

    /** Builds the context from the prompt (the prefill). */
    void prefill(double decay) {
        context = new DecayedContext(decay);
        for (int token : prompt) {
            context.push(token);
        }
        if (params.frequencyPenalty() != 0) {
            counts = new int[TinyLmWeights.VOCAB_SIZE];
        }
    }

    void append(int token, double logprob) {
        if (length == output.length) {
            output = Arrays.copyOf(output, length * 2);
            logprobs = Arrays.copyOf(logprobs, length * 2);
        }
        output[length] = token;
        logprobs[length] = logprob;
        length++;
        context.push(token);
        if (counts != null) {
            counts[token]++;
        }
    }

    /** Records the alternatives at the token {@link #append} just added (only while {@code sampledAlternatives > 0}). */
    void appendAlternatives(TopLogprobs.Position position) {
        outputAlternatives.add(position);
    }

    GenerationResult toResult(int weightVersion, long nowNanos) {
        return new GenerationResult(
                rid,
                prompt.length,
                cachedTokens(),
                Arrays.copyOf(output, length),
                Arrays.copyOf(logprobs, length),
                finish,
                weightVersion,
                nowNanos - submittedNanos,
                inputLogprobs,
                inputAlternatives,
                outputAlternatives == null ? null : outputAlternatives.toArray(TopLogprobs.Position[]::new));
    }
}
