package org.rollout.gateway;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.rollout.http.Http1Server.Exchange;
import org.rollout.http.Http1Server.Request;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.wire.GatewayJson;

/**
 * The read-only endpoints: {@code GET /health} (no token; 200, or 503 naming the problems), {@code
 * GET /v1/status} (the engine's status) and {@code GET /v1/stats?since_version=N} (its stats lines).
 */
final class StatusEndpoints {
    private static final ObjectMapper HEALTH_JSON = new ObjectMapper();

    /** The engine, by trainer rank. */
    private final List<RolloutClient> ranks;

    private final Supplier<GatewayHealth> health;

    StatusEndpoints(List<RolloutClient> ranks, Supplier<GatewayHealth> health) {
        this.ranks = List.copyOf(ranks);
        this.health = health;
    }

    void health(Exchange ex) throws IOException {
        GatewayHealth h = health.get();
        GatewayHttp.json(ex, h.ok() ? 200 : 503, h.ok() ? GatewayJson.health() : degraded(h));
    }

    /** The status of trainer rank {@code rank=R} (0 when absent): its budget, its batches. */
    void status(Request req, Exchange ex) throws Refusal, IOException, InterruptedException {
        GatewayHttp.json(
                ex, 200, GatewayJson.status(ranks.get(rankOf(req.query())).status()));
    }

    /** The trainer rank that {@code rank=R} of {@code rawQuery} names, 0 when absent; other parameters are not looked at. */
    private int rankOf(String rawQuery) throws Refusal {
        int rank = 0;
        if (rawQuery != null && !rawQuery.isEmpty()) {
            for (String pair : rawQuery.split("&")) {
                int eq = pair.indexOf('=');
                String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
                if (!name.equals("rank")) {
                    continue; // other parameters are left alone, as before ranks existed
                }
                String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
                try {
                    rank = PullQuery.rank(value, ranks.size());
                } catch (IllegalArgumentException e) {
                    throw new Refusal(400, "bad_request", e.getMessage());
                }
            }
        }
        return rank;
    }

    /**
     * The statistics lines of versions ≥ {@code since_version} from rank {@code rank}'s collector
     * (0 when absent): with several trainer ranks on different nodes each rank's collector writes
     * its own groups' lines.
     */
    void stats(Request req, Exchange ex) throws Refusal, IOException, InterruptedException {
        int since = sinceVersionOf(req.query());
        int rank = rankOf(req.query());
        try {
            GatewayHttp.json(ex, 200, GatewayJson.stats(ranks.get(rank).stats(since)));
        } catch (UnsupportedOperationException e) {
            throw new Refusal(501, "not_implemented", e.getMessage());
        }
    }

    /**
     * {@code since_version} of {@code GET /v1/stats}: an integer ≥ 0, 0 when absent. Any other
     * parameter is refused by name, so a misspelt one does not silently answer every version.
     */
    private static int sinceVersionOf(String rawQuery) throws Refusal {
        String value = null;
        if (rawQuery != null && !rawQuery.isEmpty()) {
            for (String pair : rawQuery.split("&")) {
                int eq = pair.indexOf('=');
                String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
                if (name.equals("rank")) {
                    continue; // read by rankOf
                }
                if (!name.equals("since_version")) {
                    throw new Refusal(
                            400,
                            "bad_request",
                            "unknown query parameter '" + name + "' (GET /v1/stats takes since_version and rank)");
                }
                value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            }
        }
        if (value == null) {
            return 0;
        }
        try {
            int v = Integer.parseInt(value.strip());
            if (v >= 0) {
                return v;
            }
        } catch (NumberFormatException e) {
            // Described below.
        }
        throw new Refusal(
                400,
                "bad_request",
                "query parameter 'since_version' must be an integer version >= 0, got '" + value + "'");
    }

    /** {@code {"status":"degraded","problems":[{"check","message"}, …]}}. */
    private static byte[] degraded(GatewayHealth h) {
        var body = new LinkedHashMap<String, Object>();
        body.put("status", "degraded");
        body.put(
                "problems",
                h.problems().stream()
                        .map(p -> Map.of("check", p.check(), "message", p.message()))
                        .toList());
        try {
            return HEALTH_JSON.writeValueAsBytes(body);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a map of strings always serializes", e);
        }
    }
}
