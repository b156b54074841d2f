package org.rollout.modelserver;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.rollout.http.Http1Server;

/**
 * What the server tells about itself: {@code GET /get_model_info}, {@code GET /get_server_info}, and
 * {@code /_admin/faults} (GET the fault plan, POST a new one; clients on this host only).
 */
final class InfoEndpoints {
    private final ModelServer server;
    private final ModelServerConfig config;
    private final GenerationScheduler scheduler;
    private final FaultInjector faults;

    InfoEndpoints(ModelServer server, ModelServerConfig config, GenerationScheduler scheduler, FaultInjector faults) {
        this.server = server;
        this.config = config;
        this.scheduler = scheduler;
        this.faults = faults;
    }

    Http1Server.Response modelInfo() {
        TinyLmWeights w = scheduler.weights();
        ObjectNode o = Json.object();
        o.put("model_path", server.modelPath());
        o.put("tokenizer_path", "builtin:byte-level");
        o.put("is_generation", true);
        o.putNull("preferred_sampling_params");
        o.put("weight_version", Integer.toString(w.version()));
        o.put("architecture", "TinyLm");
        o.put("vocab_size", w.vocabSize());
        o.put("decay", w.decay());
        o.put("weights_digest", w.parameterDigest());
        return Replies.ok(o);
    }

    Http1Server.Response serverInfo() {
        ModelServerStats s = server.stats();
        ObjectNode o = Json.object();
        o.put("model_path", server.modelPath());
        o.put("host", config.host());
        o.put("port", server.port());
        o.put("weight_version", Integer.toString(s.weightVersion()));
        o.put("running_requests", s.running());
        o.put("queued_requests", s.queued());
        o.put("paused", s.paused());
        o.put("pause_mode", s.pauseMode());
        o.put("requests_total", s.requestsTotal());
        o.put("requests_finished", s.requestsFinished());
        o.put("requests_aborted", s.requestsAborted());
        o.put("tokens_generated", s.tokensGenerated());
        o.put("prefill_tokens", s.prefillTokens());
        o.put("hung_requests", s.hungRequests());
        o.put("busy_fraction", s.busyFraction());
        o.put("uptime_s", s.uptimeSeconds());
        o.put("max_running_requests", config.maxRunningRequests());
        ObjectNode latency = o.putObject("latency_model");
        latency.put("prefill_us_per_token", config.latency().prefillPerToken().toNanos() / 1000.0);
        latency.put("decode_base_us", config.latency().decodeBase().toNanos() / 1000.0);
        latency.put(
                "decode_us_per_sequence", config.latency().decodePerSequence().toNanos() / 1000.0);
        o.set("prefix_cache", prefixCache(server.prefixCacheStats()));
        o.set("faults", faults.plan().toJson());
        if (config.outputLengths() == null) {
            o.putNull("output_lengths");
        } else {
            ObjectNode lengths = o.putObject("output_lengths");
            lengths.put("distribution", config.outputLengths().distribution().spec());
            lengths.put("seed", config.outputLengths().seed());
        }
        return Replies.ok(o);
    }

    private static ObjectNode prefixCache(PrefixCacheStats s) {
        ObjectNode o = Json.object();
        o.put("capacity_tokens", s.capacityTokens());
        o.put("cached_tokens", s.cachedTokens());
        o.put("locked_tokens", s.lockedTokens());
        o.put("prompt_tokens", s.promptTokens());
        o.put("hit_tokens", s.hitTokens());
        o.put("hit_rate", s.hitRate());
        o.put("evicted_tokens", s.evictedTokens());
        o.put("flushes", s.flushes());
        return o;
    }

    Http1Server.Response adminFaults(Http1Server.Request req) {
        if (!ModelServer.fromThisHost(req.remote().getAddress())) {
            return Http1Server.Response.json(
                    403,
                    Json.errorBody(
                            403,
                            "/_admin/faults is served to clients on this host only, not "
                                    + req.remote().getAddress()));
        }
        if (req.method().equals("POST")) {
            ObjectNode body = Json.parseObject(req.body(), req.path());
            server.setFaults(FaultPlan.fromJson(body));
        } else if (!req.method().equals("GET")) {
            return Http1Server.Response.json(
                    405, Json.errorBody(405, req.method() + " /_admin/faults is not allowed: use GET or POST"));
        }
        ObjectNode o = faults.plan().toJson();
        o.put("hung_requests", faults.hungRequests());
        return Replies.ok(o);
    }
}
