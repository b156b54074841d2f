package org.rollout.inference;

import java.util.Optional;
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
 */
public record ServerStats(
        ServerAddress address,
        int outstanding,
        boolean ejected,
        boolean resyncPending,
        Optional<String> lastError,
        long requests,
        long failures,
        long ejections) {

    /** True when new segments may be routed to it. */
    public boolean inRotation() {
        return !ejected && !resyncPending;
    }
}
