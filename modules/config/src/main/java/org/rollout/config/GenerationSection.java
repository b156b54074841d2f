package org.rollout.config;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;

/**
 * The sampling sections {@code gconfig} and {@code eval_gconfig} (semantics §1.3): each key read as
 * {@link GenerationKey} types it, validated by building a {@link GenerationConfig}. {@code
 * eval_gconfig} is gconfig with the keys it gives replaced. One instance per load: it keeps what
 * gconfig read for eval_gconfig to inherit.
 */
final class GenerationSection {
    private final ConfigReader r;
    private final List<String> warnings;
    private Map<GenerationKey, Object> gconfigRead = Map.of();

    GenerationSection(ConfigReader r, List<String> warnings) {
        this.r = r;
        this.warnings = warnings;
    }

    /** {@code gconfig}, or null when a key failed. */
    GenerationConfig gconfig() {
        gconfigRead = values("gconfig", false);
        return ReportingBuild.build(gconfigRead, GenerationKey::build, GenerationKey::of, e -> e.under("gconfig"), r);
    }

    /**
     * {@code eval_gconfig} over what {@link #gconfig()} read, or null when a key failed. An error
     * caused by an inherited value names eval_gconfig's key and says the value is gconfig's.
     *
     * @param inference for the beam-search check of a {@code use_beam_search} eval_gconfig gives; may be null
     */
    GenerationConfig evalGconfig(InferenceConfig inference) {
        // gconfig's values that passed (an error there is reported once, under gconfig).
        Map<GenerationKey, Object> inherited = new LinkedHashMap<>();
        gconfigRead.forEach((k, v) -> {
            if (r.ok("gconfig." + k.key)) {
                inherited.put(k, v);
            }
        });
        Map<GenerationKey, Object> given = values("eval_gconfig", true);
        Map<GenerationKey, Object> values = new LinkedHashMap<>(inherited);
        values.putAll(given);
        for (GenerationKey k : GenerationKey.values()) {
            if (!r.ok("eval_gconfig." + k.key)) {
                values.remove(k);
            }
        }
        GenerationConfig g = ReportingBuild.build(
                values,
                GenerationKey::build,
                GenerationKey::of,
                e -> {
                    GenerationKey k = GenerationKey.of(e.key());
                    if (k != null && !given.containsKey(k)) {
                        return new InvalidConfigException(
                                "eval_gconfig." + e.key(),
                                e.value(),
                                e.allowed() + "; the value is gconfig." + e.key() + "'s, as eval_gconfig does not"
                                        + " set it");
                    }
                    return e.under("eval_gconfig");
                },
                r);
        // Inherited beam search is reported once, under gconfig.
        if (g != null && inference != null && given.containsKey(GenerationKey.USE_BEAM_SEARCH)) {
            InferenceSection.checkBeamSearch(r, "eval_gconfig", g, inference);
        }
        for (GenerationKey k : List.of(GenerationKey.REWARD_NORMALIZATION, GenerationKey.DROP_INCOMPLETE_GROUP)) {
            if (Boolean.TRUE.equals(given.get(k))) {
                warnings.add("eval_gconfig." + k.key + " = true is ignored: evaluation groups must be complete"
                        + " and are never reward-normalised");
            }
        }
        if (given.containsKey(GenerationKey.MIN_NEW_TOKENS) && (Integer) given.get(GenerationKey.MIN_NEW_TOKENS) > 0) {
            warnings.add("eval_gconfig.min_new_tokens = " + given.get(GenerationKey.MIN_NEW_TOKENS)
                    + " has no effect: it is not sent to SGLang or vLLM (as in AReaL)");
        }
        return g;
    }

    /**
     * Legal but questionable values of gconfig (and actor.min_usable_group_size with it), one
     * sentence each. Under {@code deterministicSampling} a fixed seed is only the base of per-slot
     * seeds, so it is no warning.
     */
    void warnings(GenerationConfig gconfig, RolloutSettings.Actor actor, boolean deterministicSampling) {
        if (gconfig == null) {
            return;
        }
        if (gconfig.minNewTokens() > 0) {
            warnings.add("gconfig.min_new_tokens = " + gconfig.minNewTokens()
                    + " has no effect: it is not sent to SGLang or vLLM (as in AReaL)");
        }
        if (gconfig.nSamples() > 1 && gconfig.seed() != null && !deterministicSampling) {
            warnings.add("gconfig.seed = " + gconfig.seed() + " with gconfig.n_samples = " + gconfig.nSamples()
                    + ": every slot of a group sends the same seed, so a group's samples are alike and its"
                    + " group-relative advantages vanish");
        }
        if (gconfig.nSamples() > 1 && gconfig.greedy()) {
            warnings.add("gconfig.greedy = true with gconfig.n_samples = " + gconfig.nSamples()
                    + ": a group's samples are identical and its group-relative advantages vanish");
        }
        if (gconfig.nSamples() == 1 && gconfig.rewardNormalization()) {
            warnings.add("gconfig.reward_normalization = true has no effect with gconfig.n_samples = 1");
        }
        if (gconfig.dropIncompleteGroup() && actor != null && actor.minUsableGroupSize() != null) {
            warnings.add("actor.min_usable_group_size = " + actor.minUsableGroupSize() + " has no effect:"
                    + " gconfig.drop_incomplete_group = true drops every incomplete group");
        }
    }

    private Map<GenerationKey, Object> values(String section, boolean onlyPresent) {
        Map<GenerationKey, Object> values = new LinkedHashMap<>();
        for (GenerationKey k : GenerationKey.values()) {
            String path = section + "." + k.key;
            if (onlyPresent && !r.present(path)) {
                continue;
            }
            Object v = k.read(r, path);
            if (v != GenerationKey.ABSENT) {
                values.put(k, v);
            }
        }
        return values;
    }
}
