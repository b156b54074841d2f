package org.rollout.config;

import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The {@code rollout.dataset} section: prompt files, the shuffle seed and what a malformed line does. */
final class DatasetSection {
    private DatasetSection() {}

    /** The section, or null when a key of it failed. */
    static RolloutSettings.Dataset read(ConfigReader r) {
        List<Path> train = files(r, "rollout.dataset.train");
        List<Path> eval = files(r, "rollout.dataset.eval");
        Long seed = r.integer(
                "rollout.dataset.shuffle_seed",
                Long.MIN_VALUE,
                Long.MAX_VALUE,
                true,
                "an integer, or null for file order");
        OnMalformed onMalformed = r.choice(
                "rollout.dataset.on_malformed",
                Map.of("skip", OnMalformed.SKIP, "fail", OnMalformed.FAIL),
                false,
                "\"skip\" or \"fail\"");
        if (train == null || eval == null || onMalformed == null || !r.ok("rollout.dataset.shuffle_seed")) {
            return null;
        }
        return new RolloutSettings.Dataset(train, eval, seed, onMalformed);
    }

    private static List<Path> files(ConfigReader r, String key) {
        String allowed = "a list of existing, readable JSONL files (a single path is a list of one)";
        List<String> names = r.strings(key, false, false, allowed);
        if (names == null) {
            return null;
        }
        List<Path> files = new ArrayList<>();
        boolean ok = true;
        for (String name : names) {
            try {
                Path p = Path.of(name);
                if (name.isBlank() || !Files.isRegularFile(p) || !Files.isReadable(p)) {
                    r.error(key, name, allowed);
                    ok = false;
                } else {
                    files.add(p);
                }
            } catch (InvalidPathException e) {
                r.error(key, name, allowed);
                ok = false;
            }
        }
        return ok ? files : null;
    }
}
