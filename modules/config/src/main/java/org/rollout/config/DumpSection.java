package org.rollout.config;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;

/**
 * The dump and stats keys of the {@code rollout} section: {@code experiment_name}, {@code
 * trial_name}, {@code fileroot} and {@code dump_to_file}, which together name the run directory
 * ({@code {fileroot}/{experiment_name}/{trial_name}}, semantics §7).
 *
 * @param experimentName null when it failed
 * @param trialName null when it failed
 * @param fileroot null when it failed
 * @param dumpToFile null when it failed
 */
record DumpSection(String experimentName, String trialName, Path fileroot, Boolean dumpToFile) {
    private static final String DIRECTORY_NAME = "a single directory name (no '/', '\\', '.' or '..')";

    /** Reads the four keys, in reference.conf order; a key that fails is null. */
    static DumpSection read(ConfigReader r) {
        String experiment = directoryName(r, "rollout.experiment_name");
        String trial = directoryName(r, "rollout.trial_name");
        Path fileroot = path(r, "rollout.fileroot");
        Boolean dump = r.bool("rollout.dump_to_file");
        return new DumpSection(experiment, trial, fileroot, dump);
    }

    /** With {@code dump_to_file} on, the names and the root must be non-blank. */
    void checkCombinations(ConfigReader r) {
        if (!Boolean.TRUE.equals(dumpToFile)) {
            return;
        }
        requireNonBlankForDump(r, "rollout.experiment_name", experimentName);
        requireNonBlankForDump(r, "rollout.trial_name", trialName);
        if (fileroot != null && fileroot.toString().isBlank()) {
            r.error("rollout.fileroot", fileroot.toString(), "a non-blank path while rollout.dump_to_file is true");
        }
    }

    private static String directoryName(ConfigReader r, String key) {
        String v = r.string(key, false, "a string: " + DIRECTORY_NAME);
        if (v != null && !v.isBlank() && (v.contains("/") || v.contains("\\") || v.equals(".") || v.equals(".."))) {
            r.error(key, v, DIRECTORY_NAME);
            return null;
        }
        return v;
    }

    private static void requireNonBlankForDump(ConfigReader r, String key, String value) {
        if (value != null && value.isBlank()) {
            r.error(
                    key,
                    value,
                    "a non-blank single directory name (no '/', '\\', '.' or '..') while rollout.dump_to_file is"
                            + " true");
        }
    }

    private static Path path(ConfigReader r, String key) {
        String v = r.string(key, false, "a path");
        if (v == null) {
            return null;
        }
        try {
            return Path.of(v);
        } catch (InvalidPathException e) {
            r.error(key, v, "a valid path (" + e.getReason() + ")");
            return null;
        }
    }
}
