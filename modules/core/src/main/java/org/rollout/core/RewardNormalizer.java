package org.rollout.core;

/**
 * The statistics of rollout-time reward normalisation within one group (semantics §5.6 [C]): one
 * reference reward per usable logical rollout in, a center and a divisor out.
 *
 * <pre>
 *   center  = mean(refs)
 *   scale   = population std(refs)                 (divide by N)
 *   divisor = 1              if !useStd or scale &lt;= 1e-8
 *           = scale + 1e-8   otherwise
 *   r'      = (r - center) / divisor               for every row reward and every reference
 * </pre>
 *
 * <p>Centering is kept for tied groups: all-equal references normalise to 0 with divisor 1. A
 * spread at or below eps also gets divisor 1, where AReaL's [B] code divides by {@code scale +
 * eps} and so magnifies float noise into rewards of order 1.
 * Statistics are computed in double precision (AReaL uses float32); the result is stored as
 * float32 by the caller, so the two agree to float precision.
 *
 * <p>Immutable and thread-safe.
 *
 * @param center the mean of the references
 * @param scale the population standard deviation of the references
 * @param divisor what a centred reward is divided by; always &gt; 0
 */
public record RewardNormalizer(double center, double scale, double divisor) {
    /** The rollout-time normalisation epsilon (semantics §10: {@code 1e-8}). */
    public static final double EPS = 1e-8;

    public RewardNormalizer {
        if (!Double.isFinite(center) || !Double.isFinite(scale) || scale < 0) {
            throw new IllegalArgumentException(
                    "center and scale must be finite and scale >= 0, got center " + center + ", scale " + scale);
        }
        if (!Double.isFinite(divisor) || divisor <= 0) {
            throw new IllegalArgumentException("divisor must be finite and > 0, got " + divisor);
        }
    }

    /**
     * The statistics of {@code refs}, one reference per logical rollout.
     *
     * @param useStd {@code reward_normalization_use_std}: false means centre only (divisor 1)
     * @throws IllegalArgumentException when {@code refs} is empty or holds a non-finite value
     *     (naming its index)
     */
    public static RewardNormalizer fromReferences(double[] refs, boolean useStd) {
        int n = refs.length;
        if (n == 0) {
            throw new IllegalArgumentException("reward normalisation needs at least one reference, got none");
        }
        // The mean as an offset from the first reference: exact for tied groups (a plain sum of
        // three 0.7s divided by 3 is 0.7000000000000001, and tied rewards must normalise to 0).
        double shift = refs[0];
        double offsets = 0;
        for (int i = 0; i < n; i++) {
            if (!Double.isFinite(refs[i])) {
                throw new IllegalArgumentException("reference " + i + " is not finite: " + refs[i]);
            }
            offsets += refs[i] - shift;
        }
        double center = shift + offsets / n;
        // Two passes: the sum of squared deviations, not E[x²] − E[x]², which cancels badly.
        double squares = 0;
        for (double r : refs) {
            double d = r - center;
            squares += d * d;
        }
        double scale = Math.sqrt(squares / n);
        double divisor = !useStd || scale <= EPS ? 1.0 : scale + EPS;
        return new RewardNormalizer(center, scale, divisor);
    }

    /** {@code (reward - center) / divisor}. */
    public double normalize(double reward) {
        return (reward - center) / divisor;
    }
}
