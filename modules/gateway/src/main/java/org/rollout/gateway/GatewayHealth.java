package org.rollout.gateway;

import java.util.List;

/**
 * What {@code GET /health} reports: {@code ok}, or each problem found (e.g. no model server in
 * rotation, no coordinator reachable). A node builds it from its engine; the gateway answers 200
 * {@code {"status":"ok"}} or 503 {@code {"status":"degraded","problems":[{"check","message"}]}}.
 *
 * @param problems what is wrong; empty when healthy
 */
public record GatewayHealth(List<Problem> problems) {
    public GatewayHealth {
        problems = List.copyOf(problems);
    }

    /** Healthy. */
    public static final GatewayHealth OK = new GatewayHealth(List.of());

    /** One failed check: a stable name ({@code model_servers}, {@code coordinator}) and what is wrong. */
    public record Problem(String check, String message) {}

    /** True when nothing is wrong. */
    public boolean ok() {
        return problems.isEmpty();
    }
}
