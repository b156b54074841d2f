package org.rollout.core;

import org.rollout.api.AcceptFilter;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;

/**
 * Built-in {@link AcceptFilter}s, chosen by {@code rollout.accept}.
 *
 * <ul>
 *   <li>{@code all}: accept every merged group (AReaL's default, no {@code should_accept_fn}).
 *   <li>{@code drop_equal_rewards}: reject a group whose rows all have the same reward, as DAPO's
 *       dynamic sampling does: under group-normalised advantages such a group has zero advantage
 *       everywhere and only costs a training slot.
 * </ul>
 */
public final class AcceptFilters {
    private AcceptFilters() {}

    /** Accepts everything. */
    public static AcceptFilter all() {
        return AcceptFilter.all();
    }

    /**
     * Rejects groups whose {@code rewards} are all equal (within 1e-9); a group without a
     * {@code rewards} key or with a single row is accepted, since it carries no spread to judge.
     */
    public static AcceptFilter dropEqualRewards() {
        return group -> {
            Tensor rewards = group.get(TensorDict.REWARDS);
            if (rewards == null || rewards.numel() < 2) {
                return true;
            }
            double first = rewards.getDouble(0);
            for (int i = 1; i < rewards.numel(); i++) {
                if (Math.abs(rewards.getDouble(i) - first) > 1e-9) {
                    return true;
                }
            }
            return false;
        };
    }
}
