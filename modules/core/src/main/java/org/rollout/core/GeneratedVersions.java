package org.rollout.core;

import java.util.Optional;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;

/**
 * The generated-version range of trajectory rows: the smallest ({@code head}) and largest
 * ({@code tail}) weight version over generated tokens, the positions with {@code loss_mask == 1}
 * (and, when the rows have one, a true {@code attention_mask}). A group's {@code head_version} and
 * {@code tail_version}, a dump record's and the invariant checker's all come from here.
 *
 * <pre>
 *   loss_mask   0  0  1  1  0  1
 *   versions   -1 -1  6  5 -1  7      → head 5, tail 7
 * </pre>
 *
 * <p>Stateless and thread-safe.
 *
 * @param head the smallest version over generated tokens
 * @param tail the largest version over generated tokens
 */
public record GeneratedVersions(int head, int tail) {

    /**
     * The range over all rows of {@code rows}; empty when there is no {@code versions} or
     * {@code loss_mask} key, when their sizes differ, or when no token was generated.
     */
    public static Optional<GeneratedVersions> of(TensorDict rows) {
        Tensor versions = rows.get(TensorDict.VERSIONS);
        Tensor mask = rows.get(TensorDict.LOSS_MASK);
        Tensor attention = rows.get(TensorDict.ATTENTION_MASK);
        if (versions == null || mask == null || versions.numel() != mask.numel()) {
            return Optional.empty();
        }
        boolean useAttention = attention != null && attention.numel() == mask.numel();
        int lo = Integer.MAX_VALUE;
        int hi = Integer.MIN_VALUE;
        for (int k = 0; k < mask.numel(); k++) {
            if (mask.getLong(k) == 1 && (!useAttention || attention.getLong(k) != 0)) {
                int v = (int) versions.getLong(k);
                lo = Math.min(lo, v);
                hi = Math.max(hi, v);
            }
        }
        return lo > hi ? Optional.empty() : Optional.of(new GeneratedVersions(lo, hi));
    }

    /** The range of {@code versions[k]} over {@code k < length} where {@code lossMask[k] == 1}; empty when none is. */
    public static Optional<GeneratedVersions> of(int[] versions, int[] lossMask, int length) {
        int lo = Integer.MAX_VALUE;
        int hi = Integer.MIN_VALUE;
        for (int k = 0; k < length; k++) {
            if (lossMask[k] == 1) {
                lo = Math.min(lo, versions[k]);
                hi = Math.max(hi, versions[k]);
            }
        }
        return lo > hi ? Optional.empty() : Optional.of(new GeneratedVersions(lo, hi));
    }

    /** The range covering this one and {@code other}; this one when {@code other} is null. */
    public GeneratedVersions union(GeneratedVersions other) {
        return other == null ? this : new GeneratedVersions(Math.min(head, other.head), Math.max(tail, other.tail));
    }

    /** {@code [head, tail]} of {@code rows}, or {@code [fallback, fallback]} when {@link #of(TensorDict)} is empty. */
    public static int[] range(TensorDict rows, int fallback) {
        return of(rows).map(r -> new int[] {r.head, r.tail}).orElse(new int[] {fallback, fallback});
    }
}
