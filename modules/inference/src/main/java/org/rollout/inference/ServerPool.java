package org.rollout.inference;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
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
 *   <li><b>Membership at run time</b>: {@link #add} puts a server in the pool waiting for its
 *       weights (out of rotation until {@link #clearResyncPending}, so the health checker re-syncs
 *       it first); {@link #drain} stops new segments going to a server, which leaves the pool when
 *       its last lease closes.
 * </ul>
 *
 * <p>The choice of a server (stickiness and strategy) is {@link RoutingPolicy}'s; each server's
 * state is a {@link ServerSlot}. Thread-safe: one lock guards all state; no I/O happens under it.
 */
public final class ServerPool {
    /** How many rids the sticky map remembers (AReaL's {@code RID_CACHE_SIZE}). */
    public static final int RID_CACHE_SIZE = 128;

    private static final Logger log = LoggerFactory.getLogger(ServerPool.class);

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition rotationChanged = lock.newCondition();
    /** The servers in the pool, in the order they joined (configuration order first). Under the lock. */
    private final List<ServerSlot> slots = new ArrayList<>();

    private final Map<ServerAddress, ServerSlot> byAddress = new HashMap<>();
    /** Chooses among {@link #slots}. Under the lock. */
    private final RoutingPolicy routing;

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
        List<ServerAddress> initial = List.copyOf(servers);
        if (initial.isEmpty()) {
            throw new IllegalArgumentException("a server pool needs at least one server");
        }
        for (ServerAddress a : initial) {
            ServerSlot slot = new ServerSlot(a, 0);
            if (byAddress.put(a, slot) != null) {
                throw new IllegalArgumentException("duplicate server " + a);
            }
            slots.add(slot);
        }
        if (stickySlack < 0) {
            throw new IllegalArgumentException("sticky_slack must be >= 0, not " + stickySlack);
        }
        Objects.requireNonNull(strategy, "strategy");
        this.routing = new RoutingPolicy(strategy, stickyByRid, stickySlack, random.nextInt(initial.size()));
    }

    /** A pool whose choices {@code routing} makes (its round-robin start already chosen). */
    private ServerPool(List<ServerAddress> servers, RoutingPolicy routing) {
        for (ServerAddress a : List.copyOf(servers)) {
            ServerSlot slot = new ServerSlot(a, 0);
            if (byAddress.put(a, slot) != null) {
                throw new IllegalArgumentException("duplicate server " + a);
            }
            slots.add(slot);
        }
        if (slots.isEmpty()) {
            throw new IllegalArgumentException("a server pool needs at least one server");
        }
        this.routing = routing;
    }

    /** A pool for {@code config}'s addresses, strategy, stickiness and placement bounds. */
    public static ServerPool of(InferenceConfig config, RandomGenerator random) {
        return new ServerPool(
                config.addresses(),
                new RoutingPolicy(
                        config.routingStrategy(),
                        config.stickyByRid(),
                        config.stickySlack(),
                        config.affinitySlack(),
                        config.affinityLoadFactor(),
                        config.prefixViewTokens(),
                        random.nextInt(config.addresses().size())));
    }

    /** True when {@link #acquire(String, Placement, Set, Duration)} reads its placement's block names. */
    boolean placesByPrefix() {
        return routing.needsBlocks();
    }

    /** Every server in the pool now (draining ones included), in the order they joined. */
    public List<ServerAddress> servers() {
        lock.lock();
        try {
            return slots.stream().map(s -> s.address).toList();
        } finally {
            lock.unlock();
        }
    }

    /** True while {@code server} is in the pool (draining or not). */
    public boolean contains(ServerAddress server) {
        lock.lock();
        try {
            return byAddress.containsKey(server);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Adds {@code server} out of rotation, waiting for a weight re-sync: it serves nothing before
     * the engine has loaded the current weights on it. Adding a server that is draining takes it back
     * (it stays in rotation if it was).
     *
     * @return false when it was already in the pool and not draining (nothing changes)
     */
    public boolean add(ServerAddress server) {
        Objects.requireNonNull(server, "server");
        lock.lock();
        try {
            ensureOpen("add " + server);
            ServerSlot s = byAddress.get(server);
            if (s != null) {
                if (!s.draining) {
                    return false;
                }
                s.draining = false;
                log.info("inference server {} is active again (its drain is cancelled)", server);
                rotationChanged.signalAll();
                return true;
            }
            s = new ServerSlot(server, -1);
            s.resyncPending = true;
            s.lastError = "added at run time: waiting for the current weights";
            slots.add(s);
            byAddress.put(server, s);
            log.info("added inference server {}; it enters rotation once it has the current weights", server);
            return true;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Stops routing new segments to {@code server}; segments in flight on it finish, and it leaves
     * the pool when the last one's lease closes (at once when none is in flight). Draining the last
     * server that is not draining is refused: generations would have nowhere to go.
     *
     * @return false when it is already draining
     * @throws IllegalArgumentException when it is not in the pool, or is the last active server
     */
    public boolean drain(ServerAddress server) {
        lock.lock();
        try {
            ServerSlot s = slot(server);
            if (s.draining) {
                return false;
            }
            long active = slots.stream().filter(o -> !o.draining).count();
            if (active <= 1) {
                throw new IllegalArgumentException(
                        "cannot drain " + server + ": it is the only server that is not draining (add another first)");
            }
            s.draining = true;
            routing.forget(s);
            log.info("draining inference server {} ({} segment(s) in flight on it)", server, s.outstanding);
            removeIfDrained(s);
            rotationChanged.signalAll();
            return true;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits until {@code server} has left the pool (a drained server leaves when its last segment
     * ends).
     *
     * @return true when it left, false when {@code maxWait} passed first
     */
    public boolean awaitRemoved(ServerAddress server, Duration maxWait) throws InterruptedException {
        long deadline = System.nanoTime() + maxWait.toNanos();
        lock.lockInterruptibly();
        try {
            while (byAddress.containsKey(server)) {
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0 || closed) {
                    return false;
                }
                rotationChanged.awaitNanos(remaining);
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Removes a draining slot with nothing in flight. Called under the lock. */
    private void removeIfDrained(ServerSlot s) {
        if (s.draining && s.outstanding == 0 && !s.removed) {
            s.removed = true;
            slots.remove(s);
            byAddress.remove(s.address);
            routing.removed(s, slots.size());
            log.info("inference server {} is drained and has left the pool", s.address);
            rotationChanged.signalAll();
        }
    }

    /** Records that {@code server} now serves weight {@code version}; ignored for a server no longer in the pool. */
    public void setServerVersion(ServerAddress server, int version) {
        lock.lock();
        try {
            ServerSlot s = byAddress.get(server);
            if (s != null) {
                if (s.version != version) {
                    routing.cacheFlushed(s); // new weights, new KV: nothing it cached is reused
                }
                s.version = version;
            }
        } finally {
            lock.unlock();
        }
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
        return acquire(rid, Placement.NONE, avoid, maxWait);
    }

    /**
     * As {@link #acquire(String, Set, Duration)}, for a segment placed as {@code placement}: with an
     * affine {@code routing_strategy}, its trajectory's, prefix's or group's server while within the
     * load bound (docs/inference.md, "Placement").
     */
    Lease acquire(String rid, Placement placement, Set<ServerAddress> avoid, Duration maxWait)
            throws InterruptedException {
        long deadline = System.nanoTime() + maxWait.toNanos();
        lock.lockInterruptibly();
        try {
            while (true) {
                ensureOpen("rid " + rid);
                ServerSlot chosen = routing.choose(slots, rid, placement, avoid);
                if (chosen != null) {
                    chosen.outstanding++;
                    chosen.requests++;
                    routing.chosen(rid, placement, chosen);
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

    private void ensureOpen(String what) {
        if (closed) {
            throw new IllegalStateException("the server pool is closed (" + what + ")");
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

    /**
     * Records a failed attempt on {@code server}; with {@code eject} (a connection error, a timeout,
     * a 5xx or a malformed response) the server leaves rotation until {@link #readmit}. Ignored for a
     * server that has left the pool.
     */
    public void recordFailure(ServerAddress server, String error, boolean eject) {
        lock.lock();
        try {
            ServerSlot s = byAddress.get(server);
            if (s == null) {
                return;
            }
            s.failures++;
            s.lastError = error;
            if (eject && !s.ejected) {
                s.ejected = true;
                s.ejections++;
                routing.forget(s);
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
        lock.lock();
        try {
            ServerSlot s = byAddress.get(server);
            if (s == null) {
                return;
            }
            if (s.inRotation()) {
                s.lastError = reason;
            }
            if (!s.ejected) {
                s.ejected = true;
                s.ejections++;
                routing.forget(s);
                log.warn("ejected inference server {}: {}", server, reason);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Puts an ejected {@code server} back into rotation (its health probe passed). */
    public void readmit(ServerAddress server) {
        lock.lock();
        try {
            ServerSlot s = slot(server);
            if (s.ejected) {
                s.ejected = false;
                log.info("re-admitted inference server {}", server);
                rotationChanged.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Takes {@code server} out of rotation until a weight update succeeds on it. Ignored for a server that left. */
    public void markResyncPending(ServerAddress server, String reason) {
        lock.lock();
        try {
            ServerSlot s = byAddress.get(server);
            if (s == null) {
                return;
            }
            s.lastError = reason;
            if (!s.resyncPending) {
                s.resyncPending = true;
                routing.forget(s);
                log.warn("inference server {} is out of rotation until its weights are re-synced: {}", server, reason);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Marks {@code server}'s weights current again; it returns to rotation unless ejected. */
    public void clearResyncPending(ServerAddress server) {
        lock.lock();
        try {
            ServerSlot s = byAddress.get(server);
            if (s != null && s.resyncPending) {
                s.resyncPending = false;
                log.info("inference server {} has current weights again", server);
                rotationChanged.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /** True when {@code server} waits for a weight re-sync (false once it has left the pool). */
    public boolean isResyncPending(ServerAddress server) {
        lock.lock();
        try {
            ServerSlot s = byAddress.get(server);
            return s != null && s.resyncPending;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The servers out of rotation (ejected or waiting for a re-sync) that are not draining, in pool
     * order: the ones the health checker probes.
     */
    public List<ServerAddress> outOfRotation() {
        lock.lock();
        try {
            List<ServerAddress> out = new ArrayList<>();
            for (ServerSlot s : slots) {
                if (!s.draining && !s.inRotation()) {
                    out.add(s.address);
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
            return routing.stickyServer(rid);
        } finally {
            lock.unlock();
        }
    }

    /** A snapshot of every server in the pool, in pool order. */
    public List<ServerStats> stats() {
        lock.lock();
        try {
            List<ServerStats> out = new ArrayList<>(slots.size());
            for (ServerSlot s : slots) {
                out.add(s.stats());
            }
            return out;
        } finally {
            lock.unlock();
        }
    }

    /** A snapshot of {@code server}. */
    public ServerStats stats(ServerAddress server) {
        lock.lock();
        try {
            return slot(server).stats();
        } finally {
            lock.unlock();
        }
    }

    /** A snapshot of {@code server}, or empty once it has left the pool. */
    public Optional<ServerStats> find(ServerAddress server) {
        lock.lock();
        try {
            ServerSlot s = byAddress.get(server);
            return s == null ? Optional.empty() : Optional.of(s.stats());
        } finally {
            lock.unlock();
        }
    }

    /** Every server with its state and last error, for "no server" messages. Called under the lock. */
    private String describeAll() {
        StringBuilder sb = new StringBuilder();
        for (ServerSlot s : slots) {
            if (sb.length() > 0) {
                sb.append("; ");
            }
            sb.append(s.describe());
        }
        return sb.toString();
    }

    private ServerSlot slot(ServerAddress server) {
        ServerSlot s = byAddress.get(server);
        if (s == null) {
            throw new IllegalArgumentException("unknown server " + server + "; the pool has "
                    + slots.stream().map(o -> o.address).toList());
        }
        return s;
    }

    private static String seconds(Duration d) {
        return String.valueOf(d.toMillis() / 1000.0);
    }

    /**
     * One segment's claim on a server: counted as outstanding until {@link #close()}. Close it in a
     * {@code finally}; closing twice has no further effect. A draining server leaves the pool when
     * its last lease closes.
     */
    public final class Lease implements AutoCloseable {
        private final ServerSlot slot;
        private boolean closed;

        private Lease(ServerSlot slot) {
            this.slot = slot;
        }

        /** The chosen server. */
        public ServerAddress address() {
            return slot.address;
        }

        /**
         * Records the server's answer to a segment of {@code promptTokens} tokens that reported
         * {@code cachedTokens} of them found in its prefix cache (capped at the prompt).
         */
        void answered(int promptTokens, int cachedTokens) {
            lock.lock();
            try {
                slot.promptTokens += promptTokens;
                slot.cachedTokens += Math.min(promptTokens, cachedTokens);
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void close() {
            lock.lock();
            try {
                if (!closed) {
                    closed = true;
                    slot.outstanding--;
                    removeIfDrained(slot);
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
