package org.rollout.modelserver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.rollout.http.Http1Server;

/**
 * The generation control endpoints: SGLang's {@code /pause_generation}, {@code /continue_generation}
 * and {@code /abort_request}, AReaL's {@code /areal_pause_generation} and {@code
 * /areal_continue_generation}, and upstream vLLM's {@code /pause}, {@code /resume} and {@code
 * /is_paused}; each a call on the scheduler, awaited.
 */
final class ControlEndpoints {
    private static final long AWAIT_TIMEOUT_MILLIS = ModelServer.CLOSE_TIMEOUT_MILLIS;

    private final GenerationScheduler scheduler;
    private final FaultInjector faults;

    ControlEndpoints(GenerationScheduler scheduler, FaultInjector faults) {
        this.scheduler = scheduler;
        this.faults = faults;
    }

    Http1Server.Response pause(Http1Server.Request req, boolean vllm) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        boolean abortMode = true;
        if (!vllm) {
            JsonNode mode = body.get("mode");
            String m = mode == null || mode.isNull() ? "abort" : mode.asText();
            if (mode != null && !mode.isNull() && !mode.isTextual()) {
                throw new BadRequestException("mode", "mode must be a string: abort, in_place or retract");
            }
            abortMode = switch (m) {
                case "abort" -> true;
                case "in_place", "retract" -> false;
                default ->
                    throw new BadRequestException("mode", "mode '" + m + "' is not one of abort, in_place, retract");
            };
        }
        int aborted = await(scheduler.pause(abortMode), "pause");
        return Replies.success("Generation paused (" + (abortMode ? "abort" : "in_place") + " mode); " + aborted
                + " requests aborted.");
    }

    /** Upstream vLLM {@code POST /pause?mode=abort|keep}: abort (the default) ends what runs with abort. */
    Http1Server.Response upstreamPause(Http1Server.Request req) {
        String mode = "abort";
        for (String pair : req.query().split("&")) {
            if (pair.startsWith("mode=")) {
                mode = pair.substring("mode=".length());
            }
        }
        boolean abortMode = switch (mode) {
            case "abort" -> true;
            case "keep" -> false;
            default ->
                throw new BadRequestException(
                        "mode", "mode '" + mode + "' is not supported by the built-in server: abort or keep");
        };
        await(scheduler.pause(abortMode), "pause");
        ObjectNode o = Json.object();
        o.put("status", "paused");
        return Replies.ok(o);
    }

    /** Upstream vLLM {@code POST /resume}. */
    Http1Server.Response upstreamResume() {
        await(scheduler.resume(), "resume");
        ObjectNode o = Json.object();
        o.put("status", "resumed");
        return Replies.ok(o);
    }

    /** Upstream vLLM {@code GET /is_paused}. */
    Http1Server.Response isPaused() {
        ObjectNode o = Json.object();
        o.put("is_paused", scheduler.stats(faults.hungRequests()).paused());
        return Replies.ok(o);
    }

    Http1Server.Response resume(Http1Server.Request req) {
        Json.parseObject(req.body(), req.path());
        await(scheduler.resume(), "continue");
        return Replies.success("Generation continued.");
    }

    Http1Server.Response abortRequest(Http1Server.Request req) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        JsonNode all = body.get("abort_all");
        if (all != null && !all.isNull() && !all.isBoolean()) {
            throw new BadRequestException("abort_all", "abort_all must be true or false, got " + all);
        }
        if (all != null && all.asBoolean()) {
            int n = await(scheduler.abortAllRequests("Aborted by abort_request (abort_all)"), "abort_all");
            return Replies.success("Aborted " + n + " requests.");
        }
        JsonNode rid = body.get("rid");
        if (rid == null || rid.isNull() || !rid.isTextual() || rid.asText().isEmpty()) {
            throw new BadRequestException("rid", "abort_request needs a non-empty string rid or abort_all: true");
        }
        boolean found = await(scheduler.abort(rid.asText()), "abort");
        return Replies.success(
                found ? "Aborted rid '" + rid.asText() + "'." : "rid '" + rid.asText() + "' is not in flight.");
    }

    private static <T> T await(CompletableFuture<T> f, String what) {
        try {
            return f.get(AWAIT_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new GenerationScheduler.StoppedException("interrupted while waiting for " + what);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof GenerationScheduler.StoppedException s) {
                throw s;
            }
            throw new IllegalStateException(what + " failed on the scheduler: " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException(
                    "the scheduler did not run " + what + " within " + AWAIT_TIMEOUT_MILLIS + " ms");
        }
    }
}
