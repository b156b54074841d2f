package org.rollout.config;

import java.util.Map;

/**
 * The cluster keys of the {@code rollout} section, their names and ranges: {@code
 * rollout.large_payload_threshold} and {@code rollout.large_payload_chunk_size}. The configuration checks the ranges at load; the cluster
 * module's {@code LargePayloads} reads both keys from the actor system's configuration and checks
 * them against Pekko's frame size, which is known only there.
 */
public final class LargePayloadLimits {
    /** Config key: inline messages at most this big (estimated bytes); bigger ones are streamed. */
    public static final String THRESHOLD_KEY = "rollout.large_payload_threshold";
    /** Config key: bytes per stream element. */
    public static final String CHUNK_KEY = "rollout.large_payload_chunk_size";
    /** Config key: how large payloads cross nodes. */
    public static final String TRANSPORT_KEY = "rollout.large_payload_transport";
    /** Config key: the data plane's port. */
    public static final String PORT_KEY = "rollout.large_payload_port";

    public static final String TRANSPORT_ALLOWED = "\"direct\" (the nodes' data plane) or \"stream-ref\" (over Artery)";
    public static final String PORT_ALLOWED = "a port from 0 (any free one) to 65535";

    public static final String THRESHOLD_ALLOWED = "a byte size >= 0 (e.g. 131072 or \"128 KiB\")";
    public static final String CHUNK_ALLOWED = "a byte size from 4 KiB to 64 MiB";
    public static final int MIN_CHUNK = 4 * 1024;
    public static final int MAX_CHUNK = 64 * 1024 * 1024;

    private LargePayloadLimits() {}

    /**
     * Range checks only: LargePayloads (cluster) reads both keys from the actor system's
     * configuration (which the launcher builds from these settings) and checks them against the
     * frame size, which is Pekko's and known only there.
     */
    static void check(ConfigReader r) {
        r.bytes(THRESHOLD_KEY, 0, Integer.MAX_VALUE, THRESHOLD_ALLOWED);
        r.bytes(CHUNK_KEY, MIN_CHUNK, MAX_CHUNK, CHUNK_ALLOWED);
        r.choice(TRANSPORT_KEY, Map.of("direct", "direct", "stream-ref", "stream-ref"), false, TRANSPORT_ALLOWED);
        r.integer(PORT_KEY, 0, 65535, false, PORT_ALLOWED);
    }
}
