package org.rollout.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * Run-length encoding of the weight versions of generated tokens, as a dump record's
 * {@code version_rle} (semantics §7): {@code [[5, 2], [6, 1]]} means two tokens from version 5, then one
 * from version 6.
 *
 * <pre>
 *   loss_mask   0  0  1  1  0  0  1  1
 *   versions   -1 -1  5  5 -1 -1  5  6      (context positions carry −1)
 *   kept                5  5        5  6    only mask == 1
 *   rle                [[5, 3], [6, 1]]     runs merge across the context gap
 * </pre>
 *
 * <p>An encoding is canonical: every run has {@code count ≥ 1} and adjacent runs have different
 * versions, so {@code encode(decode(runs)) == runs} for any canonical list and
 * {@code decode(encode(v)) == v} for any array. Stateless and thread-safe; returned lists are
 * immutable.
 */
public final class VersionRle {

    private VersionRle() {}

    /**
     * {@code count} consecutive tokens generated under weight {@code version}.
     *
     * @throws IllegalArgumentException when {@code count < 1}
     */
    public record Run(int version, int count) {
        public Run {
            if (count < 1) {
                throw new IllegalArgumentException(
                        "a version run needs count >= 1, got [" + version + ", " + count + "]");
            }
        }

        /** The {@code [version, count]} pair as it appears in JSON. */
        public int[] toPair() {
            return new int[] {version, count};
        }

        @Override
        public String toString() {
            return "[" + version + ", " + count + "]";
        }
    }

    /** The runs of {@code versions}, in order; empty for an empty array. */
    public static List<Run> encode(int[] versions) {
        return encode(versions, null, versions.length);
    }

    /**
     * The runs of {@code versions[k]} over the positions {@code k < length} where
     * {@code lossMask[k] == 1} (generated tokens); other positions (prompt, context, padding) are
     * left out, so equal versions on both sides of a context gap form one run.
     *
     * @throws IllegalArgumentException when {@code length} is negative or longer than either array
     */
    public static List<Run> encode(int[] versions, int[] lossMask, int length) {
        if (length < 0 || length > versions.length || (lossMask != null && length > lossMask.length)) {
            throw new IllegalArgumentException("length " + length + " is outside versions (" + versions.length + ")"
                    + (lossMask != null ? " or loss_mask (" + lossMask.length + ")" : ""));
        }
        List<Run> runs = new ArrayList<>();
        int current = 0;
        int count = 0;
        for (int k = 0; k < length; k++) {
            if (lossMask != null && lossMask[k] != 1) {
                continue;
            }
            if (count > 0 && versions[k] == current) {
                count++;
            } else {
                if (count > 0) {
                    runs.add(new Run(current, count));
                }
                current = versions[k];
                count = 1;
            }
        }
        if (count > 0) {
            runs.add(new Run(current, count));
        }
        return Collections.unmodifiableList(runs);
    }

    /**
     * One version per token, run after run.
     *
     * @throws IllegalArgumentException when the counts add up to more than an array can hold
     */
    public static int[] decode(List<Run> runs) {
        long total = totalCount(runs);
        if (total > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("version runs add up to " + total + " tokens, too many to decode");
        }
        int[] out = new int[(int) total];
        int at = 0;
        for (Run r : runs) {
            Arrays.fill(out, at, at + r.count(), r.version());
            at += r.count();
        }
        return out;
    }

    /** The number of tokens the runs describe. */
    public static long totalCount(List<Run> runs) {
        long total = 0;
        for (Run r : runs) {
            total += r.count();
        }
        return total;
    }

    /** True when no run is followed by a run of the same version (counts are ≥ 1 by construction). */
    public static boolean isCanonical(List<Run> runs) {
        for (int k = 1; k < runs.size(); k++) {
            if (runs.get(k).version() == runs.get(k - 1).version()) {
                return false;
            }
        }
        return true;
    }

    /** The JSON-friendly form: one {@code [version, count]} array per run. */
    public static List<int[]> toPairs(List<Run> runs) {
        List<int[]> pairs = new ArrayList<>(runs.size());
        for (Run r : runs) {
            pairs.add(r.toPair());
        }
        return pairs;
    }

    /**
     * Runs from {@code [version, count]} pairs.
     *
     * @throws IllegalArgumentException naming the index of a pair that is not two ints with count ≥ 1
     */
    public static List<Run> fromPairs(List<int[]> pairs) {
        List<Run> runs = new ArrayList<>(pairs.size());
        for (int k = 0; k < pairs.size(); k++) {
            int[] p = pairs.get(k);
            if (p == null || p.length != 2) {
                throw new IllegalArgumentException("version run " + k + " must be a [version, count] pair, got "
                        + (p == null ? "null" : Arrays.toString(p)));
            }
            if (p[1] < 1) {
                throw new IllegalArgumentException("version run " + k + " needs count >= 1, got " + Arrays.toString(p));
            }
            runs.add(new Run(p[0], p[1]));
        }
        return Collections.unmodifiableList(runs);
    }
}
