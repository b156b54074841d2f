package org.rollout.workflows;

import java.util.Arrays;

/** Token arrays for scripted outputs. */
final class IntArrays {
    private IntArrays() {}

    static int[] concat(int[]... parts) {
        int n = 0;
        for (int[] p : parts) {
            n += p.length;
        }
        int[] out = new int[n];
        int at = 0;
        for (int[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    static int[] filled(int value, int count) {
        int[] out = new int[count];
        Arrays.fill(out, value);
        return out;
    }
}
