package org.rollout.inference;

import java.util.Arrays;

/** The tokens, logprobs and versions accumulated across segments; owned by one generate call. */
final class GeneratedTokens {
    int[] tokens;
    float[] logprobs;
    int[] versions;
    int size;

    GeneratedTokens(int capacity) {
        tokens = new int[capacity];
        logprobs = new float[capacity];
        versions = new int[capacity];
    }

    void append(GeneratedSegment s, int version) {
        int n = s.length();
        int needed = size + n;
        if (needed > tokens.length) {
            int capacity = Math.max(needed, tokens.length * 2);
            tokens = Arrays.copyOf(tokens, capacity);
            logprobs = Arrays.copyOf(logprobs, capacity);
            versions = Arrays.copyOf(versions, capacity);
        }
        s.copyTokensTo(tokens, size);
        s.copyLogprobsTo(logprobs, size);
        Arrays.fill(versions, size, needed, version);
        size = needed;
    }

    int[] tokens() {
        return Arrays.copyOf(tokens, size);
    }

    float[] logprobs() {
        return Arrays.copyOf(logprobs, size);
    }

    int[] versions() {
        return Arrays.copyOf(versions, size);
    }
}
