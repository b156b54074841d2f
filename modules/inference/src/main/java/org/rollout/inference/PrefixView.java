package org.rollout.inference;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The engine's approximate view of which token prefixes each server holds in its prefix cache,
 * for {@code prefix_aware} placement (docs/inference.md, "Placement").
 *
 * <p>A request's tokens are cut into blocks of {@value #BLOCK} tokens, and block {@code i} is
 * named by a hash chained over blocks {@code 0..i} (as vLLM names its KV blocks): equal names mean
 * equal prefixes, so the longest cached prefix of a request on a server is the run of its leading
 * block names that the server's set holds. A server's set is what the engine sent it, bounded to
 * {@code capacityTokens / BLOCK} names and forgotten least recently used first. Blocks are touched
 * from the last to the first, so a prefix shared by many requests stays longer than their tails,
 * and the oldest leaf goes first, as in SGLang's radix cache. A trailing part of fewer than {@value
 * #BLOCK} tokens is not remembered.
 *
 * <p>Approximate by design: the server may have evicted what the view holds, or hold what another
 * engine sent it. The server's own {@code cached_tokens} says what it actually reused. Not
 * thread-safe: the pool calls it under its lock.
 */
final class PrefixView {
    /** Tokens per block: the view's granularity. */
    static final int BLOCK = 32;

    private final int capacityBlocks;
    private final Map<ServerSlot, LinkedHashMap<Long, Boolean>> servers = new HashMap<>();

    /** @param capacityTokens how many tokens to remember per server; 0 remembers nothing */
    PrefixView(int capacityTokens) {
        if (capacityTokens < 0) {
            throw new IllegalArgumentException("prefix_view_tokens must be >= 0, not " + capacityTokens);
        }
        this.capacityBlocks = capacityTokens / BLOCK;
    }

    /**
     * The chained block names of {@code prompt} followed by the first {@code outLength} of {@code
     * out}: one per whole block.
     */
    static long[] blockNames(int[] prompt, int[] out, int outLength) {
        int total = prompt.length + outLength;
        long[] names = new long[total / BLOCK];
        long h = 0x9E3779B97F4A7C15L;
        for (int i = 0; i < names.length * BLOCK; i++) {
            int token = i < prompt.length ? prompt[i] : out[i - prompt.length];
            h = mix(h ^ token);
            if ((i + 1) % BLOCK == 0) {
                names[i / BLOCK] = h;
            }
        }
        return names;
    }

    /** A 64-bit finaliser (SplitMix64's): successive tokens change every bit of the chain. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** How many tokens of the request named by {@code names} the view says {@code server} holds. */
    int cachedTokens(ServerSlot server, long[] names) {
        LinkedHashMap<Long, Boolean> held = servers.get(server);
        if (held == null) {
            return 0;
        }
        int blocks = 0;
        while (blocks < names.length && held.containsKey(names[blocks])) {
            blocks++;
        }
        return blocks * BLOCK;
    }

    /** Records that {@code server} was sent the request named by {@code names}: it will hold it. */
    void sent(ServerSlot server, long[] names) {
        if (capacityBlocks == 0 || names.length == 0) {
            return;
        }
        LinkedHashMap<Long, Boolean> held = servers.computeIfAbsent(server, s -> new LinkedHashMap<>(64, 0.75f, true));
        for (int i = names.length - 1; i >= 0; i--) {
            held.put(names[i], Boolean.TRUE); // access order: a block held already becomes the most recent
        }
        var oldest = held.entrySet().iterator();
        while (held.size() > capacityBlocks && oldest.hasNext()) {
            oldest.next();
            oldest.remove();
        }
    }

    /** Forgets everything about {@code server}: it restarted, left, or loaded new weights. */
    void forget(ServerSlot server) {
        servers.remove(server);
    }

    /** How many tokens the view holds for {@code server}. */
    int heldTokens(ServerSlot server) {
        LinkedHashMap<Long, Boolean> held = servers.get(server);
        return held == null ? 0 : held.size() * BLOCK;
    }
}
