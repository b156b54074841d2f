package org.rollout.gateway;

import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import org.rollout.http.Http1Server;

/**
 * What a node adds to its trainer gateway: the meter registry the gateway records batch hand-offs
 * in ({@code rollout_batch_handoff_size_bytes}, {@code
 * rollout_batch_handoff_duration_seconds}), the checks
 * behind {@code GET /health}, and more routes on the same server ({@code /metrics}, {@code
 * /dashboard} and the data it reads, {@code /v1/dashboard.json} and {@code
 * /v1/dashboard/history.json}, served without a token as {@code /health} is:
 * docs/observability.md).
 *
 * @param registry where the gateway's meters go, or null for none
 * @param health the health checks, or null to always answer ok
 * @param routes path prefix to handler, e.g. {@code /metrics}, {@code /v1/dashboard/history.json}
 * @param servers the inference servers behind {@code /v1/servers} (token-protected), or null for none
 */
public record GatewayExtras(
        MeterRegistry registry,
        Supplier<GatewayHealth> health,
        Map<String, Http1Server.Handler> routes,
        ServerDirectory servers) {
    public GatewayExtras {
        routes = Map.copyOf(Objects.requireNonNull(routes, "routes"));
    }

    /** No server list: {@code /v1/servers} answers 404. */
    public GatewayExtras(
            MeterRegistry registry, Supplier<GatewayHealth> health, Map<String, Http1Server.Handler> routes) {
        this(registry, health, routes, null);
    }

    /** Nothing added: the gateway's own endpoints, /health always ok. */
    public static final GatewayExtras NONE = new GatewayExtras(null, null, Map.of());
}
