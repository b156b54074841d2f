package org.rollout.config;

/**
 * The {@code rollout.metrics} section: where a node without a trainer gateway serves {@code
 * /metrics}, {@code /health} and {@code /dashboard} (docs/observability.md; a node with a gateway
 * serves them on the gateway). Checked at load; read by {@link RolloutSettings#metrics()}.
 */
final class MetricsSection {
    private MetricsSection() {}

    static void check(ConfigReader r) {
        String host = r.string("rollout.metrics.host", false, "an address to bind, e.g. \"127.0.0.1\" or \"0.0.0.0\"");
        if (host != null && host.isBlank()) {
            r.error("rollout.metrics.host", host, "an address to bind, e.g. \"127.0.0.1\" or \"0.0.0.0\"");
        }
        r.integer(
                "rollout.metrics.port", -1, 65535, false, "a port in [0, 65535] (0 for any free port), or -1 for none");
        r.integer(
                "rollout.local.keep_weights",
                1,
                Integer.MAX_VALUE,
                false,
                "the number of newest weight files rollout local keeps, an integer >= 1");
    }
}
