package org.rollout.core;

import org.rollout.api.GenerationConfig;
import org.rollout.config.MinUsableGroupSize;
import org.rollout.config.RolloutSettings;

/**
 * How one prompt group is merged (semantics §5.1, §5.5, §5.6): its size {@code G}, the usable minimum
 * {@code M}, and the two workflow-layer flags of {@link GenerationConfig}.
 *
 * <p>Valid by construction: {@code G >= 1} and {@code 1 <= M <= G}
 * ({@link MinUsableGroupSize#validateGroupSizes}). Immutable.
 *
 * @param groupSize {@code G}, the number of slots ({@code gconfig.n_samples})
 * @param minUsableGroupSize {@code M}; resolve it with {@link MinUsableGroupSize#resolve}
 * @param dropIncompleteGroup any unusable slot drops the whole group (semantics §5.5)
 * @param rewardNormalization rollout-time normalisation within the group (semantics §5.6)
 * @param rewardNormalizationUseStd false: centre only, divisor 1
 */
public record GroupOptions(
        int groupSize,
        int minUsableGroupSize,
        boolean dropIncompleteGroup,
        boolean rewardNormalization,
        boolean rewardNormalizationUseStd) {

    /** @throws org.rollout.api.InvalidConfigException when the sizes are out of range */
    public GroupOptions {
        MinUsableGroupSize.validateGroupSizes(groupSize, minUsableGroupSize);
    }

    /** How training groups are merged: {@code gconfig.n_samples}, the resolved usable minimum and gconfig's group flags. */
    public static GroupOptions training(RolloutSettings settings) {
        return from(settings.gconfig(), settings.minUsableGroupSize());
    }

    /**
     * How evaluation groups are merged: {@code eval_gconfig.n_samples}, complete groups only
     * ({@link MinUsableGroupSize#forEval}), never reward-normalised (AReaL's eval submissions pass
     * neither flag).
     */
    public static GroupOptions evaluation(RolloutSettings settings) {
        GenerationConfig g = settings.evalGconfig();
        int n = g.nSamples();
        return new GroupOptions(n, MinUsableGroupSize.forEval(n), false, false, g.rewardNormalizationUseStd());
    }

    /** The options of a generation config: {@code n_samples} and its group flags. */
    public static GroupOptions from(GenerationConfig g, int minUsableGroupSize) {
        return new GroupOptions(
                g.nSamples(),
                minUsableGroupSize,
                g.dropIncompleteGroup(),
                g.rewardNormalization(),
                g.rewardNormalizationUseStd());
    }
}
