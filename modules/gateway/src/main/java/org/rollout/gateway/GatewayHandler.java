package org.rollout.gateway;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.rollout.http.Http1Server;
import org.rollout.http.Http1Server.Exchange;
import org.rollout.http.Http1Server.Request;
import org.rollout.http.Http1Server.Response;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.wire.GatewayJson;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's endpoints, each a call on the engine-side {@link RolloutClient}. One exchange per
 * virtual thread; blocking is fine here.
 *
 * <pre>
 *   GET  /health                     no token; 200 {"status":"ok"} | 503 {"status":"degraded","problems":[..]}
 *   POST /v1/batches/next?wait=S     engine.nextBatch(min(S, max_poll_wait)) → 200 RBATCH stream | 204
 *        [&lease=L&holder=H]         held for H while H renews within L seconds (PullQuery)
 *        (X-Rollout-Follow-Redirect: 1)  → 307 Location: the same pull on the gateway of the node that
 *                                    holds the batches, when that is another node with a gateway
 *   POST /v1/batches/{id}/ack        engine.acknowledge(id, task ids)       → 200 {"batch_id","known"}
 *        [{"task_ids": [..]}]
 *   POST /v1/leases/renew            engine.renewLease(holder, lease)       → 200 {"holder","lease_seconds","batch_ids"}
 *        {"holder", "lease"}
 *   POST /v1/weights                 engine.publishWeights(version, path)  → 200 | 409 | 502
 *        {"version", "tensors"}      (weight_transfer = nccl) the tensors' names, dtypes, shapes spooled
 *                                    as a manifest on this node, then published as above
 *   POST /v1/weights?version=N       (application/octet-stream: the weight file's bytes) spooled
 *                                    on this node, then published as above → 200 | 400 | 409 | 502
 *   GET  /v1/status                  engine.status()                        → 200
 *   GET  /v1/stats?since_version=N   engine.stats(N)                        → 200 {"lines","complete_below"} | 400
 *   GET  /v1/servers                 the inference servers, state, version → 200
 *   POST /v1/servers                 {"address": "host:port"}: added       → 201 | 200 (already there) | 400
 *   DELETE /v1/servers/{host:port}[?hand_over_after=S]  drained            → 202 | 200 (already) | 404 | 409
 * </pre>
 *
 * <p>Every error is {@code {"error": {"message", "code"}}} with its status. Nothing is swallowed: an
 * engine failure is a 500 carrying the engine's message (and logged with its stack); a trainer that
 * goes away mid-batch is logged, and its batch comes again after {@code batch_ack_timeout}.
 *
 * <p>This class checks the token and routes; the endpoints are {@link BatchEndpoints} (pulls, acks,
 * leases; their streams watched by {@link BatchStreamWatch}), {@link WeightEndpoints}, {@link
 * ServerEndpoints} and {@link StatusEndpoints}; refusals are {@link Refusal}s, counted in {@link
 * GatewayMeters}.
 */
final class GatewayHandler implements Http1Server.Handler {
    private static final Logger log = LoggerFactory.getLogger(GatewayHandler.class);
    private static final Pattern ACK = Pattern.compile("/v1/batches/([^/]+)/ack");
    private static final Pattern SERVER = Pattern.compile("/v1/servers/([^/]+)");

    static final int MAX_REQUEST_BYTES = 64 * 1024;

    private final BearerToken token;
    private final int maxWaitingPulls;
    private final Semaphore pullSlots;
    private final GatewayMeters meters;
    private final BatchStreamWatch watch;
    private final BatchEndpoints batches;
    private final WeightEndpoints weights;
    private final ServerEndpoints servers;
    private final StatusEndpoints status;

    GatewayHandler(RolloutClient engine, GatewayConfig config) {
        this(engine, config, GatewayExtras.NONE);
    }

    GatewayHandler(RolloutClient engine, GatewayConfig config, GatewayExtras extras) {
        this(engine, config, extras, () -> 0L);
    }

    /** @param connectionsAccepted the connections the gateway's server accepted so far (a meter) */
    GatewayHandler(RolloutClient engine, GatewayConfig config, GatewayExtras extras, LongSupplier connectionsAccepted) {
        this(List.of(engine), config, extras, connectionsAccepted);
    }

    /**
     * As above, for a trainer that pulls with several data-parallel ranks: {@code ranks.get(r)} is
     * rank {@code r}'s handle (pulls, acknowledgements, status); rank 0's publishes and reads the
     * run's statistics.
     */
    GatewayHandler(
            List<RolloutClient> ranks, GatewayConfig config, GatewayExtras extras, LongSupplier connectionsAccepted) {
        RolloutClient engine = ranks.get(0);
        this.token = config.token() == null ? null : new BearerToken(config.token());
        this.maxWaitingPulls = config.maxWaitingPulls();
        this.pullSlots = new Semaphore(maxWaitingPulls);
        this.meters = new GatewayMeters(extras.registry(), pullSlots, maxWaitingPulls, connectionsAccepted);
        this.watch = new BatchStreamWatch(config.writeTimeout(), meters);
        this.batches = new BatchEndpoints(ranks, config.maxPollWait(), pullSlots, maxWaitingPulls, meters, watch);
        this.weights = new WeightEndpoints(engine);
        this.servers = new ServerEndpoints(extras.servers());
        this.status = new StatusEndpoints(ranks, extras.health() == null ? () -> GatewayHealth.OK : extras.health());
    }

    /** Pulls this gateway serves now. */
    int pullsUnderWay() {
        return maxWaitingPulls - pullSlots.availablePermits();
    }

    long pullsRefused() {
        return meters.pullsRefused.get();
    }

    /** Pulls served (not refused) so far. */
    long pullsAdmitted() {
        return meters.pullsAdmitted.get();
    }

    /** Batches whose connection closed before their last byte, handed back for the next pull. */
    long batchesReleased() {
        return meters.batchesReleased.get();
    }

    /** Pulls answered 307 to the gateway of the node that holds the batches. */
    long pullsRedirected() {
        return meters.pullsRedirected.get();
    }

    long writesTimedOut() {
        return meters.writesTimedOut.get();
    }

    /** Stops the stall watch. */
    void stopWatching() {
        watch.stop();
    }

    /** Interrupts every pull waiting for a batch: each is answered 503, so its trainer tries another contact point. */
    void interruptPulls() {
        batches.interruptPulls();
    }

    /** Whether a request is a weight upload, whose body is copied to disk as it arrives. */
    static boolean isUpload(Request req) {
        return req.path().equals("/v1/weights") && WeightEndpoints.isUpload(req);
    }

    /** Answers on the exchange; returns null (nothing answered: the connection closes). */
    @Override
    public Response handle(Request req, Exchange ex) {
        String method = req.method();
        String path = req.path();
        try {
            if (isUpload(req)) {
                authorize(req); // before a single byte is spooled
                GatewayHttp.expect(req, "POST");
                weights.upload(req, ex);
                return null;
            }
            byte[] body = GatewayHttp.readBody(req);
            if (path.equals("/health")) {
                GatewayHttp.expect(req, "GET");
                status.health(ex);
                return null;
            }
            authorize(req);
            Matcher ack = ACK.matcher(path);
            Matcher server = SERVER.matcher(path);
            switch (path) {
                case "/v1/batches/next" -> {
                    GatewayHttp.expect(req, "POST");
                    batches.next(req, ex);
                }
                case "/v1/weights" -> {
                    GatewayHttp.expect(req, "POST");
                    weights.publish(ex, body);
                }
                case "/v1/leases/renew" -> {
                    GatewayHttp.expect(req, "POST");
                    batches.renewLease(ex, body);
                }
                case "/v1/status" -> {
                    GatewayHttp.expect(req, "GET");
                    status.status(req, ex);
                }
                case "/v1/stats" -> {
                    GatewayHttp.expect(req, "GET");
                    status.stats(req, ex);
                }
                case "/v1/servers" -> servers.listOrAdd(req, ex, body);
                default -> {
                    if (server.matches()) {
                        GatewayHttp.expect(req, "DELETE");
                        servers.drain(req, ex, server.group(1));
                        return null;
                    }
                    if (!ack.matches()) {
                        throw new Refusal(
                                404,
                                "not_found",
                                "no endpoint " + method + " " + path + " (endpoints: POST /v1/batches/next, POST"
                                        + " /v1/batches/{id}/ack, POST /v1/leases/renew, POST /v1/weights, GET /v1/status, GET /v1/stats,"
                                        + " GET|POST /v1/servers, DELETE /v1/servers/{host:port}, GET /health)");
                    }
                    GatewayHttp.expect(req, "POST");
                    batches.acknowledge(ex, ack.group(1), body);
                }
            }
        } catch (Refusal r) {
            if (r.status >= 500 && !r.code.equals(Refusal.TOO_MANY_PULLS)) {
                log.warn("{} {}: {} {}", method, path, r.status, r.getMessage());
            }
            if (r.allow != null) {
                ex.setHeader("Allow", r.allow);
            }
            if (r.status == 401) {
                ex.setHeader("WWW-Authenticate", "Bearer realm=\"rollout\"");
            }
            if (r.code.equals(Refusal.TOO_MANY_PULLS)) {
                ex.setHeader("Retry-After", "1");
            }
            GatewayHttp.respondQuietly(ex, r.status, GatewayJson.error(r.code, r.getMessage()));
        } catch (InterruptedException e) {
            // The gateway is closing: the trainer should try another contact point.
            GatewayHttp.respondQuietly(
                    ex, 503, GatewayJson.error("unavailable", "the trainer gateway is shutting down"));
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            log.info("{} {}: the trainer went away: {}", method, path, e.toString());
        } catch (RuntimeException e) {
            log.warn("{} {}: the engine failed", method, path, e);
            GatewayHttp.respondQuietly(ex, 500, GatewayJson.error("engine_error", String.valueOf(e.getMessage())));
        }
        return null;
    }

    private void authorize(Request req) throws Refusal {
        if (token == null) {
            return;
        }
        switch (token.check(req.header("Authorization"))) {
            case ACCEPTED -> {}
            case MISSING ->
                throw new Refusal(
                        401, "unauthorized", "this gateway requires an 'Authorization: Bearer <token>' header");
            case WRONG -> throw new Refusal(401, "unauthorized", "the bearer token does not match");
        }
    }
}
