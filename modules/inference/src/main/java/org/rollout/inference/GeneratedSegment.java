package org.rollout.inference;

import java.util.Arrays;
import java.util.Objects;
import java.util.OptionalInt;
import org.rollout.api.StopReason;

/**
 * What one generate request returned (AReaL's {@code HttpGenerationResult}): the tokens of this
 * segment, one sampling logprob per token, and the server's finish reason, which may be
 * {@link StopReason#ABORT} (the engine resumes after it).
 *
 * <p>Immutable. To keep parsing allocation-light the parser hands over its working arrays without
 * trimming them: only the first {@link #length()} entries are meaningful, and the accessors never
 * expose the arrays themselves.
 */
public final class GeneratedSegment {
    private final int[] tokens;
    private final float[] logprobs;
    private final int length;
    private final StopReason stopReason;
    private final int serverVersion;
    private final int cachedTokens;

    GeneratedSegment(int[] tokens, float[] logprobs, int length, StopReason stopReason) {
        this(tokens, logprobs, length, stopReason, -1, -1);
    }

    /**
     * @param serverVersion the server's reported weight version, or -1
     * @param cachedTokens the prompt tokens the server reports it found in its prefix cache, or -1
     */
    GeneratedSegment(
            int[] tokens, float[] logprobs, int length, StopReason stopReason, int serverVersion, int cachedTokens) {
        this.serverVersion = serverVersion;
        this.cachedTokens = cachedTokens;
        this.tokens = Objects.requireNonNull(tokens, "tokens");
        this.logprobs = Objects.requireNonNull(logprobs, "logprobs");
        this.stopReason = Objects.requireNonNull(stopReason, "stopReason");
        if (length < 0 || length > tokens.length || length > logprobs.length) {
            throw new IllegalArgumentException("length " + length + " exceeds the arrays");
        }
        this.length = length;
    }

    /** A segment of the given tokens and logprobs (equal lengths); arrays are copied. */
    public static GeneratedSegment of(int[] tokens, float[] logprobs, StopReason stopReason) {
        if (tokens.length != logprobs.length) {
            throw new IllegalArgumentException(tokens.length + " tokens but " + logprobs.length + " logprobs");
        }
        return new GeneratedSegment(tokens.clone(), logprobs.clone(), tokens.length, stopReason);
    }

    /** The number of tokens generated in this segment (0 for an abort before prefill). */
    public int length() {
        return length;
    }

    public int token(int i) {
        return tokens[Objects.checkIndex(i, length)];
    }

    public float logprob(int i) {
        return logprobs[Objects.checkIndex(i, length)];
    }

    /** A copy of the tokens. */
    public int[] tokens() {
        return Arrays.copyOf(tokens, length);
    }

    /** A copy of the logprobs. */
    public float[] logprobs() {
        return Arrays.copyOf(logprobs, length);
    }

    public StopReason stopReason() {
        return stopReason;
    }

    /**
     * The weight version the server reports having generated this segment with (SGLang's {@code
     * meta_info.weight_version}, when it is a non-negative integer), or empty when it reports none.
     */
    public OptionalInt serverVersion() {
        return serverVersion < 0 ? OptionalInt.empty() : OptionalInt.of(serverVersion);
    }

    /**
     * How many of the request's prompt tokens the server found in its prefix cache (SGLang's {@code
     * meta_info.cached_tokens}, vLLM's {@code usage.prompt_tokens_details.cached_tokens}), or empty
     * when it reports none.
     */
    public OptionalInt cachedTokens() {
        return cachedTokens < 0 ? OptionalInt.empty() : OptionalInt.of(cachedTokens);
    }

    /** Copies the tokens into {@code dest} from {@code offset}. */
    void copyTokensTo(int[] dest, int offset) {
        System.arraycopy(tokens, 0, dest, offset, length);
    }

    /** Copies the logprobs into {@code dest} from {@code offset}. */
    void copyLogprobsTo(float[] dest, int offset) {
        System.arraycopy(logprobs, 0, dest, offset, length);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GeneratedSegment s
                && stopReason == s.stopReason
                && Arrays.equals(tokens, 0, length, s.tokens, 0, s.length)
                && Arrays.equals(logprobs, 0, length, s.logprobs, 0, s.length);
    }

    @Override
    public int hashCode() {
        int h = stopReason.hashCode();
        for (int i = 0; i < length; i++) {
            h = 31 * h + tokens[i];
        }
        return h;
    }

    @Override
    public String toString() {
        return "GeneratedSegment{tokens=" + length + ", stop_reason=" + stopReason + "}";
    }
}
