package org.rollout.core;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The group statistics recorded once per grouped call (semantics §5.9, AReaL's {@code _record_group_stats}):
 * counts of raw rollout calls before {@code should_accept}, not of accepted results.
 *
 * <pre>
 *   target_slot_count                G
 *   usable_slot_count                U   slots that did not return Rejected
 *   trainable_slot_count             T   U when the group was merged, else 0
 *   fully_masked_group               U == 0
 *   singleton_slot_group             U == 1
 *   pre_filter_usable_slot_yield     U / G
 *   pre_filter_trainable_slot_yield  T / G
 * </pre>
 *
 * <p>Immutable.
 *
 * @param targetSlotCount {@code G}, at least 1
 * @param usableSlotCount {@code U}, in {@code [0, G]}
 * @param trainableSlotCount {@code T}, either 0 or {@code U}
 */
public record GroupMetrics(int targetSlotCount, int usableSlotCount, int trainableSlotCount) {

    public GroupMetrics {
        if (targetSlotCount < 1 || usableSlotCount < 0 || usableSlotCount > targetSlotCount) {
            throw new IllegalArgumentException(
                    "group metrics need 1 <= G and 0 <= U <= G, got G=" + targetSlotCount + ", U=" + usableSlotCount);
        }
        if (trainableSlotCount != 0 && trainableSlotCount != usableSlotCount) {
            throw new IllegalArgumentException(
                    "trainable_slot_count must be 0 or U=" + usableSlotCount + ", got " + trainableSlotCount);
        }
    }

    /** Metrics of a group that was merged: every usable slot is trainable. */
    public static GroupMetrics merged(int groupSize, int usable) {
        return new GroupMetrics(groupSize, usable, usable);
    }

    /** Metrics of a group that was dropped: nothing is trainable. */
    public static GroupMetrics dropped(int groupSize, int usable) {
        return new GroupMetrics(groupSize, usable, 0);
    }

    public boolean fullyMaskedGroup() {
        return usableSlotCount == 0;
    }

    public boolean singletonSlotGroup() {
        return usableSlotCount == 1;
    }

    public double preFilterUsableSlotYield() {
        return (double) usableSlotCount / targetSlotCount;
    }

    public double preFilterTrainableSlotYield() {
        return (double) trainableSlotCount / targetSlotCount;
    }

    /** The seven scalars under their AReaL keys, in the order of semantics §5.9, booleans as 0.0 or 1.0. */
    public Map<String, Double> asMap() {
        Map<String, Double> m = new LinkedHashMap<>(12);
        m.put("target_slot_count", (double) targetSlotCount);
        m.put("usable_slot_count", (double) usableSlotCount);
        m.put("trainable_slot_count", (double) trainableSlotCount);
        m.put("fully_masked_group", fullyMaskedGroup() ? 1.0 : 0.0);
        m.put("singleton_slot_group", singletonSlotGroup() ? 1.0 : 0.0);
        m.put("pre_filter_usable_slot_yield", preFilterUsableSlotYield());
        m.put("pre_filter_trainable_slot_yield", preFilterTrainableSlotYield());
        return Collections.unmodifiableMap(m);
    }
}
