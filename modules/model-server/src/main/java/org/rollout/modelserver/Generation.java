package org.rollout.modelserver;

import java.util.Arrays;
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

    Generation(String rid, int[] prompt, SamplingParams params, long seed) {
        this(rid, prompt, params, seed, -1);
    }

    Generation(String rid, int[] prompt, SamplingParams params, long seed, int inputLogprobStart) {
        this(rid, prompt, params, seed, inputLogprobStart, null);
    }

    Generation(String rid, int[] prompt, SamplingParams params, long seed, int inputLogprobStart, LoraAdapter adapter) {
        this.rid = rid;
        this.prompt = prompt.clone();
        this.params = params;
        this.random = new SplittableRandom(seed);
        this.inputLogprobStart = inputLogprobStart;
        this.adapter = adapter;
    }

    /** The LoRA adapter this generation runs with, or null for the base weights. */
    final LoraAdapter adapter;

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
        if (inputLogprobStart >= 0 && prompt.length > 1) {
            inputLogprobs = TinyLm.sequenceLogprobs(w, prompt, Math.max(1, inputLogprobStart), params.temperature());
        } else if (inputLogprobStart >= 0) {
            inputLogprobs = new double[0];
        }
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

    GenerationResult toResult(int weightVersion, long nowNanos) {
        return new GenerationResult(
                rid,
                prompt.length,
                Arrays.copyOf(output, length),
                Arrays.copyOf(logprobs, length),
                finish,
                weightVersion,
                nowNanos - submittedNanos,
                inputLogprobs);
    }
}
