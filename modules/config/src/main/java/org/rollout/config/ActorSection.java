package org.rollout.config;

import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import java.util.Map;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;
import org.rollout.config.RolloutSettings.Actor;
import org.rollout.config.RolloutSettings.Norm;
import org.rollout.config.RolloutSettings.NormLevel;

/**
 * The {@code actor} section (the trainer's settings the engine needs: {@code min_usable_group_size},
 * {@code reward_norm}, {@code adv_norm}), and the resolution of the usable minimum with gconfig
 * (semantics §5.4).
 */
final class ActorSection {
    private static final String NORM_LEVEL = "\"batch\", \"group\" or null";
    private static final Map<String, NormLevel> NORM_LEVELS =
            Map.of("batch", NormLevel.BATCH, "group", NormLevel.GROUP);

    private ActorSection() {}

    /** The section, or null when a key of it failed. */
    static Actor read(ConfigReader r) {
        Long explicit = r.integer(
                "actor.min_usable_group_size",
                Integer.MIN_VALUE,
                Integer.MAX_VALUE,
                true,
                "an integer in [1, gconfig.n_samples], or null to derive it");
        Norm rewardNorm = norm(r, "actor.reward_norm");
        Norm advNorm = norm(r, "actor.adv_norm");
        if (rewardNorm == null || advNorm == null || !r.ok("actor.min_usable_group_size")) {
            return null;
        }
        return new Actor(explicit == null ? null : explicit.intValue(), rewardNorm, advNorm);
    }

    /**
     * {@code actor.min_usable_group_size} resolved against gconfig (semantics §5.4), or null when
     * either failed or they contradict (reported).
     */
    static Integer minUsableGroupSize(ConfigReader r, GenerationConfig gconfig, Actor actor) {
        if (gconfig == null || actor == null || !r.ok("gconfig.n_samples", "gconfig.reward_normalization")) {
            return null;
        }
        if (gconfig.rewardNormalization() && actor.rewardNorm().isSet()) {
            r.error(
                    "gconfig.reward_normalization",
                    true,
                    "false while actor.reward_norm is set (mean_level="
                            + level(actor.rewardNorm().meanLevel())
                            + ", std_level=" + level(actor.rewardNorm().stdLevel()) + "): normalise rewards at"
                            + " rollout time or in the trainer, not both (AReaL: enable only one)");
            return null;
        }
        boolean groupStatistics = actor.rewardNorm().usesGroupStatistics()
                || actor.advNorm().usesGroupStatistics()
                || gconfig.rewardNormalization();
        try {
            return MinUsableGroupSize.resolve(actor.minUsableGroupSize(), gconfig.nSamples(), groupStatistics);
        } catch (InvalidConfigException e) {
            r.error(e.key().equals("n_samples") ? e.under("gconfig") : e.under("actor"));
            return null;
        }
    }

    private static Norm norm(ConfigReader r, String section) {
        ConfigValue v = r.value(section);
        if (v == null || v.valueType() != ConfigValueType.OBJECT) {
            // null is AReaL's None; anything else was reported by the unknown-key walk.
            return v == null || v.valueType() == ConfigValueType.NULL ? Norm.NONE : null;
        }
        NormLevel mean = r.choice(section + ".mean_level", NORM_LEVELS, true, NORM_LEVEL);
        NormLevel std = r.choice(section + ".std_level", NORM_LEVELS, true, NORM_LEVEL);
        if (!r.ok(section + ".mean_level", section + ".std_level")) {
            return null;
        }
        return new Norm(mean, std);
    }

    private static String level(NormLevel l) {
        return l == null ? "null" : "\"" + l.configName() + "\"";
    }
}
