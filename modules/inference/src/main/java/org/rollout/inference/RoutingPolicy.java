package org.rollout.inference;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.rollout.config.RoutingStrategy;
import org.rollout.config.ServerAddress;

/**
 * The choice of a server for one segment in a {@link ServerPool} (docs/inference.md, "Placement"):
 *
 * <ol>
 *   <li>the rid's sticky server while it is in rotation and at most {@code sticky_slack} busier
 *       than the least-loaded candidate (a generation's next segment after an interruption);
 *   <li>with an affine strategy ({@code group_affinity}, {@code prefix_aware}), among the candidates
 *       within the load bound: the trajectory's last server; with {@code prefix_aware}, the one
 *       whose {@link PrefixView} holds the longest prefix of the segment's tokens (fewest outstanding
 *       among equals); the group's servers in the order the group took them;
 *   <li>else the strategy's own rule over the candidates: round robin, or least requests with ties
 *       taken in turn (also the affine strategies' fallback).
 * </ol>
 *
 * <p>Candidates are the servers in rotation, those to avoid excluded while others remain. The load
 * bound is consistent hashing's with bounded loads (Mirrokni, Thorup and Zadimoghaddam, 2016) with
 * a floor: a server within it has fewer outstanding requests than {@code max(least + affinity_slack,
 * ceil(affinity_load_factor × (total + 1) / servers))}, so a group of 16 fits on one server of an
 * idle fleet and no server holding a hot prefix takes more than its share of a busy one. Holds the
 * sticky LRU, the affinity tables and the round-robin pointer; not thread-safe: the pool calls it
 * under its lock.
 */
final class RoutingPolicy {
    /** How many trajectories remember their server. */
    static final int TRAJECTORIES = 65_536;

    /** How many groups remember their servers. */
    static final int GROUPS = 16_384;

    private final RoutingStrategy strategy;
    private final boolean stickyByRid;
    private final int stickySlack;
    private final int affinitySlack;
    private final double loadFactor;
    private final LinkedHashMap<String, ServerSlot> stickyServer;
    private final LinkedHashMap<String, ServerSlot> trajectoryServer = lru(TRAJECTORIES);
    private final LinkedHashMap<String, List<ServerSlot>> groupServers = lru(GROUPS);
    private final PrefixView prefixes;
    private int next;

    /**
     * @param start the round-robin start index
     */
    RoutingPolicy(RoutingStrategy strategy, boolean stickyByRid, int stickySlack, int start) {
        this(strategy, stickyByRid, stickySlack, 16, 1.25, 262_144, start);
    }

    /**
     * @param affinitySlack {@code affinity_slack}
     * @param loadFactor {@code affinity_load_factor}
     * @param prefixViewTokens {@code prefix_view_tokens}
     * @param start the round-robin start index
     */
    RoutingPolicy(
            RoutingStrategy strategy,
            boolean stickyByRid,
            int stickySlack,
            int affinitySlack,
            double loadFactor,
            int prefixViewTokens,
            int start) {
        this.strategy = strategy;
        this.stickyByRid = stickyByRid;
        this.stickySlack = stickySlack;
        this.affinitySlack = affinitySlack;
        this.loadFactor = loadFactor;
        this.stickyServer = lru(ServerPool.RID_CACHE_SIZE);
        this.prefixes = new PrefixView(strategy == RoutingStrategy.PREFIX_AWARE ? prefixViewTokens : 0);
        this.next = start;
    }

    private static <V> LinkedHashMap<String, V> lru(int capacity) {
        return new LinkedHashMap<>(Math.min(capacity, 1024) * 2, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, V> eldest) {
                return size() > capacity;
            }
        };
    }

    /** True when segments need their {@link Placement}'s block names (only {@code prefix_aware} reads them). */
    boolean needsBlocks() {
        return strategy == RoutingStrategy.PREFIX_AWARE;
    }

    /** The chosen server among {@code slots}, or null when none is in rotation. */
    ServerSlot choose(List<ServerSlot> slots, String rid, Set<ServerAddress> avoid) {
        return choose(slots, rid, Placement.NONE, avoid);
    }

    /** The chosen server among {@code slots} for a segment placed as {@code placement}, or null when none is in rotation. */
    ServerSlot choose(List<ServerSlot> slots, String rid, Placement placement, Set<ServerAddress> avoid) {
        int n = slots.size();
        boolean anyPreferred = false;
        boolean anyInRotation = false;
        for (ServerSlot s : slots) {
            if (s.inRotation()) {
                anyInRotation = true;
                if (!avoid.contains(s.address)) {
                    anyPreferred = true;
                }
            }
        }
        if (!anyInRotation) {
            return null;
        }
        boolean useAvoided = !anyPreferred;
        int least = Integer.MAX_VALUE;
        for (ServerSlot s : slots) {
            if (candidate(s, avoid, useAvoided)) {
                least = Math.min(least, s.outstanding);
            }
        }
        if (stickyByRid && rid != null) {
            ServerSlot s = stickyServer.get(rid);
            if (s != null && !s.removed && candidate(s, avoid, useAvoided) && s.outstanding <= least + stickySlack) {
                return s;
            }
        }
        if (strategy.isAffine()) {
            ServerSlot affine = affine(slots, placement, avoid, useAvoided, least);
            if (affine != null) {
                return affine;
            }
        }
        int chosen = -1;
        for (int k = 0; k < n; k++) {
            int i = (next + k) % n;
            ServerSlot s = slots.get(i);
            if (!candidate(s, avoid, useAvoided)) {
                continue;
            }
            if (strategy == RoutingStrategy.ROUND_ROBIN) {
                chosen = i;
                break;
            }
            if (chosen < 0 || s.outstanding < slots.get(chosen).outstanding) {
                chosen = i;
            }
        }
        next = (chosen + 1) % n;
        return slots.get(chosen);
    }

    /** The affine choice within the load bound, or null to fall back to least requests. */
    private ServerSlot affine(
            List<ServerSlot> slots, Placement placement, Set<ServerAddress> avoid, boolean useAvoided, int least) {
        int bound = loadBound(slots, least);
        if (placement.trajectory() != null) {
            ServerSlot s = trajectoryServer.get(placement.trajectory());
            if (s != null && !s.removed && candidate(s, avoid, useAvoided) && s.outstanding < bound) {
                return s;
            }
        }
        if (strategy == RoutingStrategy.PREFIX_AWARE && placement.blocks().length > 0) {
            ServerSlot best = null;
            int bestTokens = 0;
            for (ServerSlot s : slots) {
                if (!candidate(s, avoid, useAvoided) || s.outstanding >= bound) {
                    continue;
                }
                int tokens = prefixes.cachedTokens(s, placement.blocks());
                if (tokens > 0 && (tokens > bestTokens || (tokens == bestTokens && s.outstanding < best.outstanding))) {
                    best = s;
                    bestTokens = tokens;
                }
            }
            if (best != null) {
                return best;
            }
        }
        if (placement.group() != null) {
            List<ServerSlot> servers = groupServers.get(placement.group());
            if (servers != null) {
                for (ServerSlot s : servers) {
                    if (!s.removed && candidate(s, avoid, useAvoided) && s.outstanding < bound) {
                        return s;
                    }
                }
            }
        }
        return null;
    }

    /**
     * The bounded load: an affine server must have fewer outstanding requests than this, the larger
     * of {@code least + affinity_slack} and {@code ceil(affinity_load_factor × (total + 1) / servers)}
     * over the servers in rotation.
     */
    int loadBound(List<ServerSlot> slots, int least) {
        long total = 0;
        int inRotation = 0;
        for (ServerSlot s : slots) {
            if (s.inRotation()) {
                total += s.outstanding;
                inRotation++;
            }
        }
        long share = (long) Math.ceil(loadFactor * (total + 1) / Math.max(1, inRotation));
        return (int) Math.min(Integer.MAX_VALUE, Math.max((long) least + Math.max(1, affinitySlack), share));
    }

    private static boolean candidate(ServerSlot s, Set<ServerAddress> avoid, boolean useAvoided) {
        return s.inRotation() && (useAvoided || !avoid.contains(s.address));
    }

    /** Remembers {@code chosen} as {@code rid}'s sticky server (when stickiness is on). */
    void chosen(String rid, ServerSlot chosen) {
        chosen(rid, Placement.NONE, chosen);
    }

    /**
     * Remembers {@code chosen} as {@code rid}'s sticky server (when stickiness is on), as the
     * trajectory's server and one of the group's, and that it was sent the segment's tokens.
     */
    void chosen(String rid, Placement placement, ServerSlot chosen) {
        if (stickyByRid && rid != null) {
            stickyServer.put(rid, chosen);
        }
        if (!strategy.isAffine()) {
            return;
        }
        if (placement.trajectory() != null) {
            trajectoryServer.put(placement.trajectory(), chosen);
        }
        if (placement.group() != null) {
            List<ServerSlot> servers = groupServers.computeIfAbsent(placement.group(), g -> new ArrayList<>(2));
            if (!servers.contains(chosen)) {
                servers.add(chosen);
            }
        }
        prefixes.sent(chosen, placement.blocks());
    }

    /**
     * Forgets every affinity to {@code s} and what it caches: it was ejected, drained, told to
     * re-sync, or left. Nothing waits on it; its trajectories and groups go elsewhere from now on.
     */
    void forget(ServerSlot s) {
        trajectoryServer.values().removeIf(v -> v == s);
        for (var it = groupServers.values().iterator(); it.hasNext(); ) {
            List<ServerSlot> servers = it.next();
            servers.remove(s);
            if (servers.isEmpty()) {
                it.remove();
            }
        }
        prefixes.forget(s);
    }

    /** Forgets what {@code s} caches (it loaded new weights: new weights, new KV), keeping its affinities. */
    void cacheFlushed(ServerSlot s) {
        prefixes.forget(s);
    }

    /** How many tokens the prefix view holds for {@code s}. */
    int viewedTokens(ServerSlot s) {
        return prefixes.heldTokens(s);
    }

    /** How many tokens of {@code placement} the prefix view says {@code s} holds. */
    int viewedCachedTokens(ServerSlot s, Placement placement) {
        return prefixes.cachedTokens(s, placement.blocks());
    }

    /** Forgets {@code s}, which has left the pool, now of {@code remaining} servers. */
    void removed(ServerSlot s, int remaining) {
        stickyServer.values().removeIf(v -> v == s);
        forget(s);
        if (remaining > 0) {
            next = next % remaining;
        }
    }

    /** The server {@code rid}'s last segment went to, without counting as a use of the rid. */
    Optional<ServerAddress> stickyServer(String rid) {
        for (Map.Entry<String, ServerSlot> e : stickyServer.entrySet()) {
            if (e.getKey().equals(rid)) {
                return Optional.of(e.getValue().address);
            }
        }
        return Optional.empty();
    }
}
