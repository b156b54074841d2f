package org.rollout.api;

/**
 * What a workflow generates with: token ids in, tokens with logprobs and versions out.
 *
 * <p>{@link #generate} blocks the calling thread (workflows run on virtual threads, so blocking is
 * cheap) until the generation ends with {@code stop}, {@code length} or {@code tool_calls}. Weight
 * updates that interrupt it are invisible except in {@link ModelResponse#outputVersions()}: the
 * engine resumes with the prompt plus the tokens so far and the remaining budget.
 *
 * <p>Cancellation: interrupting the calling thread aborts the request on the server and makes
 * {@code generate} throw {@link InterruptedException} promptly.
 *
 * <p>Thread safety: implementations are shared by every slot of a node and must be thread-safe.
 */
public interface InferenceEngine {

    /**
     * Generates a completion for {@code request}.
     *
     * @throws IllegalArgumentException when {@code n_samples != 1} (issue one call per sample) or
     *     the prompt leaves no token budget (the message names max_tokens, the prompt length and
     *     max_new_tokens)
     * @throws InterruptedException when the calling thread is interrupted; the request is aborted
     * @throws GenerationException when no server could complete the request
     */
    ModelResponse generate(ModelRequest request) throws InterruptedException;

    /** The current weight version; tokens generated now would carry it. Starts at 0. */
    int version();

    /**
     * Scores {@code tokens} with the served weights: the logprob of every token after the first,
     * given the tokens before it, at {@code gconfig}'s temperature (1 when greedy), as AReaL's
     * {@code compute_logp} does for reference and teacher logprobs. Generates nothing.
     *
     * @throws IllegalArgumentException when {@code tokens} has fewer than 2 tokens
     * @throws UnsupportedOperationException when this engine cannot score (the default)
     * @throws InterruptedException when the calling thread is interrupted
     * @throws GenerationException when no server could score them
     */
    default ScoredTokens score(int[] tokens, GenerationConfig gconfig) throws InterruptedException {
        throw new UnsupportedOperationException(getClass().getName() + " does not score tokens");
    }
}
