package org.rollout.agent;

import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.rollout.api.Interaction;

/**
 * Turns an episode's rewarded completions into the interactions it exports (AReaL's {@code
 * apply_reward_discount} then {@code export_interactions}, semantics §3.4, §8 step 5).
 *
 * <pre>
 *   recorded (in order)   own reward    after turn_discount γ = 0.5    individual   concat (c1 ← c2 ← c3)
 *   c1                    —             0 + γ·(0 + γ·1) = 0.25          row          —
 *   c2                    —             0 + γ·1        = 0.5            row          —
 *   c3                    1             1                               row          row (whole conversation)
 * </pre>
 *
 * <p>Discount, from the last completion backwards: {@code reward[i] = (own reward or 0) + γ ·
 * reward[i+1]}, so a completion without a reward receives the discounted later ones, as AReaL
 * computes it, in both styles. Then every exported interaction without a {@code rollout_reward}
 * gets the episode's terminal reward (the last completion's) as its reference, so that
 * rollout-time normalisation compares episodes, not turns (semantics §5.6 [C]); AReaL [C] documents this for
 * {@code individual}, and it is done for {@code concat} too so that an episode with several leaves
 * is still one logical rollout.
 *
 * <p>{@code individual} exports every completion; {@code concat} exports only the leaves (the
 * completions no other completion names as parent). Parents are re-linked to the rewarded copies.
 * Stateless and thread-safe; inputs are never modified.
 */
public final class InteractionExport {
    private InteractionExport() {}

    /**
     * The exported interactions keyed by completion id, in recording order.
     *
     * @param rewarded the episode's completions in recording order, rewards applied
     * @param style how to export
     * @param turnDiscount γ in (0, 1]
     * @throws IllegalArgumentException when {@code turnDiscount} is outside (0, 1]
     */
    public static Map<String, Interaction> export(List<Interaction> rewarded, ExportStyle style, double turnDiscount) {
        if (!(turnDiscount > 0 && turnDiscount <= 1)) {
            throw new IllegalArgumentException("turn_discount must be in (0, 1], got " + turnDiscount);
        }
        int n = rewarded.size();
        double[] rewards = new double[n];
        double running = 0;
        for (int i = n - 1; i >= 0; i--) {
            Double own = rewarded.get(i).reward();
            running = running * turnDiscount + (own == null ? 0.0 : own);
            rewards[i] = running;
        }
        double terminal = n == 0 ? 0.0 : rewards[n - 1];

        Set<String> parents = new HashSet<>();
        for (Interaction it : rewarded) {
            if (it.parent() != null) {
                parents.add(it.parent().id());
            }
        }
        Map<Interaction, Interaction> copies = new IdentityHashMap<>();
        Map<String, Interaction> out = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            Interaction it = rewarded.get(i);
            Interaction.Builder b = it.toBuilder().reward(rewards[i]);
            if (it.rolloutReward() == null) {
                b.rolloutReward(terminal);
            }
            if (it.parent() != null && copies.containsKey(it.parent())) {
                b.parent(copies.get(it.parent()));
            }
            Interaction copy = b.build();
            copies.put(it, copy);
            if (style == ExportStyle.INDIVIDUAL || !parents.contains(it.id())) {
                out.put(copy.id(), copy);
            }
        }
        return out;
    }
}
