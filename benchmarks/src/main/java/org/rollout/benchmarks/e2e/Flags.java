package org.rollout.benchmarks.e2e;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.rollout.modelserver.LengthDistribution;

/**
 * The values of one benchmark's {@link Flag}s: each declared flag's default, overridden by the
 * {@code --name value} or {@code --name=value} arguments the {@code bench} command parsed
 * ({@link EndToEndBenchmarks#commandLine()}). The typed getters throw {@link
 * IllegalArgumentException} naming the flag, the value and what is allowed. Immutable.
 */
public final class Flags {
    private final String benchmark;
    private final Map<String, String> values;

    private Flags(String benchmark, Map<String, String> values) {
        this.benchmark = benchmark;
        this.values = values;
    }

    /**
     * The values of the flags {@code declared} by {@code benchmark}: each flag's default, overridden
     * by {@code given} (flag name without dashes → value, as the {@code bench} command parsed them).
     *
     * @throws IllegalArgumentException for a given name that is not declared
     */
    public static Flags of(String benchmark, List<Flag> declared, Map<String, String> given) {
        Map<String, String> values = new LinkedHashMap<>();
        for (Flag f : declared) {
            values.put(f.name(), f.defaultValue());
        }
        given.forEach((name, value) -> {
            if (!values.containsKey(name)) {
                throw new IllegalArgumentException("bench " + benchmark + ": unknown flag --" + name + " (known: --"
                        + String.join(", --", values.keySet()) + ")");
            }
            values.put(name, value);
        });
        return new Flags(benchmark, values);
    }

    /** Every flag and its value, in declaration order. */
    public Map<String, String> all() {
        return Map.copyOf(values);
    }

    /** Appends {@code name=value} for every flag, in declaration order. */
    public SummaryLine appendTo(SummaryLine line) {
        values.forEach(line::put);
        return line;
    }

    public String string(String name) {
        String v = values.get(name);
        if (v == null) {
            throw new IllegalArgumentException("bench " + benchmark + " has no flag --" + name);
        }
        return v;
    }

    /** The integer value of {@code --name}, at least {@code min}. */
    public int integer(String name, int min) {
        String v = string(name);
        try {
            int i = Integer.parseInt(v.strip());
            if (i >= min) {
                return i;
            }
        } catch (NumberFormatException e) {
            // reported below with what is allowed
        }
        throw new IllegalArgumentException(
                "bench " + benchmark + ": --" + name + " must be an integer >= " + min + ", got '" + v + "'");
    }

    /** The long value of {@code --name}, at least {@code min}. */
    public long longValue(String name, long min) {
        String v = string(name);
        try {
            long l = Long.parseLong(v.strip());
            if (l >= min) {
                return l;
            }
        } catch (NumberFormatException e) {
            // reported below with what is allowed
        }
        throw new IllegalArgumentException(
                "bench " + benchmark + ": --" + name + " must be an integer >= " + min + ", got '" + v + "'");
    }

    /** The finite decimal value of {@code --name}, at least {@code min}. */
    public double decimal(String name, double min) {
        String v = string(name);
        try {
            double d = Double.parseDouble(v.strip());
            if (Double.isFinite(d) && d >= min) {
                return d;
            }
        } catch (NumberFormatException e) {
            // reported below with what is allowed
        }
        throw new IllegalArgumentException(
                "bench " + benchmark + ": --" + name + " must be a number >= " + min + ", got '" + v + "'");
    }

    /** The output length distribution spelt by {@code --name} ({@link LengthDistribution#parse}). */
    public LengthDistribution lengths(String name) {
        try {
            return LengthDistribution.parse(string(name));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("bench " + benchmark + ": --" + name + ": " + e.getMessage(), e);
        }
    }
}
