package org.rollout.modelserver;

import java.time.Duration;

/**
 * How long a scheduler step takes on the simulated accelerator, so that a benchmark can stand a GPU
 * fleet on two cores. A step that prefills {@code n} prompt tokens (those its admitted requests did
 * not find in the prefix cache, {@link RadixCache}) and decodes one token for each of {@code s}
 * running sequences takes
 *
 * <pre>
 *   n · prefillPerToken + (s &gt; 0 ? decodeBase + s · decodePerSequence : 0)
 * </pre>
 *
 * <p>The scheduler computes the step, then parks (a deadline, not a busy loop) until that much time
 * has passed since the step began, and only then delivers the step's finished results. When the
 * real computation is slower than the model, the step takes the real time. {@link #NONE} (the
 * default) adds nothing. Immutable.
 *
 * @param prefillPerToken time per uncached prompt token admitted in the step
 * @param decodeBase fixed time of a decode step
 * @param decodePerSequence extra decode time per running sequence
 */
public record LatencyModel(Duration prefillPerToken, Duration decodeBase, Duration decodePerSequence) {
    /** No modelled latency: steps take the time the CPU needs. */
    public static final LatencyModel NONE = new LatencyModel(Duration.ZERO, Duration.ZERO, Duration.ZERO);

    public LatencyModel {
        check("prefill_per_token", prefillPerToken);
        check("decode_base", decodeBase);
        check("decode_per_sequence", decodePerSequence);
    }

    private static void check(String name, Duration d) {
        if (d == null || d.isNegative()) {
            throw new IllegalArgumentException("latency " + name + " must be a non-negative duration, got " + d);
        }
    }

    /** True when every term is zero. */
    public boolean isNone() {
        return prefillPerToken.isZero() && decodeBase.isZero() && decodePerSequence.isZero();
    }

    /** The modelled duration of a step, in nanoseconds. */
    public long stepNanos(int prefillTokens, int decodingSequences) {
        long nanos = prefillTokens * prefillPerToken.toNanos();
        if (decodingSequences > 0) {
            nanos += decodeBase.toNanos() + decodingSequences * decodePerSequence.toNanos();
        }
        return nanos;
    }
}
