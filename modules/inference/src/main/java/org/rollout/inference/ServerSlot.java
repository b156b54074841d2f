package org.rollout.inference;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import org.rollout.config.ServerAddress;

/** One server's state in a {@link ServerPool}. Fields under the pool's lock. */
final class ServerSlot {
    final ServerAddress address;
    int outstanding;
    boolean ejected;
    boolean resyncPending;
    boolean draining;
    boolean removed;
    /** The weight version it serves as far as this engine knows; -1 until its first load. */
    int version;

    String lastError;
    long requests;
    long failures;
    long ejections;
    /** Prompt tokens of answers that reported {@code cached_tokens}, and the cached tokens they reported. */
    long promptTokens;

    long cachedTokens;

    ServerSlot(ServerAddress address, int version) {
        this.address = address;
        this.version = version;
    }

    /** Neither ejected, nor waiting for a weight re-sync, nor draining. */
    boolean inRotation() {
        return !ejected && !resyncPending && !draining;
    }

    /** A snapshot of this server. */
    ServerStats stats() {
        return new ServerStats(
                address,
                outstanding,
                ejected,
                resyncPending,
                Optional.ofNullable(lastError),
                requests,
                failures,
                ejections,
                draining,
                version < 0 ? OptionalInt.empty() : OptionalInt.of(version),
                promptTokens,
                cachedTokens);
    }

    /** The server with its state and last error, for "no server" messages. */
    String describe() {
        List<String> states = new ArrayList<>();
        if (ejected) {
            states.add("ejected");
        }
        if (resyncPending) {
            states.add("waiting for a weight re-sync");
        }
        if (draining) {
            states.add("draining");
        }
        return address + " " + (states.isEmpty() ? "in rotation" : String.join(", ", states)) + " (last error: "
                + (lastError == null ? "none" : lastError) + ")";
    }
}
