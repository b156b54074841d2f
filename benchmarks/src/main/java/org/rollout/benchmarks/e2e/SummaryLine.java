package org.rollout.benchmarks.e2e;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The one line an end-to-end benchmark prints for scripts: {@code RESULT bench=<name>} followed by
 * space-separated {@code key=value} pairs in the order they were put (results first, then every
 * workload flag, then targets and verdicts). Values never contain spaces (they are replaced by
 * {@code _}); numbers are printed with up to four decimals. {@link #parse} reads a line back.
 *
 * <p>Not thread-safe; build it on one thread.
 */
public final class SummaryLine {
    /** The first word of every summary line. */
    public static final String PREFIX = "RESULT";

    private final Map<String, String> values = new LinkedHashMap<>();

    public SummaryLine(String benchmark) {
        values.put("bench", benchmark);
    }

    /** Sets {@code key} (a word of {@code [a-z0-9_-]}) to {@code value}. */
    public SummaryLine put(String key, Object value) {
        if (!key.matches("[a-z0-9_-]+")) {
            throw new IllegalArgumentException("a summary key is [a-z0-9_-]+, got '" + key + "'");
        }
        values.put(key, format(value));
        return this;
    }

    /** The value put under {@code key}, or null. */
    public String get(String key) {
        return values.get(key);
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder(PREFIX);
        values.forEach((k, v) -> b.append(' ').append(k).append('=').append(v));
        return b.toString();
    }

    /**
     * The pairs of a line printed by {@link #toString()}, in order.
     *
     * @throws IllegalArgumentException when the line does not start with {@value #PREFIX} or a word is
     *     not {@code key=value}
     */
    public static Map<String, String> parse(String line) {
        String[] words = line.strip().split(" +");
        if (words.length < 2 || !words[0].equals(PREFIX)) {
            throw new IllegalArgumentException("not a summary line (it starts with '" + PREFIX + " bench='): " + line);
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (int i = 1; i < words.length; i++) {
            int eq = words[i].indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("summary word '" + words[i] + "' is not key=value");
            }
            out.put(words[i].substring(0, eq), words[i].substring(eq + 1));
        }
        return out;
    }

    private static String format(Object value) {
        String s;
        if (value instanceof Double || value instanceof Float) {
            double d = ((Number) value).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                s = Double.toString(d);
            } else if (d == Math.rint(d) && Math.abs(d) < 1e12) {
                s = Long.toString((long) d);
            } else {
                s = String.format(Locale.ROOT, "%.4f", d).replaceAll("0+$", "");
            }
        } else {
            s = String.valueOf(value);
        }
        return s.isEmpty() ? "-" : s.replace(' ', '_');
    }
}
