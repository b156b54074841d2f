package org.rollout.inference;

import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import org.rollout.config.ServerAddress;

/**
 * A snapshot of one server as this engine sees it, for the status line and benchmarks.
 *
 * @param address the server
 * @param outstanding requests from this engine in flight on it now
 * @param ejected true while it is out of rotation after a failure, until a health probe passes
 * @param resyncPending true while it is out of rotation because a weight update (or the continue
 *     after one) failed on it; it returns after the last update is re-sent successfully
 * @param lastError the last failure seen on it, if any (kept after re-admission, for diagnosis)
 * @param requests attempts sent to it (generate segments)
 * @param failures attempts that failed on it
 * @param ejections times it left rotation after a failure or a failed health probe
 * @param draining true while it takes no new segments and leaves the pool when those in flight end
 * @param version the weight version it serves as far as the engine knows; empty for a server added
 *     at run time until its first load
 * @param promptTokens prompt tokens of the segments it answered with a {@code cached_tokens} count
 * @param cachedTokens of those, the tokens it reported found in its prefix cache
 */
public record ServerStats(
        ServerAddress address,
        int outstanding,
        boolean ejected,
        boolean resyncPending,
        Optional<String> lastError,
        long requests,
        long failures,
        long ejections,
        boolean draining,
        OptionalInt version,
        long promptTokens,
        long cachedTokens) {

    /** A server that is not draining, at version 0. */
    public ServerStats(
            ServerAddress address,
            int outstanding,
            boolean ejected,
            boolean resyncPending,
            Optional<String> lastError,
            long requests,
            long failures,
            long ejections) {
        this(
                address,
                outstanding,
                ejected,
                resyncPending,
                lastError,
                requests,
                failures,
                ejections,
                false,
                OptionalInt.of(0),
                0,
                0);
    }

    /** The share of prompt tokens its prefix cache served, or empty before any answer reported one. */
    public OptionalDouble prefixHitRate() {
        return promptTokens == 0 ? OptionalDouble.empty() : OptionalDouble.of((double) cachedTokens / promptTokens);
    }

    /** True when new segments may be routed to it. */
    public boolean inRotation() {
        return !ejected && !resyncPending && !draining;
    }

    /** {@code draining} or {@code active}, as {@code GET /v1/servers} shows it. */
    public String state() {
        return draining ? "draining" : "active";
    }
}
