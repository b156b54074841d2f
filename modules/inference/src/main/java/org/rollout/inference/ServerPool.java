package org.rollout.inference;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.random.RandomGenerator;
import org.rollout.api.GenerationException;
import org.rollout.config.InferenceConfig;
import org.rollout.config.RoutingStrategy;
import org.rollout.config.ServerAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's inference servers: which one serves the next segment, which are in rotation, and
 * how loaded each is (semantics §2.4, improved: failover and load awareness, see docs/inference.md).
 *
 * <pre>
 *   acquire(rid, avoid) ──► in rotation? (not ejected, no resync pending)
 *                            ├─ sticky server of rid, if not in avoid and
 *                            │    outstanding ≤ least outstanding + sticky_slack
 *                            └─ else routing_strategy over the rest (avoid excluded while others remain)
 *                        ──► Lease (outstanding + 1 until closed)
 * </pre>
 *
 * <ul>
 *   <li><b>Round robin</b> starts at a random index (semantics §2.4) and skips servers out of rotation.
 *   <li><b>Least requests</b> (the default) picks the fewest outstanding requests of this engine;
 *       ties go round-robin, so equally loaded servers take turns.
 *   <li><b>Sticky by rid</b>: an LRU of {@value #RID_CACHE_SIZE} rids remembers each rid's last
 *       server. A later segment of the rid goes back there only while that server is in rotation
 *       and at most {@code sticky_slack} requests busier than the least-loaded candidate:
 *       stickiness is a preference, never a pin (prime-rl #3255).
 *   <li><b>Rotation</b>: {@link #recordFailure} with {@code eject} takes a server out at once; the
 *       health checker calls {@link #readmit}. A server whose weight update failed is out until
 *       {@link #clearResyncPending}. When no server is in rotation, {@link #acquire} waits for one
 *       up to its deadline, then fails naming every server and its last error.
 * </ul>
 *
 * <p>Thread-safe: one lock guards all state; no I/O happens under it.
 */
public final class ServerPool {
    /** How many rids the sticky map remembers (AReaL's {@code RID_CACHE_SIZE}). */
    public static final int RID_CACHE_SIZE = 128;

    private static final Logger log = LoggerFactory.getLogger(ServerPool.class);

    private final List<ServerAddress> servers;
    private final Map<ServerAddress, Integer> indexOf = new HashMap<>();
    private final RoutingStrategy strategy;
    private final boolean stickyByRid;
    private final int stickySlack;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition rotationChanged = lock.newCondition();
    private final int[] outstanding;
    private final boolean[] ejected;
    private final boolean[] resyncPending;
    private final String[] lastError;
    private final long[] requests;
    private final long[] failures;
    private final long[] ejections;
    private final LinkedHashMap<String, Integer> stickyServer;
    private int next;
    private boolean closed;

    /**
     * A pool over {@code servers}, all in rotation.
     *
     * @param random chooses the round-robin start index
     */
    public ServerPool(
            List<ServerAddress> servers,
            RoutingStrategy strategy,
            boolean stickyByRid,
            int stickySlack,
            RandomGenerator random) {
        this.servers = List.copyOf(servers);
        if (this.servers.isEmpty()) {
            throw new IllegalArgumentException("a server pool needs at least one server");
        }
        for (int i = 0; i < this.servers.size(); i++) {
            if (indexOf.put(this.servers.get(i), i) != null) {
                throw new IllegalArgumentException("duplicate server " + this.servers.get(i));
            }
        }
        if (stickySlack < 0) {
            throw new IllegalArgumentException("sticky_slack must be >= 0, not " + stickySlack);
        }
        this.strategy = Objects.requireNonNull(strategy, "strategy");
        this.stickyByRid = stickyByRid;
        this.stickySlack = stickySlack;
        int n = this.servers.size();
        outstanding = new int[n];
        ejected = new boolean[n];
        resyncPending = new boolean[n];
        lastError = new String[n];
        requests = new long[n];
        failures = new long[n];
        ejections = new long[n];
        stickyServer = new LinkedHashMap<>(RID_CACHE_SIZE * 2, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Integer> eldest) {
                return size() > RID_CACHE_SIZE;
            }
        };
        next = random.nextInt(n);
    }

    /** A pool for {@code config}'s addresses, strategy and stickiness. */
    public static ServerPool of(InferenceConfig config, RandomGenerator random) {
        return new ServerPool(
                config.addresses(), config.routingStrategy(), config.stickyByRid(), config.stickySlack(), random);
    }

    /** Every server, in configuration order. */
    public List<ServerAddress> servers() {
        return servers;
    }

    /**
     * Chooses a server for one segment of {@code rid} and counts the segment as outstanding on it
     * until the lease is closed.
     *
     * @param rid the request id (its sticky server is preferred); null for none
     * @param avoid servers that already failed this segment: chosen only when no other is in rotation
     * @param maxWait how long to wait when no server is in rotation
     * @throws GenerationException when none came into rotation within {@code maxWait}, naming each
     *     server and its last error
     * @throws InterruptedException when interrupted while waiting
     * @throws IllegalStateException when the pool is closed (also while waiting)
     */
    public Lease acquire(String rid, Set<ServerAddress> avoid, Duration maxWait) throws InterruptedException {
        long deadline = System.nanoTime() + maxWait.toNanos();
        lock.lockInterruptibly();
        try {
            while (true) {
                if (closed) {
                    throw new IllegalStateException("the server pool is closed (rid " + rid + ")");
                }
                int chosen = choose(rid, avoid);
                if (chosen >= 0) {
                    outstanding[chosen]++;
                    requests[chosen]++;
                    if (stickyByRid && rid != null) {
                        stickyServer.put(rid, chosen);
                    }
                    return new Lease(chosen);
                }
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    throw new GenerationException("no inference server in rotation for rid " + rid + " after waiting "
                            + seconds(maxWait) + " s (request_timeout): " + describeAll());
                }
                rotationChanged.awaitNanos(remaining);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Fails every waiting and future {@link #acquire}; leases already given stay valid. */
    public void close() {
        lock.lock();
        try {
            closed = true;
            rotationChanged.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Index of the chosen server, or -1 when none is in rotation. Called under the lock. */
    private int choose(String rid, Set<ServerAddress> avoid) {
        int n = servers.size();
        boolean anyPreferred = false;
        boolean anyInRotation = false;
        for (int i = 0; i < n; i++) {
            if (inRotation(i)) {
                anyInRotation = true;
                if (!avoid.contains(servers.get(i))) {
                    anyPreferred = true;
                }
            }
        }
        if (!anyInRotation) {
            return -1;
        }
        boolean useAvoided = !anyPreferred;
        int least = Integer.MAX_VALUE;
        for (int i = 0; i < n; i++) {
            if (candidate(i, avoid, useAvoided)) {
                least = Math.min(least, outstanding[i]);
            }
        }
        if (stickyByRid && rid != null) {
            Integer s = stickyServer.get(rid);
            if (s != null && candidate(s, avoid, useAvoided) && outstanding[s] <= least + stickySlack) {
                return s;
            }
        }
        int chosen = -1;
        for (int k = 0; k < n; k++) {
            int i = (next + k) % n;
            if (!candidate(i, avoid, useAvoided)) {
                continue;
            }
            if (strategy == RoutingStrategy.ROUND_ROBIN) {
                chosen = i;
                break;
            }
            if (chosen < 0 || outstanding[i] < outstanding[chosen]) {
                chosen = i;
            }
        }
        next = (chosen + 1) % n;
        return chosen;
    }

    private boolean inRotation(int i) {
        return !ejected[i] && !resyncPending[i];
    }

    private boolean candidate(int i, Set<ServerAddress> avoid, boolean useAvoided) {
        return inRotation(i) && (useAvoided || !avoid.contains(servers.get(i)));
    }

    /**
     * Records a failed attempt on {@code server}; with {@code eject} (a connection error, a timeout,
     * a 5xx or a malformed response) the server leaves rotation until {@link #readmit}.
     */
    public void recordFailure(ServerAddress server, String error, boolean eject) {
        int i = index(server);
        lock.lock();
        try {
            failures[i]++;
            lastError[i] = error;
            if (eject && !ejected[i]) {
                ejected[i] = true;
                ejections[i]++;
                log.warn("ejected inference server {}: {}", server, error);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Takes {@code server} out of rotation with {@code reason} (a failed health probe). The reason
     * becomes the last error only when the server was in rotation: for a server already out, the
     * failure that took it out says more than a probe confirming it is still down.
     */
    public void eject(ServerAddress server, String reason) {
        int i = index(server);
        lock.lock();
        try {
            if (inRotation(i)) {
                lastError[i] = reason;
            }
            if (!ejected[i]) {
                ejected[i] = true;
                ejections[i]++;
                log.warn("ejected inference server {}: {}", server, reason);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Puts an ejected {@code server} back into rotation (its health probe passed). */
    public void readmit(ServerAddress server) {
        int i = index(server);
        lock.lock();
        try {
            if (ejected[i]) {
                ejected[i] = false;
                log.info("re-admitted inference server {}", server);
                rotationChanged.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Takes {@code server} out of rotation until a weight update succeeds on it. */
    public void markResyncPending(ServerAddress server, String reason) {
        int i = index(server);
        lock.lock();
        try {
            lastError[i] = reason;
            if (!resyncPending[i]) {
                resyncPending[i] = true;
                log.warn("inference server {} is out of rotation until its weights are re-synced: {}", server, reason);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Marks {@code server}'s weights current again; it returns to rotation unless ejected. */
    public void clearResyncPending(ServerAddress server) {
        int i = index(server);
        lock.lock();
        try {
            if (resyncPending[i]) {
                resyncPending[i] = false;
                log.info("inference server {} has current weights again", server);
                rotationChanged.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /** True when {@code server} waits for a weight re-sync. */
    public boolean isResyncPending(ServerAddress server) {
        int i = index(server);
        lock.lock();
        try {
            return resyncPending[i];
        } finally {
            lock.unlock();
        }
    }

    /** The servers out of rotation (ejected or waiting for a re-sync), in configuration order. */
    public List<ServerAddress> outOfRotation() {
        lock.lock();
        try {
            List<ServerAddress> out = new ArrayList<>();
            for (int i = 0; i < servers.size(); i++) {
                if (!inRotation(i)) {
                    out.add(servers.get(i));
                }
            }
            return out;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The server {@code rid}'s last segment went to, if the LRU still remembers it. A query: it does
     * not count as a use of the rid (the LRU order is unchanged).
     */
    public Optional<ServerAddress> stickyServer(String rid) {
        lock.lock();
        try {
            for (Map.Entry<String, Integer> e : stickyServer.entrySet()) {
                if (e.getKey().equals(rid)) {
                    return Optional.of(servers.get(e.getValue()));
                }
            }
            return Optional.empty();
        } finally {
            lock.unlock();
        }
    }

    /** A snapshot of every server, in configuration order. */
    public List<ServerStats> stats() {
        lock.lock();
        try {
            List<ServerStats> out = new ArrayList<>(servers.size());
            for (int i = 0; i < servers.size(); i++) {
                out.add(statsOf(i));
            }
            return out;
        } finally {
            lock.unlock();
        }
    }

    /** A snapshot of {@code server}. */
    public ServerStats stats(ServerAddress server) {
        int i = index(server);
        lock.lock();
        try {
            return statsOf(i);
        } finally {
            lock.unlock();
        }
    }

    private ServerStats statsOf(int i) {
        return new ServerStats(
                servers.get(i),
                outstanding[i],
                ejected[i],
                resyncPending[i],
                Optional.ofNullable(lastError[i]),
                requests[i],
                failures[i],
                ejections[i]);
    }

    /** Every server with its state and last error, for "no server" messages. Called under the lock. */
    private String describeAll() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < servers.size(); i++) {
            if (i > 0) {
                sb.append("; ");
            }
            sb.append(servers.get(i)).append(' ');
            if (ejected[i]) {
                sb.append("ejected");
            }
            if (resyncPending[i]) {
                sb.append(ejected[i] ? ", " : "").append("waiting for a weight re-sync");
            }
            if (inRotation(i)) {
                sb.append("in rotation");
            }
            sb.append(" (last error: ")
                    .append(lastError[i] == null ? "none" : lastError[i])
                    .append(')');
        }
        return sb.toString();
    }

    private int index(ServerAddress server) {
        Integer i = indexOf.get(server);
        if (i == null) {
            throw new IllegalArgumentException("unknown server " + server + "; the pool has " + servers);
        }
        return i;
    }

    private static String seconds(Duration d) {
        return String.valueOf(d.toMillis() / 1000.0);
    }

    /**
     * One segment's claim on a server: counted as outstanding until {@link #close()}. Close it in a
     * {@code finally}; closing twice has no further effect.
     */
    public final class Lease implements AutoCloseable {
        private final int index;
        private boolean closed;

        private Lease(int index) {
            this.index = index;
        }

        /** The chosen server. */
        public ServerAddress address() {
            return servers.get(index);
        }

        @Override
        public void close() {
            lock.lock();
            try {
                if (!closed) {
                    closed = true;
                    outstanding[index]--;
                }
            } finally {
                lock.unlock();
            }
        }

        @Override
        public String toString() {
            return "Lease{" + address() + "}";
        }
    }
}
