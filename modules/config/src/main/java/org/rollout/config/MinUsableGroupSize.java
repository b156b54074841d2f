package org.rollout.config;

import org.rollout.api.InvalidConfigException;

/**
 * How many usable slots a group needs to be trained on: AReaL's {@code min_usable_group_size}
 * (semantics §5.1, §5.4), its derivation and its validation.
 *
 * <table>
 *   <caption>resolve(explicit, n_samples, groupStatistics)</caption>
 *   <tr><th>explicit</th><th>group statistics</th><th>result</th></tr>
 *   <tr><td>null</td><td>yes</td><td>min(2, n_samples)</td></tr>
 *   <tr><td>null</td><td>no</td><td>1 (batch-relative PPO and REINFORCE keep singletons)</td></tr>
 *   <tr><td>M in [1, n_samples]</td><td>no</td><td>M</td></tr>
 *   <tr><td>M in [2, n_samples]</td><td>yes</td><td>M</td></tr>
 *   <tr><td>1</td><td>yes, n_samples = 1</td><td>1 (a singleton target group is complete)</td></tr>
 *   <tr><td>1</td><td>yes, n_samples &gt; 1</td><td>error: a lone survivor has no peers</td></tr>
 * </table>
 *
 * <p>"Group statistics" means the trainer normalises rewards or advantages at group level
 * ({@code actor.reward_norm} / {@code actor.adv_norm} with {@code mean_level} or {@code std_level}
 * {@code "group"}) <em>or</em> rollout-time {@code gconfig.reward_normalization} is on. The second
 * condition extends AReaL, which looks only at the actor's norms; rollout-time normalisation
 * centres within the group too, and one survivor would always normalise to 0.
 *
 * <p>All errors are {@link InvalidConfigException}s keyed {@code group_size},
 * {@code min_usable_group_size} or {@code n_samples}; callers place them under their section with
 * {@link InvalidConfigException#under(String)} (e.g. {@code actor}). Stateless.
 */
public final class MinUsableGroupSize {
    private MinUsableGroupSize() {}

    /**
     * AReaL's {@code validate_rollout_group_sizes} (semantics §5.1): {@code G >= 1} and {@code 1 <= M <= G}.
     *
     * @throws InvalidConfigException keyed {@code group_size} or {@code min_usable_group_size}
     */
    public static void validateGroupSizes(int groupSize, int minUsableGroupSize) {
        if (groupSize < 1) {
            throw new InvalidConfigException("group_size", groupSize, "an integer >= 1");
        }
        if (minUsableGroupSize < 1 || minUsableGroupSize > groupSize) {
            throw new InvalidConfigException(
                    "min_usable_group_size",
                    minUsableGroupSize,
                    "an integer between 1 and group_size (" + groupSize + ")");
        }
    }

    /**
     * The minimum for training rollouts (semantics §5.4): the explicit value if given (validated), else
     * derived from whether group statistics are in use.
     *
     * <p>An explicit 1 with group statistics is allowed only when {@code nSamples == 1}: such a
     * target group is complete by definition, which is exactly the value the derivation gives
     * (AReaL's validation would reject the explicit 1 there; we accept what we would derive).
     *
     * @param explicit {@code actor.min_usable_group_size}, or null when unset
     * @param nSamples {@code gconfig.n_samples}, the group size
     * @param groupStatistics whether rewards or advantages are normalised within the group (see the
     *     class comment)
     * @throws InvalidConfigException keyed {@code n_samples} when it is below 1, or
     *     {@code min_usable_group_size} when the explicit value is below 1, above {@code n_samples},
     *     or below 2 under group statistics with {@code n_samples > 1}
     */
    public static int resolve(Integer explicit, int nSamples, boolean groupStatistics) {
        if (nSamples < 1) {
            throw new InvalidConfigException("n_samples", nSamples, "an integer >= 1");
        }
        if (explicit == null) {
            return groupStatistics ? Math.min(2, nSamples) : 1;
        }
        int m = explicit;
        if (m < 1) {
            throw new InvalidConfigException("min_usable_group_size", m, "an integer >= 1");
        }
        if (m > nSamples) {
            throw new InvalidConfigException(
                    "min_usable_group_size", m, "an integer <= n_samples (" + nSamples + "), the group size");
        }
        if (m < 2 && groupStatistics && nSamples > 1) {
            throw new InvalidConfigException(
                    "min_usable_group_size",
                    m,
                    "an integer >= 2, because min_usable_group_size must be at least 2 while group statistics are in use (group-level actor.reward_norm or"
                            + " actor.adv_norm, or gconfig.reward_normalization): a lone survivor has no peers");
        }
        return m;
    }

    /**
     * The minimum for evaluation: the whole group, {@code eval_gconfig.n_samples} (evaluation
     * requires full groups, as the later upstream test expects, semantics §5.4 [C]).
     *
     * @throws InvalidConfigException keyed {@code n_samples} when it is below 1
     */
    public static int forEval(int evalNSamples) {
        if (evalNSamples < 1) {
            throw new InvalidConfigException("n_samples", evalNSamples, "an integer >= 1");
        }
        return evalNSamples;
    }
}
