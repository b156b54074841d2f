package org.rollout.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.distribution.CountAtBucket;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.net.BindException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.rollout.cluster.EngineMetrics;
import org.rollout.cluster.LocalRolloutClient;
import org.rollout.cluster.ReplicatedServerList;
import org.rollout.cluster.RolloutCoordinator;
import org.rollout.cluster.StatsBook;
import org.rollout.core.TrajectoryDumper;
import org.rollout.gateway.GatewayExtras;
import org.rollout.gateway.GatewayHealth;
import org.rollout.http.Http1Server;
import org.rollout.http.Http1Server.Request;
import org.rollout.http.Http1Server.Response;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.inference.ServerStats;
import org.rollout.trainer.RolloutStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's observability (docs/observability.md): one Prometheus registry fed by the inference
 * client, the engine's statistics and status, and the gateway's batch hand-offs; the routes that
 * serve it ({@code /metrics}, {@code /dashboard}, {@code /v1/dashboard.json}, {@code
 * /v1/dashboard/history.json}); and the checks of {@code /health}. A node with the gateway role
 * serves the routes on its gateway ({@link #gatewayExtras}); any other node, and {@code rollout
 * local}, on a listener of its own at {@code rollout.metrics.host:port} ({@link #listen}).
 *
 * <p>Once the routes are served, a sampler thread adds the engine's counters to a {@link
 * DashboardHistory} every {@link #SAMPLE_INTERVAL}, so that a dashboard opened mid-run draws the
 * last {@link DashboardHistory#CAPACITY} samples at once; {@link #close()} stops it.
 */
final class NodeObservability implements AutoCloseable {
    static final String PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Logger log = LoggerFactory.getLogger(NodeObservability.class);
    /** How often the dashboard's history takes a sample: the page's own poll interval. */
    static final Duration SAMPLE_INTERVAL = Duration.ofSeconds(1);

    private final String node;
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final RemoteInferenceEngine engine;
    private final StatsBook stats;
    private final EngineMetrics engineMetrics;
    private volatile TrajectoryDumper dumper;
    private volatile FailureWatch failureWatch;
    private final DashboardHistory history = new DashboardHistory(DashboardHistory.CAPACITY);
    private ScheduledExecutorService sampler;
    private Http1Server server;

    NodeObservability(String node, RemoteInferenceEngine engine, StatsBook stats, LocalRolloutClient client) {
        this.node = node;
        this.engine = engine;
        this.stats = stats;
        registry.config().commonTags("node", node);
        new JvmMemoryMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        engine.bindMetrics(registry);
        engineMetrics = EngineMetrics.bind(registry, stats, client);
        // Served whether or not this node dumps (0 without a dumper): a full disk shows here.
        FunctionCounter.builder("rollout_dump_files_written", this, o -> o.dumper == null ? 0 : o.dumper.filesWritten())
                .description("trajectory dump writes that succeeded (rollout.dump_to_file)")
                .register(registry);
        FunctionCounter.builder(
                        "rollout_dump_writes_failed", this, o -> o.dumper == null ? 0 : o.dumper.writeFailures())
                .description("trajectory dump writes that failed (no space left, an I/O error); the groups went on")
                .register(registry);
        Gauge.builder("rollout_failure_breaker_tripped", this, o -> o.breakerMessage() == null ? 0 : 1)
                .description(
                        "1 once the failure breaker stopped admission: the run cannot make progress (/health says why)")
                .register(registry);
    }

    /** Reports {@code watch}'s trip on {@code /health} and {@code /metrics}. */
    NodeObservability withFailureWatch(FailureWatch watch) {
        this.failureWatch = watch;
        return this;
    }

    private String breakerMessage() {
        FailureWatch w = failureWatch;
        return w == null ? null : w.message();
    }

    /** Counts {@code dumper}'s writes in {@code rollout_dump_*} from now on (a node that dumps). */
    NodeObservability withDumper(Optional<TrajectoryDumper> dumper) {
        this.dumper = dumper.orElse(null);
        return this;
    }

    PrometheusMeterRegistry registry() {
        return registry;
    }

    /** The Prometheus text of every meter now. */
    String scrape() {
        engineMetrics.beforeScrape();
        return registry.scrape();
    }

    /**
     * What {@code /health} reports: a problem when no model server is in rotation (each server's
     * last error named) and when the coordinator and collector do not answer.
     */
    GatewayHealth health() {
        List<GatewayHealth.Problem> problems = new ArrayList<>();
        List<ServerStats> servers = engine.serverStats();
        if (servers.stream().noneMatch(ServerStats::inRotation)) {
            List<String> parts = new ArrayList<>();
            for (ServerStats s : servers) {
                parts.add(s.address() + " " + (s.ejected() ? "ejected" : "waiting for a weight re-sync") + " ("
                        + s.lastError().orElse("no error recorded") + ")");
            }
            problems.add(new GatewayHealth.Problem(
                    "model_servers", "no model server in rotation: " + String.join("; ", parts)));
        }
        String breaker = breakerMessage();
        if (breaker != null) {
            problems.add(new GatewayHealth.Problem("failure_breaker", breaker.replace("\n  ", "; ")));
        }
        if (engineMetrics.status() == null) {
            problems.add(new GatewayHealth.Problem(
                    "coordinator",
                    "the coordinator did not answer within " + EngineMetrics.STATUS_TIMEOUT.toMillis() + " ms: "
                            + engineMetrics.statusError()));
        }
        return new GatewayHealth(problems);
    }

    /** The routes and checks a gateway on this node adds. */
    GatewayExtras gatewayExtras() {
        return gatewayExtras(null);
    }

    /**
     * The routes and checks a gateway on this node adds, with {@code /v1/servers} going through
     * {@code servers} (the cluster's replicated list; null: this node's engine only).
     */
    GatewayExtras gatewayExtras(ReplicatedServerList servers) {
        return new GatewayExtras(registry, this::health, routes(), new EngineServerDirectory(engine, servers));
    }

    private Map<String, Http1Server.Handler> routes() {
        startSampling();
        Map<String, Http1Server.Handler> routes = new LinkedHashMap<>();
        routes.put("/metrics", get("/metrics", () -> respond(200, PROMETHEUS_CONTENT_TYPE, scrape())));
        routes.put(
                "/dashboard",
                get(
                        "/dashboard",
                        () -> respond(
                                200, "text/html; charset=utf-8", new String(dashboardPage(), StandardCharsets.UTF_8))));
        routes.put(
                "/v1/dashboard.json",
                get(
                        "/v1/dashboard.json",
                        () -> respond(200, "application/json", JSON.writeValueAsString(dashboard()))));
        routes.put(
                "/v1/dashboard/history.json",
                get(
                        "/v1/dashboard/history.json",
                        () -> respond(200, "application/json", JSON.writeValueAsString(dashboardHistory()))));
        return routes;
    }

    /** Starts the dashboard's sampler, once, whichever server serves the routes. */
    private synchronized void startSampling() {
        if (sampler != null) {
            return;
        }
        sampler = Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().daemon().name("dashboard-history").factory());
        sampler.scheduleAtFixedRate(this::sample, 0, SAMPLE_INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Adds the engine's counters now to the history; nothing while the coordinator does not answer. */
    private void sample() {
        try {
            RolloutStatus s = engineMetrics.status();
            if (s != null) {
                history.add(new DashboardHistory.Sample(
                        System.currentTimeMillis() / 1000.0,
                        s.version(),
                        s.accepted(),
                        s.rejected(),
                        s.tokensGenerated()));
            }
        } catch (RuntimeException e) {
            // Logged, not thrown: a scheduled task that throws is never run again.
            log.warn("the dashboard history could not take a sample of node {}: {}", node, e.toString(), e);
        }
    }

    /** The JSON the dashboard reads on open: the samples of {@link #history}, oldest first. */
    Map<String, Object> dashboardHistory() {
        List<Map<String, Object>> samples = new ArrayList<>();
        for (DashboardHistory.Sample s : history.samples()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("time", s.time());
            m.put("version", s.version());
            m.put("accepted", s.accepted());
            m.put("rejected", s.rejected());
            m.put("tokens_generated", s.tokensGenerated());
            samples.add(m);
        }
        Map<String, Object> h = new LinkedHashMap<>();
        h.put("node", node);
        h.put("interval_s", SAMPLE_INTERVAL.toMillis() / 1000.0);
        h.put("capacity", history.capacity());
        h.put("samples", samples);
        return h;
    }

    /**
     * Starts the node's own listener with {@code /metrics}, {@code /dashboard}, {@code
     * /v1/dashboard.json}, {@code /v1/dashboard/history.json} and {@code /health}.
     *
     * @return its base URL
     */
    URI listen(String host, int port) throws IOException {
        Map<String, Http1Server.Handler> routes = routes();
        routes.put("/health", get("/health", () -> {
            GatewayHealth h = health();
            return respond(
                    h.ok() ? 200 : 503,
                    "application/json",
                    h.ok()
                            ? "{\"status\":\"ok\"}"
                            : JSON.writeValueAsString(Map.of("status", "degraded", "problems", h.problems())));
        }));
        Http1Server.Handler notFound = (req, ex) -> respond(404, "text/plain", "no endpoint " + req.path() + "\n");
        try {
            server = Http1Server.start(
                    host,
                    port,
                    (req, ex) -> {
                        // The route whose path is the longest prefix of the request's; 404 below it.
                        Http1Server.Handler best = notFound;
                        int length = -1;
                        for (Map.Entry<String, Http1Server.Handler> r : routes.entrySet()) {
                            if (req.path().startsWith(r.getKey()) && r.getKey().length() > length) {
                                best = r.getValue();
                                length = r.getKey().length();
                            }
                        }
                        return best.handle(req, ex);
                    },
                    "metrics-http");
        } catch (BindException e) {
            throw new IOException(
                    "cannot bind the metrics listener (rollout.metrics.host, rollout.metrics.port) to " + host + ":"
                            + port + ": " + e.getMessage(),
                    e);
        }
        String bound = server.address().getAddress().getHostAddress();
        if (bound.contains(":")) {
            bound = "[" + bound + "]";
        }
        return URI.create("http://" + bound + ":" + server.port());
    }

    /** The JSON the dashboard polls: status, servers, nodes, per-version statistics, staleness, weight updates. */
    Map<String, Object> dashboard() {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("node", node);
        d.put("time", System.currentTimeMillis() / 1000.0);
        RolloutStatus s = engineMetrics.status();
        if (s != null) {
            Map<String, Object> st = new LinkedHashMap<>();
            st.put("version", s.version());
            st.put("running", s.running());
            st.put("eval_running", s.evalRunning());
            st.put("accepted", s.accepted());
            st.put("rejected", s.rejected());
            st.put("capacity", s.capacity());
            st.put("buffered_groups", s.bufferedGroups());
            st.put("unacknowledged_batches", s.unacknowledgedBatches());
            st.put("held_outcomes", s.heldOutcomes());
            st.put("tokens_generated", s.tokensGenerated());
            st.put("rejected_by_reason", s.rejectedByReason());
            d.put("status", st);
        } else {
            d.put("status", null);
            d.put("status_error", engineMetrics.statusError());
        }
        RolloutCoordinator.Status c = engineMetrics.coordinatorStatus();
        d.put("in_flight_by_node", c == null ? Map.of() : c.inFlightByNode());
        List<Map<String, Object>> servers = new ArrayList<>();
        for (ServerStats ss : engine.serverStats()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("server", ss.address().toString());
            m.put("in_rotation", ss.inRotation());
            m.put("in_flight", ss.outstanding());
            m.put("requests", ss.requests());
            m.put("failures", ss.failures());
            m.put("ejections", ss.ejections());
            m.put("last_error", ss.lastError().orElse(null));
            Timer latency = registry.find("rollout_inference_request")
                    .tag("server", ss.address().toString())
                    .timer();
            m.put("mean_latency_ms", latency == null ? 0 : latency.mean(TimeUnit.MILLISECONDS));
            m.put("prompt_tokens", ss.promptTokens());
            m.put("cached_tokens", ss.cachedTokens());
            m.put(
                    "prefix_hit_rate",
                    ss.prefixHitRate().isPresent() ? ss.prefixHitRate().getAsDouble() : null);
            Timer update = registry.find("rollout_weight_update_server")
                    .tag("server", ss.address().toString())
                    .timer();
            m.put("weight_updates", update == null ? 0 : update.count());
            m.put("weight_update_mean_ms", update == null ? 0 : update.mean(TimeUnit.MILLISECONDS));
            servers.add(m);
        }
        d.put("servers", servers);
        List<Map<String, Object>> versions = new ArrayList<>();
        for (StatsBook.Line l : stats.history()) {
            Map<String, Object> v = new LinkedHashMap<>(l.values());
            versions.add(v);
        }
        d.put("versions", versions);
        d.put("latest", stats.latestMeans());
        Map<String, Object> staleness = new LinkedHashMap<>();
        DistributionSummary summary = registry.find("rollout_staleness").summary();
        if (summary != null) {
            double below = 0;
            for (CountAtBucket b : summary.takeSnapshot().histogramCounts()) {
                // Bounds are n + 0.5 (EngineMetrics.STALENESS_BUCKETS): the bucket holds up to n.
                staleness.put("<=" + (long) Math.floor(b.bucket()), b.count() - below);
                below = b.count();
            }
            staleness.put("more", summary.count() - below);
        }
        d.put("staleness", staleness);
        return d;
    }

    static byte[] dashboardPage() throws IOException {
        try (InputStream in = NodeObservability.class.getResourceAsStream("/dashboard/index.html")) {
            if (in == null) {
                throw new IOException("dashboard/index.html is missing from the jar");
            }
            return in.readAllBytes();
        }
    }

    private interface Answer {
        Response get() throws IOException;
    }

    /** A handler for GET on exactly {@code path}: 404 below it, 405 for other methods. */
    private static Http1Server.Handler get(String path, Answer answer) {
        return (Request req, Http1Server.Exchange ex) -> {
            if (!req.path().equals(path)) {
                return respond(404, "text/plain", "no endpoint " + req.path() + "\n");
            }
            if (!req.method().equals("GET")) {
                return respond(405, "text/plain", path + " takes GET, not " + req.method() + "\n")
                        .withHeader("Allow", "GET");
            }
            try {
                return answer.get();
            } catch (RuntimeException e) {
                return respond(500, "text/plain", "metrics failed: " + e + "\n");
            }
        };
    }

    private static Response respond(int status, String contentType, String text) {
        return new Response(
                status, contentType, text.getBytes(StandardCharsets.UTF_8), Map.of("Cache-Control", "no-store"));
    }

    @Override
    public void close() {
        synchronized (this) {
            if (sampler != null) {
                sampler.shutdownNow();
            }
        }
        if (server != null) {
            server.close(0);
        }
        registry.close();
    }
}
