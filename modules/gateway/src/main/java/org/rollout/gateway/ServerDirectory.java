package org.rollout.gateway;

import java.time.Duration;
import java.util.List;

/**
 * The inference servers behind {@code /v1/servers}: listed, added and drained while the engine runs
 * (docs/inference.md, "Servers at run time"). Implemented by the node over its inference engine.
 */
public interface ServerDirectory {
    /**
     * One server as {@code GET /v1/servers} shows it.
     *
     * @param address {@code host:port}
     * @param state {@code active} or {@code draining}
     * @param version the weight version it serves as far as the engine knows, or null before its first load
     * @param inRotation whether new segments may go to it now
     * @param outstanding segments in flight on it
     * @param requests segments this node's engine has sent to it
     * @param lastError the last failure seen on it, or null
     */
    record Entry(
            String address,
            String state,
            Integer version,
            boolean inRotation,
            int outstanding,
            long requests,
            String lastError) {}

    /** Every server, in pool order. */
    List<Entry> list();

    /**
     * Adds {@code address}; it serves once it has the current weights.
     *
     * @return false when it was already there and active
     * @throws IllegalArgumentException when {@code address} is not {@code host:port}, naming it
     */
    boolean add(String address);

    /**
     * Drains {@code address}: no new segments; those in flight finish, or after {@code handOverAfter}
     * are handed over to other servers with their tokens kept; then it leaves.
     *
     * @return false when it was already draining
     * @throws java.util.NoSuchElementException when it is not a server of this engine
     * @throws IllegalArgumentException when it is not {@code host:port}
     * @throws IllegalStateException when it is the last server that is not draining
     * @throws NotReplicatedException when a majority of nodes did not confirm it in time
     */
    boolean drain(String address, Duration handOverAfter);

    /**
     * An add or drain that a majority of the cluster's nodes did not confirm in time: it holds on
     * this node and reaches the others if this node stays in the cluster, but is lost if this node
     * is on the minority side of a partition and downs itself. Answered 503, so that the caller
     * repeats it (adds and drains are idempotent) through another node's gateway.
     */
    final class NotReplicatedException extends RuntimeException {
        public NotReplicatedException(String message) {
            super(message);
        }
    }
}
