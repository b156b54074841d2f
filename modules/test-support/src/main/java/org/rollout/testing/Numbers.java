package org.rollout.testing;

import java.util.SplittableRandom;

/** The number draws behind {@link Gen}'s numeric generators. */
final class Numbers {
    private Numbers() {}

    /** One draw in eight is an edge value, the rest are uniform. */
    private static final int EDGE_ONE_IN = 8;

    private static final double[] DOUBLE_EDGES = {
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.1,
        0.5,
        Math.nextDown(1.0),
        Math.nextUp(1.0),
        Double.MIN_VALUE,
        -Double.MIN_VALUE,
        Double.MIN_NORMAL,
        -Double.MIN_NORMAL,
        Math.nextDown(Double.MIN_NORMAL),
        Double.MAX_VALUE,
        -Double.MAX_VALUE,
        0x1p53,
        Math.nextUp(0x1p53),
        Double.NaN,
        Double.POSITIVE_INFINITY,
        Double.NEGATIVE_INFINITY,
    };

    private static final float[] FLOAT_EDGES = {
        0f,
        -0f,
        1f,
        -1f,
        0.1f,
        0.5f,
        Math.nextDown(1f),
        Math.nextUp(1f),
        Float.MIN_VALUE,
        -Float.MIN_VALUE,
        Float.MIN_NORMAL,
        -Float.MIN_NORMAL,
        Math.nextDown(Float.MIN_NORMAL),
        Float.MAX_VALUE,
        -Float.MAX_VALUE,
        0x1p24f,
        Math.nextUp(0x1p24f),
        Float.NaN,
        Float.POSITIVE_INFINITY,
        Float.NEGATIVE_INFINITY,
    };

    static long clamp(long value, long min, long max) {
        return Math.max(min, Math.min(max, value));
    }

    /** Uniform in {@code [min, max]}, both included, for any bounds (the full range too). */
    static long uniformLong(SplittableRandom random, long min, long max) {
        if (max < Long.MAX_VALUE) {
            return random.nextLong(min, max + 1);
        }
        if (min > Long.MIN_VALUE) {
            return random.nextLong(min - 1, max) + 1;
        }
        return random.nextLong();
    }

    /** In {@code [min, max]}: mostly uniform, sometimes a bound, zero or ±1 (clamped into range). */
    static long drawLong(SplittableRandom random, long min, long max) {
        if (random.nextInt(EDGE_ONE_IN) != 0) {
            return uniformLong(random, min, max);
        }
        return switch (random.nextInt(7)) {
            case 0 -> min;
            case 1 -> max;
            case 2 -> clamp(0, min, max);
            case 3 -> clamp(1, min, max);
            case 4 -> clamp(-1, min, max);
            case 5 -> min == max ? min : min + 1;
            default -> min == max ? max : max - 1;
        };
    }

    /** In {@code [min, max]} (finite): mostly uniform, sometimes a bound, zero or ±1 when inside. */
    static double drawDouble(SplittableRandom random, double min, double max) {
        if (random.nextInt(EDGE_ONE_IN) == 0) {
            double edge = switch (random.nextInt(5)) {
                case 0 -> min;
                case 1 -> max;
                case 2 -> 0.0;
                case 3 -> 1.0;
                default -> -1.0;
            };
            if (edge >= min && edge <= max) {
                return edge;
            }
        }
        double u = random.nextDouble();
        double span = max - min;
        // Interpolating from the bounds avoids the overflow of max - min on very wide ranges.
        double value = Double.isFinite(span) ? min + u * span : min * (1 - u) + max * u;
        return Math.max(min, Math.min(max, value));
    }

    static double drawAnyDouble(SplittableRandom random) {
        int kind = random.nextInt(20);
        if (kind < 3) {
            return DOUBLE_EDGES[random.nextInt(DOUBLE_EDGES.length)];
        }
        if (kind < 10) {
            return Double.longBitsToDouble(random.nextLong());
        }
        if (kind < 15) {
            return Double.parseDouble(shortDecimal(random));
        }
        return random.nextDouble(-1e6, 1e6);
    }

    static float drawAnyFloat(SplittableRandom random) {
        int kind = random.nextInt(20);
        if (kind < 3) {
            return FLOAT_EDGES[random.nextInt(FLOAT_EDGES.length)];
        }
        if (kind < 10) {
            return Float.intBitsToFloat(random.nextInt());
        }
        if (kind < 15) {
            return Float.parseFloat(shortDecimal(random));
        }
        return (float) random.nextDouble(-1e6, 1e6);
    }

    /**
     * A decimal with at most seven significant digits and an exponent in [-40, 40], such as
     * {@code -1234E-9}: the kind of number people write, whose shortest spelling formatters must
     * find.
     */
    private static String shortDecimal(SplittableRandom random) {
        long digits = random.nextLong(-9_999_999, 10_000_000);
        return digits + "E" + random.nextInt(-40, 41);
    }
}
