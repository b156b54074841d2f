package org.rollout.api;

import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * The result of one generation (semantics §1.2), accumulated across interruptions.
 *
 * <p>Invariants, checked at construction:
 *
 * <ul>
 *   <li>{@code outputTokens}, {@code outputLogprobs} and {@code outputVersions} have equal length:
 *       one sampling logprob and one weight version per generated token;
 *   <li>{@code inputTokens} is the original prompt, without tokens appended while resuming;
 *   <li>{@code stopReason} is never {@link StopReason#ABORT} once the engine returns it (a leftover
 *       abort becomes {@code LENGTH}), but a response built by hand may carry any reason.
 * </ul>
 *
 * <p>Versions are those pinned before each segment was sent (semantics §2.3), so tokens generated across a
 * weight update carry two versions, in order: e.g. forty 3s then sixty 4s.
 */
public final class ModelResponse {
    private final int[] inputTokens;
    private final int[] outputTokens;
    private final float[] outputLogprobs;
    private final int[] outputVersions;
    private final StopReason stopReason;
    private final Duration latency;
    private final Duration ttft;
    private final int cachedTokens;

    private ModelResponse(
            int[] inputTokens,
            int[] outputTokens,
            float[] outputLogprobs,
            int[] outputVersions,
            StopReason stopReason,
            Duration latency,
            Duration ttft) {
        this(inputTokens, outputTokens, outputLogprobs, outputVersions, stopReason, latency, ttft, -1);
    }

    private ModelResponse(
            int[] inputTokens,
            int[] outputTokens,
            float[] outputLogprobs,
            int[] outputVersions,
            StopReason stopReason,
            Duration latency,
            Duration ttft,
            int cachedTokens) {
        this.cachedTokens = cachedTokens;
        this.inputTokens = Objects.requireNonNull(inputTokens, "input_tokens");
        this.outputTokens = Objects.requireNonNull(outputTokens, "output_tokens");
        this.outputLogprobs = Objects.requireNonNull(outputLogprobs, "output_logprobs");
        this.outputVersions = Objects.requireNonNull(outputVersions, "output_versions");
        this.stopReason = Objects.requireNonNull(stopReason, "stop_reason");
        this.latency = Objects.requireNonNull(latency, "latency");
        this.ttft = Objects.requireNonNull(ttft, "ttft");
        if (outputLogprobs.length != outputTokens.length || outputVersions.length != outputTokens.length) {
            throw new IllegalArgumentException("output lengths differ: " + outputTokens.length + " tokens, "
                    + outputLogprobs.length + " logprobs, " + outputVersions.length + " versions");
        }
    }

    /**
     * A response; arrays are copied.
     *
     * @throws IllegalArgumentException when tokens, logprobs and versions differ in length
     */
    public static ModelResponse of(
            int[] inputTokens,
            int[] outputTokens,
            float[] outputLogprobs,
            int[] outputVersions,
            StopReason stopReason,
            Duration latency) {
        return new ModelResponse(
                inputTokens.clone(),
                outputTokens.clone(),
                outputLogprobs.clone(),
                outputVersions.clone(),
                stopReason,
                latency,
                latency);
    }

    /**
     * This response with {@code tokens} of its prompt reported found in the server's prefix cache
     * (capped at the prompt's length); a negative value means unknown.
     */
    public ModelResponse withCachedTokens(int tokens) {
        return new ModelResponse(
                inputTokens,
                outputTokens,
                outputLogprobs,
                outputVersions,
                stopReason,
                latency,
                ttft,
                tokens < 0 ? -1 : Math.min(tokens, inputTokens.length));
    }

    /**
     * How many of the prompt's tokens the server found in its prefix cache when it began this
     * generation (SGLang's {@code cached_tokens}), or empty when it did not say. Not part of equality.
     */
    public OptionalInt cachedTokens() {
        return cachedTokens < 0 ? OptionalInt.empty() : OptionalInt.of(cachedTokens);
    }

    /** A copy of the original prompt. */
    public int[] inputTokens() {
        return inputTokens.clone();
    }

    /** A copy of every generated token. */
    public int[] outputTokens() {
        return outputTokens.clone();
    }

    /** A copy of the sampling logprob of each generated token. */
    public float[] outputLogprobs() {
        return outputLogprobs.clone();
    }

    /** A copy of the weight version of each generated token. */
    public int[] outputVersions() {
        return outputVersions.clone();
    }

    public int inputLength() {
        return inputTokens.length;
    }

    public int outputLength() {
        return outputTokens.length;
    }

    public int outputToken(int i) {
        return outputTokens[i];
    }

    public float outputLogprob(int i) {
        return outputLogprobs[i];
    }

    public int outputVersion(int i) {
        return outputVersions[i];
    }

    public StopReason stopReason() {
        return stopReason;
    }

    /** Wall time of the whole generate call, interruptions included. */
    public Duration latency() {
        return latency;
    }

    /** Time to first token; equal to {@link #latency()} because generation does not stream. */
    public Duration ttft() {
        return ttft;
    }

    /** The version of the first generated token, or -1 when nothing was generated. */
    public int headVersion() {
        return outputVersions.length == 0 ? -1 : outputVersions[0];
    }

    /** The version of the last generated token, or -1 when nothing was generated. */
    public int tailVersion() {
        return outputVersions.length == 0 ? -1 : outputVersions[outputVersions.length - 1];
    }

    /** True when the last generated token is one of {@code stopIds} (EOS or PAD). */
    public boolean endsWithStop(int... stopIds) {
        if (outputTokens.length == 0) {
            return false;
        }
        int last = outputTokens[outputTokens.length - 1];
        for (int id : stopIds) {
            if (id == last) {
                return true;
            }
        }
        return false;
    }

    /**
     * The output without its trailing run of stop ids (semantics §1.2 {@code output_tokens_without_stop}).
     * For {@code length} and {@code abort} the output is returned unchanged.
     *
     * @throws IllegalStateException when a {@code stop}/{@code tool_calls} output does not end in a
     *     stop id, or consists of stop ids only
     */
    public int[] outputTokensWithoutStop(int... stopIds) {
        if (stopReason == StopReason.LENGTH || stopReason == StopReason.ABORT || outputTokens.length == 0) {
            return outputTokens.clone();
        }
        if (!endsWithStop(stopIds)) {
            throw new IllegalStateException("stop reason is " + stopReason + " but the output does not end in one of "
                    + Arrays.toString(stopIds));
        }
        int end = outputTokens.length;
        while (end > 0 && endsAt(end - 1, stopIds)) {
            end--;
        }
        if (end == 0) {
            throw new IllegalStateException("the output consists of stop ids only");
        }
        return Arrays.copyOf(outputTokens, end);
    }

    private boolean endsAt(int i, int[] stopIds) {
        for (int id : stopIds) {
            if (outputTokens[i] == id) {
                return true;
            }
        }
        return false;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ModelResponse r
                && Arrays.equals(inputTokens, r.inputTokens)
                && Arrays.equals(outputTokens, r.outputTokens)
                && Arrays.equals(outputLogprobs, r.outputLogprobs)
                && Arrays.equals(outputVersions, r.outputVersions)
                && stopReason == r.stopReason;
    }

    @Override
    public int hashCode() {
        return Objects.hash(
                Arrays.hashCode(inputTokens),
                Arrays.hashCode(outputTokens),
                Arrays.hashCode(outputVersions),
                stopReason);
    }

    @Override
    public String toString() {
        return "ModelResponse{input_len=" + inputTokens.length + ", output_len=" + outputTokens.length
                + ", stop_reason=" + stopReason + ", versions=" + headVersion() + ".." + tailVersion() + ", latency="
                + latency + "}";
    }
}
