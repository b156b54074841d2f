package org.rollout.api;

import java.util.Arrays;
import java.util.Objects;

/**
 * What {@link InferenceEngine#score} returns: the log-probability the served model gives each token
 * of a sequence after the tokens before it, as AReaL's {@code compute_logp} uses for reference and
 * teacher logprobs. {@code logprobs[i] = log p(tokens[i + 1] | tokens[0..i])}: one fewer than the
 * tokens (the first token has nothing to be predicted from). Scoring a prompt followed by a
 * completion gives, from index {@code promptLength − 1} on, the completion's logprobs.
 *
 * <p>Immutable: the arrays are copied in and out.
 */
public final class ScoredTokens {
    private final int[] tokens;
    private final float[] logprobs;
    private final int version;

    /**
     * @param tokens the scored sequence, at least 2 tokens
     * @param logprobs {@code tokens.length − 1} values
     * @param version the weight version that computed them
     */
    public ScoredTokens(int[] tokens, float[] logprobs, int version) {
        Objects.requireNonNull(tokens, "tokens");
        Objects.requireNonNull(logprobs, "logprobs");
        if (tokens.length < 2) {
            throw new IllegalArgumentException("scoring needs at least 2 tokens, got " + tokens.length);
        }
        if (logprobs.length != tokens.length - 1) {
            throw new IllegalArgumentException("logprobs has " + logprobs.length + " values for " + tokens.length
                    + " tokens (expected " + (tokens.length - 1) + ")");
        }
        this.tokens = tokens.clone();
        this.logprobs = logprobs.clone();
        this.version = version;
    }

    public int[] tokens() {
        return tokens.clone();
    }

    /** {@code log p(tokens[i + 1] | tokens[0..i])} for {@code i = 0 .. tokens.length − 2}. */
    public float[] logprobs() {
        return logprobs.clone();
    }

    /** The weight version the server computed them with. */
    public int version() {
        return version;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ScoredTokens s
                && version == s.version
                && Arrays.equals(tokens, s.tokens)
                && Arrays.equals(logprobs, s.logprobs);
    }

    @Override
    public int hashCode() {
        return Objects.hash(Arrays.hashCode(tokens), Arrays.hashCode(logprobs), version);
    }

    @Override
    public String toString() {
        return "ScoredTokens{tokens=" + tokens.length + ", version=" + version + "}";
    }
}
