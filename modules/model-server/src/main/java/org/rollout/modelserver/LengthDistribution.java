package org.rollout.modelserver;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.random.RandomGenerator;

/**
 * A distribution of output lengths in tokens, for {@link OutputLengths}: the long-tailed shapes of
 * reasoning-model outputs that benchmarks need and a tiny model cannot produce by itself. Every
 * draw is an integer {@code >= 1}; a request's {@code max_new_tokens} caps it later. Immutable.
 *
 * <p>Spelled on command lines as {@code lognormal:median=256,sigma=1}, {@code pareto:min=64,alpha=1.5}
 * or {@code fixed:length=100} ({@link #parse}; {@link #spec()} gives the same form back).
 */
public sealed interface LengthDistribution {

    /** One draw, {@code >= 1}. */
    int sample(RandomGenerator random);

    /** The command-line form, which {@link #parse} reads back to an equal distribution. */
    String spec();

    /**
     * Log-normal: {@code round(median · exp(sigma · Z))}, {@code Z} standard normal, at least 1. Mean
     * {@code median · exp(sigma²/2)}; {@code sigma = 1} puts the 99th percentile at about 10× the
     * median.
     *
     * @param median the median length in tokens, {@code >= 1}
     * @param sigma the standard deviation of the log, {@code >= 0}
     */
    record LogNormal(double median, double sigma) implements LengthDistribution {
        public LogNormal {
            requireFinite("median", median, median >= 1, ">= 1");
            requireFinite("sigma", sigma, sigma >= 0, ">= 0");
        }

        @Override
        public int sample(RandomGenerator random) {
            return clamp(median * Math.exp(sigma * random.nextGaussian()));
        }

        @Override
        public String spec() {
            return "lognormal:median=" + number(median) + ",sigma=" + number(sigma);
        }
    }

    /**
     * Pareto (type I): {@code round(min / U^(1/alpha))}, {@code U} uniform in (0, 1]. Heavier tailed
     * than the log-normal: with {@code alpha <= 1} the mean is infinite (only the cap bounds it).
     *
     * @param min the smallest length, {@code >= 1}
     * @param alpha the tail index, {@code > 0}
     */
    record Pareto(double min, double alpha) implements LengthDistribution {
        public Pareto {
            requireFinite("min", min, min >= 1, ">= 1");
            requireFinite("alpha", alpha, alpha > 0, "> 0");
        }

        @Override
        public int sample(RandomGenerator random) {
            double u = 1.0 - random.nextDouble(); // (0, 1]
            return clamp(min / Math.pow(u, 1.0 / alpha));
        }

        @Override
        public String spec() {
            return "pareto:min=" + number(min) + ",alpha=" + number(alpha);
        }
    }

    /**
     * Always {@code length} (tests, and a no-variance baseline).
     *
     * @param length the length, {@code >= 1}
     */
    record Fixed(int length) implements LengthDistribution {
        public Fixed {
            if (length < 1) {
                throw new IllegalArgumentException(
                        "output length distribution fixed: length must be >= 1, got " + length);
            }
        }

        @Override
        public int sample(RandomGenerator random) {
            return length;
        }

        @Override
        public String spec() {
            return "fixed:length=" + length;
        }
    }

    /**
     * Reads {@code lognormal:median=M,sigma=S}, {@code pareto:min=M,alpha=A} or {@code fixed:length=N}
     * (case-insensitive names, parameters in any order, each exactly once).
     *
     * @throws IllegalArgumentException quoting the spec and saying what is allowed
     */
    static LengthDistribution parse(String spec) {
        String allowed = "lognormal:median=M,sigma=S | pareto:min=M,alpha=A | fixed:length=N";
        if (spec == null || spec.isBlank()) {
            throw new IllegalArgumentException("output length distribution is empty (allowed: " + allowed + ")");
        }
        String s = spec.strip();
        int colon = s.indexOf(':');
        String kind = (colon < 0 ? s : s.substring(0, colon)).toLowerCase(Locale.ROOT);
        Map<String, Double> params = new LinkedHashMap<>();
        if (colon >= 0) {
            for (String part : s.substring(colon + 1).split(",")) {
                int eq = part.indexOf('=');
                if (eq < 0) {
                    throw new IllegalArgumentException("output length distribution '" + spec + "': parameter '"
                            + part.strip() + "' is not name=value (allowed: " + allowed + ")");
                }
                String name = part.substring(0, eq).strip().toLowerCase(Locale.ROOT);
                double value;
                try {
                    value = Double.parseDouble(part.substring(eq + 1).strip());
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("output length distribution '" + spec + "': " + name
                            + " is not a number (allowed: " + allowed + ")");
                }
                if (params.put(name, value) != null) {
                    throw new IllegalArgumentException(
                            "output length distribution '" + spec + "': " + name + " is given twice");
                }
            }
        }
        return switch (kind) {
            case "lognormal" -> {
                expect(spec, params, "median", "sigma");
                yield new LogNormal(params.get("median"), params.get("sigma"));
            }
            case "pareto" -> {
                expect(spec, params, "min", "alpha");
                yield new Pareto(params.get("min"), params.get("alpha"));
            }
            case "fixed" -> {
                expect(spec, params, "length");
                double n = params.get("length");
                if (n != Math.rint(n) || n < 1 || n > Integer.MAX_VALUE) {
                    throw new IllegalArgumentException(
                            "output length distribution '" + spec + "': length must be an integer >= 1");
                }
                yield new Fixed((int) n);
            }
            default ->
                throw new IllegalArgumentException("output length distribution '" + spec + "': unknown kind '" + kind
                        + "' (allowed: " + allowed + ")");
        };
    }

    private static void expect(String spec, Map<String, Double> params, String... names) {
        if (!params.keySet().equals(new HashSet<>(List.of(names)))) {
            throw new IllegalArgumentException("output length distribution '" + spec + "': expected exactly the "
                    + "parameters " + String.join(", ", names) + ", got " + params.keySet());
        }
    }

    private static void requireFinite(String name, double value, boolean ok, String allowed) {
        if (!Double.isFinite(value) || !ok) {
            throw new IllegalArgumentException(
                    "output length distribution: " + name + " must be a finite number " + allowed + ", got " + value);
        }
    }

    private static int clamp(double length) {
        if (!(length < Integer.MAX_VALUE)) {
            return Integer.MAX_VALUE;
        }
        return (int) Math.max(1, Math.round(length));
    }

    private static String number(double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
    }
}
