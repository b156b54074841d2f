package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class RadixCacheTest {
    private static final String BASE = "base";
    private static final String ADAPTER = "adapter-a";

    private static int[] ids(int... tokens) {
        return tokens;
    }

    @Test
    void aCachedPrefixIsFoundUpToTheLimit() {
        RadixCache cache = new RadixCache(100);
        assertThat(cache.insert(BASE, ids(1, 2, 3, 4, 5))).isEqualTo(5);

        assertThat(cache.match(BASE, ids(1, 2, 3, 4, 5, 6, 7), 100)).isEqualTo(5);
        assertThat(cache.match(BASE, ids(1, 2, 3, 4, 5, 6, 7), 3))
                .as("capped by the limit")
                .isEqualTo(3);
        assertThat(cache.match(BASE, ids(1, 2, 3), 100))
                .as("a prompt ending inside an edge")
                .isEqualTo(3);
    }

    @Test
    void aMissFindsNothing() {
        RadixCache cache = new RadixCache(100);
        assertThat(cache.match(BASE, ids(1, 2, 3), 100)).as("empty cache").isZero();
        cache.insert(BASE, ids(1, 2, 3));
        assertThat(cache.match(BASE, ids(2, 1, 3), 100)).isZero();
        assertThat(cache.match(BASE, ids(1, 2, 3), 0)).isZero();
    }

    @Test
    void aPartialHitSplitsTheEdgeAndBothSequencesShareThePrefix() {
        RadixCache cache = new RadixCache(100);
        cache.insert(BASE, ids(1, 2, 3, 4));
        assertThat(cache.match(BASE, ids(1, 2, 9, 9), 100)).isEqualTo(2);

        assertThat(cache.insert(BASE, ids(1, 2, 9, 9))).isEqualTo(4);

        assertThat(cache.stats().cachedTokens())
                .as("1 2 is held once: 4 + 2 tokens")
                .isEqualTo(6);
        assertThat(cache.match(BASE, ids(1, 2, 3, 4), 100)).isEqualTo(4);
        assertThat(cache.match(BASE, ids(1, 2, 9, 9), 100)).isEqualTo(4);
        assertThat(cache.match(BASE, ids(1, 2, 7), 100)).isEqualTo(2);
    }

    @Test
    void namespacesNeverSeeEachOthersPrefixes() {
        RadixCache cache = new RadixCache(100);
        cache.insert(BASE, ids(1, 2, 3, 4));
        cache.insert(ADAPTER, ids(5, 6, 7));

        assertThat(cache.match(ADAPTER, ids(1, 2, 3, 4), 100)).isZero();
        assertThat(cache.match("adapter-b", ids(1, 2, 3, 4), 100)).isZero();
        assertThat(cache.match(BASE, ids(5, 6, 7), 100)).isZero();
        assertThat(cache.match(ADAPTER, ids(5, 6, 7), 100)).isEqualTo(3);
    }

    @Test
    void theLeastRecentlyUsedLeafIsEvictedFirst() {
        RadixCache cache = new RadixCache(6);
        cache.insert(BASE, ids(1, 2, 3));
        cache.insert(BASE, ids(4, 5, 6));
        cache.match(BASE, ids(1, 2, 3), 100); // 1 2 3 is now the more recently used

        cache.insert(BASE, ids(7, 8, 9));

        assertThat(cache.match(BASE, ids(4, 5, 6), 100)).as("evicted").isZero();
        assertThat(cache.match(BASE, ids(1, 2, 3), 100)).isEqualTo(3);
        assertThat(cache.match(BASE, ids(7, 8, 9), 100)).isEqualTo(3);
        assertThat(cache.stats().evictedTokens()).isEqualTo(3);
        assertThat(cache.stats().cachedTokens()).isEqualTo(6);
    }

    @Test
    void evictionDropsWholeLeavesAndThenTheParentsTheyLeave() {
        RadixCache cache = new RadixCache(5);
        cache.insert(BASE, ids(1, 2, 3));
        cache.insert(BASE, ids(1, 2, 4)); // 1 2 → {3, 4}: 4 tokens
        cache.match(BASE, ids(1, 2, 4), 100);

        cache.insert(BASE, ids(7, 7)); // needs one more token: the leaf 3 goes

        assertThat(cache.match(BASE, ids(1, 2, 3), 100)).isEqualTo(2);
        assertThat(cache.match(BASE, ids(1, 2, 4), 100)).isEqualTo(3);
        assertThat(cache.stats().evictedTokens()).isEqualTo(1);

        // Least recently used first: 7 7 (inserted before the matches above), then the leaf 4, then
        // 1 2, a leaf once 4 is gone; four tokens are needed, five freed.
        cache.insert(BASE, ids(8, 8, 8, 8));

        assertThat(cache.match(BASE, ids(7, 7), 100)).isZero();
        assertThat(cache.match(BASE, ids(1, 2, 4), 100)).isZero();
        assertThat(cache.match(BASE, ids(8, 8, 8, 8), 100)).isEqualTo(4);
        assertThat(cache.stats().evictedTokens()).isEqualTo(1 + 2 + 1 + 2);
        assertThat(cache.stats().cachedTokens()).isEqualTo(4);
    }

    @Test
    void aLeafLongerThanTheRoomNeededIsEvictedWhole() {
        RadixCache cache = new RadixCache(4);
        cache.insert(BASE, ids(1, 2, 3, 4));

        cache.insert(BASE, ids(5, 6));

        assertThat(cache.match(BASE, ids(1, 2, 3, 4), 100)).isZero();
        assertThat(cache.stats().evictedTokens()).isEqualTo(4);
        assertThat(cache.stats().cachedTokens()).isEqualTo(2);
    }

    @Test
    void makingRoomBelowACachedPrefixNeverEvictsThatPrefix() {
        RadixCache cache = new RadixCache(4);
        cache.insert(BASE, ids(1, 2));

        assertThat(cache.insert(BASE, ids(1, 2, 3, 4, 5)))
                .as("1 2 is the only leaf, but the insertion extends it: it stays, two more fit")
                .isEqualTo(4);

        assertThat(cache.match(BASE, ids(1, 2, 3, 4, 5), 100)).isEqualTo(4);
        assertThat(cache.stats().evictedTokens()).isZero();
        assertThat(cache.stats().cachedTokens()).isEqualTo(4);
    }

    @Test
    void aRunningRequestsPathIsNeverEvictedAndOnlyWhatFitsIsInserted() {
        RadixCache cache = new RadixCache(6);
        RadixCache.Lease running = cache.admit(BASE, ids(1, 2, 3, 4), 3);
        assertThat(cache.stats().lockedTokens()).isEqualTo(4);

        assertThat(cache.insert(BASE, ids(5, 6, 7, 8)))
                .as("only two tokens of room beside the locked four")
                .isEqualTo(2);
        assertThat(cache.insert(BASE, ids(9, 9, 9)))
                .as("5 6 is evicted for it; the locked path is not")
                .isEqualTo(2);
        assertThat(cache.match(BASE, ids(1, 2, 3, 4), 100)).isEqualTo(4);
        assertThat(cache.stats().cachedTokens()).isEqualTo(6);

        cache.release(running, ids(1, 2, 3, 4));
        assertThat(cache.stats().lockedTokens()).isZero();
        assertThat(cache.insert(BASE, ids(5, 6, 7, 8)))
                .as("released, 1 2 3 4 may go")
                .isEqualTo(4);
        assertThat(cache.match(BASE, ids(1, 2, 3, 4), 100)).isZero();
    }

    @Test
    void splittingALockedEdgeKeepsBothPartsLocked() {
        RadixCache cache = new RadixCache(5);
        RadixCache.Lease running = cache.admit(BASE, ids(1, 2, 3, 4), 3);
        cache.insert(BASE, ids(1, 2, 9)); // 1 2 → {3 4 (locked), 9}

        assertThat(cache.insert(BASE, ids(8, 8, 8)))
                .as("only the leaf 9 may go: one token fits")
                .isEqualTo(1);

        assertThat(cache.match(BASE, ids(1, 2, 3, 4), 100)).isEqualTo(4);
        assertThat(cache.match(BASE, ids(1, 2, 9), 100)).isEqualTo(2);
        assertThat(cache.stats().lockedTokens()).isEqualTo(4);
        cache.release(running, null);
        assertThat(cache.stats().lockedTokens()).isZero();
    }

    @Test
    void admissionReportsTheHitWithinTheReusableLimitAndInsertsThePrompt() {
        RadixCache cache = new RadixCache(100);
        RadixCache.Lease first = cache.admit(BASE, ids(1, 2, 3, 4, 5), 4);
        assertThat(first.cachedTokens()).isZero();
        cache.release(first, ids(1, 2, 3, 4, 5, 6, 7));

        RadixCache.Lease again = cache.admit(BASE, ids(1, 2, 3, 4, 5), 4);
        RadixCache.Lease turn = cache.admit(BASE, ids(1, 2, 3, 4, 5, 6, 7, 8), 7);
        RadixCache.Lease scored = cache.admit(BASE, ids(1, 2, 3, 4, 5), 0);

        assertThat(again.cachedTokens()).as("all but the last prompt token").isEqualTo(4);
        assertThat(turn.cachedTokens()).as("the finished sequence was inserted").isEqualTo(7);
        assertThat(scored.cachedTokens()).isZero();
        PrefixCacheStats s = cache.stats();
        assertThat(s.promptTokens()).isEqualTo(5 + 5 + 8 + 5);
        assertThat(s.hitTokens()).isEqualTo(4 + 7);
        assertThat(s.hitRate()).isEqualTo(11 / 23.0);
    }

    @Test
    void releaseIsIdempotent() {
        RadixCache cache = new RadixCache(100);
        RadixCache.Lease lease = cache.admit(BASE, ids(1, 2, 3), 2);
        cache.release(lease, ids(1, 2, 3, 4));
        cache.release(lease, ids(1, 2, 3, 4, 5));

        assertThat(cache.stats().lockedTokens()).isZero();
        assertThat(cache.match(BASE, ids(1, 2, 3, 4, 5), 100)).isEqualTo(4);
    }

    @Test
    void aFlushDropsEveryNamespaceAndLeasesFromBeforeItInsertNothing() {
        RadixCache cache = new RadixCache(100);
        cache.insert(BASE, ids(1, 2, 3));
        cache.insert(ADAPTER, ids(4, 5, 6));
        RadixCache.Lease running = cache.admit(BASE, ids(1, 2, 3, 7), 3);

        cache.flush();

        assertThat(cache.match(BASE, ids(1, 2, 3), 100)).isZero();
        assertThat(cache.match(ADAPTER, ids(4, 5, 6), 100)).isZero();
        PrefixCacheStats s = cache.stats();
        assertThat(s.cachedTokens()).isZero();
        assertThat(s.lockedTokens()).isZero();
        assertThat(s.flushes()).isEqualTo(1);
        assertThat(s.evictedTokens()).as("a flush is not an eviction").isZero();

        cache.release(running, ids(1, 2, 3, 7, 8));
        assertThat(cache.match(BASE, ids(1, 2, 3, 7, 8), 100))
                .as("its KV came from the old weights")
                .isZero();
        assertThat(cache.stats().cachedTokens()).isZero();
        assertThat(cache.insert(BASE, ids(1, 2))).isEqualTo(2);
    }

    @Test
    void capacityZeroCachesNothing() {
        RadixCache cache = new RadixCache(0);
        RadixCache.Lease lease = cache.admit(BASE, ids(1, 2, 3), 2);
        cache.release(lease, ids(1, 2, 3, 4));

        assertThat(cache.admit(BASE, ids(1, 2, 3), 2).cachedTokens()).isZero();
        assertThat(cache.stats().cachedTokens()).isZero();
        assertThat(cache.stats().promptTokens()).isEqualTo(6);
    }

    @Test
    void aNegativeCapacityIsRefused() {
        assertThatThrownBy(() -> new RadixCache(-1)).hasMessageContaining("prefix cache capacity must be >= 0");
    }

    /**
     * Random admissions, insertions and releases over a small alphabet (so prefixes are shared and
     * edges split): the cache never holds more than its capacity, locks never go negative, a hit
     * never exceeds the reusable limit, and a sequence that fits beside the locked tokens is
     * inserted whole (everything unlocked can be evicted for it) and then found whole.
     */
    @Test
    void underRandomUseTheCapacityIsNeverExceeded() {
        SplittableRandom random = new SplittableRandom(11);
        int capacity = 40;
        RadixCache cache = new RadixCache(capacity);
        List<RadixCache.Lease> running = new ArrayList<>();
        List<int[]> prompts = new ArrayList<>();
        int wholeInsertions = 0;
        for (int op = 0; op < 5_000; op++) {
            String ns = random.nextInt(4) == 0 ? ADAPTER : BASE;
            int[] tokens = new int[1 + random.nextInt(12)];
            for (int i = 0; i < tokens.length; i++) {
                tokens[i] = random.nextInt(3);
            }
            int action = random.nextInt(4);
            if (action == 0 && running.size() < 3) {
                int reusable = random.nextInt(tokens.length);
                RadixCache.Lease lease = cache.admit(ns, tokens, reusable);
                assertThat(lease.cachedTokens()).isBetween(0, reusable);
                running.add(lease);
                prompts.add(tokens);
            } else if (action <= 1 && !running.isEmpty()) {
                int i = random.nextInt(running.size());
                int[] prompt = prompts.remove(i);
                int[] finished = Arrays.copyOf(prompt, prompt.length + 3);
                cache.release(running.remove(i), random.nextBoolean() ? finished : null);
            } else if (action == 2) {
                boolean fits = capacity - cache.stats().lockedTokens() >= tokens.length;
                int inserted = cache.insert(ns, tokens);
                if (fits) {
                    assertThat(inserted).isEqualTo(tokens.length);
                    assertThat(cache.match(ns, tokens, tokens.length)).isEqualTo(tokens.length);
                    wholeInsertions++;
                }
            } else {
                cache.match(ns, tokens, tokens.length);
            }
            PrefixCacheStats s = cache.stats();
            assertThat(s.cachedTokens()).isBetween(0L, (long) capacity);
            assertThat(s.lockedTokens()).isBetween(0L, s.cachedTokens());
            if (random.nextInt(1_000) == 0) {
                cache.flush();
                running.clear(); // their leases are stale: released or not, they insert nothing
                prompts.clear();
            }
        }
        assertThat(wholeInsertions).isPositive();
        assertThat(cache.stats().evictedTokens())
                .as("the run did fill the cache")
                .isPositive();
        for (RadixCache.Lease lease : running) {
            cache.release(lease, null);
        }
        assertThat(cache.stats().lockedTokens()).isZero();
    }
}
