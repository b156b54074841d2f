package org.rollout.system;

import java.util.Map;
import java.util.TreeMap;

/** Faults injected in one run, counted by kind (node_kill, server_crash, server_hang, …). Thread-safe. */
final class Faults {
    private final Map<String, Long> byKind = new TreeMap<>();

    synchronized void inject(String kind) {
        byKind.merge(kind, 1L, Long::sum);
    }

    synchronized void inject(String kind, long count) {
        if (count > 0) {
            byKind.merge(kind, count, Long::sum);
        }
    }

    synchronized long total() {
        return byKind.values().stream().mapToLong(Long::longValue).sum();
    }

    synchronized long count(String kind) {
        return byKind.getOrDefault(kind, 0L);
    }

    synchronized Map<String, Long> byKind() {
        return Map.copyOf(new TreeMap<>(byKind));
    }
}
