package org.rollout.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The trained weight files of a {@code rollout local} run ({@code weights/v{n}.rlm}), of which the
 * newest {@code rollout.local.keep_weights} are kept. A file is deleted only once a newer version is
 * published to every server (so no server can still be asked to load it): the current version's
 * file, and any file newer than it (one being written), are never deleted.
 */
final class WeightFiles {
    private static final Pattern NAME = Pattern.compile("v(\\d+)\\.rlm");

    private final Path dir;
    private final int keep;
    private int removed;

    /**
     * @param dir the run's weights directory
     * @param keep the newest files to keep, at least 1
     */
    WeightFiles(Path dir, int keep) {
        if (keep < 1) {
            throw new IllegalArgumentException("rollout.local.keep_weights must be >= 1, got " + keep);
        }
        this.dir = dir;
        this.keep = keep;
    }

    /**
     * Deletes the weight files older than the newest {@code keep} among those up to {@code
     * current}, the version every server now serves.
     *
     * @return how many files this call deleted
     */
    synchronized int prune(int current) throws IOException {
        TreeMap<Integer, Path> upToCurrent = new TreeMap<>();
        for (var e : versions().entrySet()) {
            if (e.getKey() <= current) {
                upToCurrent.put(e.getKey(), e.getValue());
            }
        }
        int deleted = 0;
        while (upToCurrent.size() > keep) {
            Path oldest = upToCurrent.pollFirstEntry().getValue();
            if (Files.deleteIfExists(oldest)) {
                deleted++;
            }
        }
        removed += deleted;
        return deleted;
    }

    /** The weight files now in the directory, by version. */
    TreeMap<Integer, Path> versions() throws IOException {
        TreeMap<Integer, Path> found = new TreeMap<>();
        if (!Files.isDirectory(dir)) {
            return found;
        }
        try (Stream<Path> files = Files.list(dir)) {
            for (Path p : (Iterable<Path>) files::iterator) {
                Matcher m = NAME.matcher(p.getFileName().toString());
                if (m.matches()) {
                    found.put(Integer.parseInt(m.group(1)), p);
                }
            }
        }
        return found;
    }

    /** Files deleted so far. */
    synchronized int removed() {
        return removed;
    }

    int keep() {
        return keep;
    }

    /**
     * The summary's line for the weights: which versions are kept, how many were deleted, and the
     * key that says how many are kept.
     */
    String summaryLine() {
        List<Integer> kept;
        try {
            kept = new ArrayList<>(versions().keySet());
        } catch (IOException e) {
            kept = List.of();
        }
        String which = kept.isEmpty()
                ? "none"
                : kept.size() == 1
                        ? "v" + kept.get(0)
                        : kept.size() + " (v" + kept.get(0) + "..v" + kept.getLast() + ")";
        return "weights/v{n}.rlm                   trained weights kept: " + which + "; " + removed()
                + " older deleted (rollout.local.keep_weights = " + keep + ")";
    }
}
