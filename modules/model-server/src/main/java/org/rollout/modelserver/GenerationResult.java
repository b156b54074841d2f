package org.rollout.modelserver;

/**
 * What one finished generation produced; immutable once built by the scheduler.
 *
 * @param rid the request id
 * @param promptTokens the prompt length
 * @param cachedTokens the prompt tokens found in the prefix cache at admission (their prefill was not
 *     charged); 0 for a request aborted before its prefill
 * @param outputIds every generated token, including a matched stop token
 * @param logprobs one logprob per output token
 * @param finishReason why it ended
 * @param weightVersion the served weight version when it finished (the version of the weights that
 *     produced its last token)
 * @param e2eNanos from submission to completion
 * @param inputLogprobs the prompt's logprobs from position {@code max(1, logprob_start_len)} on, or
 *     null when not asked for
 * @param inputAlternatives vLLM's {@code prompt_logprobs}: the alternatives at prompt positions 1 on,
 *     or null when not asked for
 * @param outputAlternatives vLLM's {@code logprobs: k > 0}: the alternatives at each output token, or
 *     null when not asked for
 */
record GenerationResult(
        String rid,
        int promptTokens,
        int cachedTokens,
        int[] outputIds,
        double[] logprobs,
        FinishReason finishReason,
        int weightVersion,
        long e2eNanos,
        double[] inputLogprobs,
        TopLogprobs.Position[] inputAlternatives,
        TopLogprobs.Position[] outputAlternatives) {}
