package org.rollout.config;

import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigUtil;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The keys the engine knows, taken from the sections of {@code reference.conf}, and the search for
 * keys it does not: every unknown key or section in a user's configuration becomes an error naming
 * its full path, with the closest known key when one is near ("did you mean
 * rollout.consumer_batch_size?"), or a note when it is an AReaL knob this engine does not have.
 *
 * <p>Known paths are the leaves and sections of {@code rollout}, {@code gconfig},
 * {@code eval_gconfig} (which takes gconfig's keys) and {@code actor}; {@code
 * rollout.workflow_kwargs} and {@code rollout.eval_workflow_kwargs} are free-form. At the top level, {@code pekko} is also allowed (it
 * configures the actor system and is not checked here). Immutable.
 */
final class KnownKeys {
    /** The sections this engine reads, in reference.conf order. */
    static final List<String> SECTIONS = List.of("rollout", "gconfig", "eval_gconfig", "actor");

    /** Top-level sections allowed besides ours. */
    static final String PEKKO = "pekko";

    /** Objects whose content is the user's (not checked). */
    static final Set<String> FREE_FORM = Set.of("rollout.workflow_kwargs", "rollout.eval_workflow_kwargs");

    /** Sections that may be null: AReaL's {@code eval_gconfig = None} and {@code reward_norm = None}. */
    static final Set<String> NULLABLE_SECTIONS = Set.of("eval_gconfig", "actor.reward_norm", "actor.adv_norm");

    /** AReaL knobs this engine does not have, and why; refused with this note rather than a guess. */
    private static final Map<String, String> AREAL_ONLY = Map.ofEntries(
            Map.entry("rollout.enable_rollout_tracing", "the status line and stats.jsonl report every task"),
            Map.entry("rollout.return_routed_experts", "MoE routed experts are not returned"),
            Map.entry("rollout._version", "there is one rollout implementation"),
            Map.entry("rollout.serialize_group_samples", "it belongs to AReaL's v2 controller"),
            Map.entry("rollout.group_size", "the group size is gconfig.n_samples"),
            Map.entry("gconfig.keep_partial_group_on_error", "a failed slot always fails its group"),
            Map.entry("gconfig.legacy_reward_normalization", "only reference-based normalisation exists"));

    private final List<String> leaves;
    private final Set<String> sections;
    private final List<String> candidates;

    private KnownKeys(List<String> leaves, Set<String> sections) {
        this.leaves = List.copyOf(leaves);
        this.sections = Set.copyOf(sections);
        List<String> all = new ArrayList<>(sections);
        all.addAll(leaves);
        this.candidates = List.copyOf(all);
    }

    /**
     * The keys of {@code reference}, a root holding our sections, leaves in file order; {@code
     * eval_gconfig} gets gconfig's keys.
     */
    static KnownKeys of(ConfigObject reference) {
        List<Leaf> found = new ArrayList<>();
        Set<String> sections = new LinkedHashSet<>();
        for (String s : SECTIONS) {
            collect(s, reference.get(s), found, sections);
        }
        found.sort(Comparator.comparingInt(Leaf::line));
        List<String> leaves = new ArrayList<>();
        for (Leaf l : found) {
            leaves.add(l.path());
            if (l.path().equals("eval_gconfig")) {
                for (Leaf g : found) {
                    if (g.path().startsWith("gconfig.")) {
                        leaves.add("eval_" + g.path());
                    }
                }
            }
        }
        return new KnownKeys(leaves, sections);
    }

    private record Leaf(String path, int line) {}

    private static void collect(String path, ConfigValue v, List<Leaf> out, Set<String> sections) {
        if (v instanceof ConfigObject o && !o.isEmpty() && !FREE_FORM.contains(path)) {
            sections.add(path);
            for (Map.Entry<String, ConfigValue> e : o.entrySet()) {
                collect(path + "." + e.getKey(), e.getValue(), out, sections);
            }
        } else {
            if (path.equals("eval_gconfig")) {
                sections.add(path);
            }
            out.add(new Leaf(path, v == null ? Integer.MAX_VALUE : v.origin().lineNumber()));
        }
    }

    /**
     * Every known leaf key in reference.conf order ({@code eval_gconfig.*} after {@code
     * eval_gconfig}); free-form objects and the empty {@code eval_gconfig} count as leaves.
     */
    List<String> leaves() {
        return leaves;
    }

    /**
     * Reports every unknown top-level key of the user's configuration, and every unknown key or
     * non-object section inside our sections of the merged tree.
     *
     * @param user the user's configuration before the defaults (file and overrides)
     * @param merged the resolved configuration with the defaults
     */
    void check(ConfigObject user, ConfigObject merged, ConfigReader r) {
        for (String key : new TreeSet<>(user.keySet())) {
            if (!SECTIONS.contains(key) && !key.equals(PEKKO)) {
                r.error(
                        ConfigUtil.joinPath(key),
                        ConfigReader.shown(merged.get(key)),
                        "no such section; did you mean "
                                + suggestionOr(key, "one of rollout, gconfig, eval_gconfig, actor, pekko") + "?");
            }
        }
        for (String s : SECTIONS) {
            checkSection(s, merged.get(s), r);
        }
    }

    private void checkSection(String path, ConfigValue v, ConfigReader r) {
        if (v == null || FREE_FORM.contains(path)) {
            return;
        }
        if (v.valueType() == ConfigValueType.NULL && NULLABLE_SECTIONS.contains(path)) {
            return;
        }
        if (!(v instanceof ConfigObject o)) {
            r.error(
                    path,
                    ConfigReader.shown(v),
                    "an object (the section " + path + ")" + (NULLABLE_SECTIONS.contains(path) ? ", or null" : ""));
            return;
        }
        // Sorted, so that several unknown keys are reported in the same order on every run.
        for (Map.Entry<String, ConfigValue> e : new TreeMap<>(o).entrySet()) {
            String child = path + "." + e.getKey();
            if (sections.contains(child)) {
                checkSection(child, e.getValue(), r);
            } else if (!leaves.contains(child)) {
                r.error(
                        path + "." + ConfigUtil.joinPath(e.getKey()),
                        ConfigReader.shown(e.getValue()),
                        unknownKeyAllowed(child));
            }
        }
    }

    private String unknownKeyAllowed(String path) {
        String areal = AREAL_ONLY.get(path);
        if (areal != null) {
            return "no such key: AReaL's " + path + " is not supported here (" + areal + ")";
        }
        String suggestion = suggestion(path);
        if (suggestion != null) {
            return "no such key; did you mean " + suggestion + "?";
        }
        String parent = path.substring(0, path.lastIndexOf('.'));
        if (parent.equals("actor") || parent.startsWith("actor.")) {
            return "no such key: the engine reads only actor.min_usable_group_size and the mean_level and"
                    + " std_level of actor.reward_norm and actor.adv_norm; the trainer's other settings do not"
                    + " belong here";
        }
        return "no such key under " + parent + " (every key is listed in docs/configuration.md)";
    }

    private String suggestionOr(String path, String otherwise) {
        String s = suggestion(path);
        return s != null ? s : otherwise;
    }

    /**
     * The known path closest to {@code path}, or null when none is near: the same key spelt with
     * other case or dashes, the same key name in another section, or the fewest edits to the key
     * name (one extra edit when the section differs), within 1 edit for names up to 4 characters,
     * 2 up to 10, else 3. Ties go to the earlier key in reference.conf.
     */
    String suggestion(String path) {
        int dot = path.lastIndexOf('.');
        String parent = dot < 0 ? "" : normalise(path.substring(0, dot));
        String name = normalise(path.substring(dot + 1));
        int limit = name.length() <= 4 ? 1 : name.length() <= 10 ? 2 : 3;
        String best = null;
        int bestScore = Integer.MAX_VALUE;
        for (String c : candidates) {
            int cdot = c.lastIndexOf('.');
            String cParent = cdot < 0 ? "" : c.substring(0, cdot);
            String cName = c.substring(cdot + 1);
            int score = editDistance(name, cName) + (cParent.equals(parent) ? 0 : 1);
            if (score < bestScore) {
                bestScore = score;
                best = c;
            }
        }
        return bestScore <= limit && !best.equals(path) ? best : null;
    }

    private static String normalise(String s) {
        return s.toLowerCase(Locale.ROOT).replace('-', '_');
    }

    /** Levenshtein distance. */
    static int editDistance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int sub = prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                cur[j] = Math.min(sub, Math.min(prev[j] + 1, cur[j - 1] + 1));
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }
}
