package org.rollout.inference;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.rollout.config.RoutingStrategy;
import org.rollout.config.ServerAddress;

/**
 * The choice of a server for one segment in a {@link ServerPool}: the rid's sticky server while
 * it is in rotation and at most {@code sticky_slack} busier than the least-loaded candidate, else
 * the routing strategy (round robin, or least requests with ties taken in turn) over the servers
 * in rotation, those to avoid excluded while others remain. Holds the sticky LRU and the
 * round-robin pointer; not thread-safe: the pool calls it under its lock.
 */
final class RoutingPolicy {
    private final RoutingStrategy strategy;
    private final boolean stickyByRid;
    private final int stickySlack;
    private final LinkedHashMap<String, ServerSlot> stickyServer;
    private int next;

    /**
     * @param start the round-robin start index
     */
    RoutingPolicy(RoutingStrategy strategy, boolean stickyByRid, int stickySlack, int start) {
        this.strategy = strategy;
        this.stickyByRid = stickyByRid;
        this.stickySlack = stickySlack;
        this.stickyServer = new LinkedHashMap<>(ServerPool.RID_CACHE_SIZE * 2, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, ServerSlot> eldest) {
                return size() > ServerPool.RID_CACHE_SIZE;
            }
        };
        this.next = start;
    }

    /** The chosen server among {@code slots}, or null when none is in rotation. */
    ServerSlot choose(List<ServerSlot> slots, String rid, Set<ServerAddress> avoid) {
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

    private static boolean candidate(ServerSlot s, Set<ServerAddress> avoid, boolean useAvoided) {
        return s.inRotation() && (useAvoided || !avoid.contains(s.address));
    }

    /** Remembers {@code chosen} as {@code rid}'s sticky server (when stickiness is on). */
    void chosen(String rid, ServerSlot chosen) {
        if (stickyByRid && rid != null) {
            stickyServer.put(rid, chosen);
        }
    }

    /** Forgets {@code s}, which has left the pool, now of {@code remaining} servers. */
    void removed(ServerSlot s, int remaining) {
        stickyServer.values().removeIf(v -> v == s);
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
