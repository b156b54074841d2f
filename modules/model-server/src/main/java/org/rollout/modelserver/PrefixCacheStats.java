package org.rollout.modelserver;

/**
 * A snapshot of a model server's prefix cache ({@link RadixCache}), as {@code GET /get_server_info}
 * serves it under {@code prefix_cache}. Counters count since start.
 *
 * @param capacityTokens the most tokens the cache holds; 0 when it is off
 * @param cachedTokens tokens held now, in every namespace
 * @param lockedTokens of those, tokens on the paths of running requests (not evictable)
 * @param promptTokens prompt tokens of the requests admitted
 * @param hitTokens of those, tokens found in the cache (reported as {@code cached_tokens}; their
 *     prefill was not charged)
 * @param evictedTokens tokens evicted to make room (not counting flushes)
 * @param flushes times the whole cache was dropped (weight updates)
 */
public record PrefixCacheStats(
        long capacityTokens,
        long cachedTokens,
        long lockedTokens,
        long promptTokens,
        long hitTokens,
        long evictedTokens,
        long flushes) {

    /** {@code hitTokens / promptTokens}, 0 before the first request. */
    public double hitRate() {
        return promptTokens == 0 ? 0 : hitTokens / (double) promptTokens;
    }
}
