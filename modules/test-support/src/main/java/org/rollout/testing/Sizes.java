package org.rollout.testing;

import java.util.SplittableRandom;

/** Sizes of generated lists, arrays and strings: uniform, with the bounds themselves often. */
final class Sizes {
    private Sizes() {}

    static void check(int minSize, int maxSize) {
        if (minSize < 0 || minSize > maxSize) {
            throw new IllegalArgumentException("need 0 <= minSize <= maxSize, got [" + minSize + ", " + maxSize + "]");
        }
    }

    /** A size in {@code [min, max]}; each bound one time in ten, because empty and full are edges. */
    static int draw(SplittableRandom random, int min, int max) {
        int pick = random.nextInt(10);
        if (pick == 0) {
            return min;
        }
        if (pick == 1) {
            return max;
        }
        return (int) Numbers.uniformLong(random, min, max);
    }
}
