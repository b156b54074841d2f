package org.rollout.modelserver;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.rollout.http.Http1Server;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The generation endpoints, SGLang's {@code POST /generate} and vLLM's {@code POST /v1/completions}:
 * the request is parsed, the fault plan consulted (error, hang, crash, slow, malformed), the
 * generation submitted to the scheduler (with its LoRA adapter) and its result answered in the
 * protocol's shape; a client that disconnects aborts its generation.
 */
final class GenerateEndpoint {
    // Logs under the server's name, as the server's lines always have.
    private static final Logger log = LoggerFactory.getLogger(ModelServer.class);

    private final ModelServer server;
    private final GenerationScheduler scheduler;
    private final FaultInjector faults;
    private final LoraEndpoints lora;
    /** Completes when the server stops: held and slowed requests then get no answer. */
    private final CompletableFuture<Void> stopped;

    GenerateEndpoint(
            ModelServer server,
            GenerationScheduler scheduler,
            FaultInjector faults,
            LoraEndpoints lora,
            CompletableFuture<Void> stopped) {
        this.server = server;
        this.scheduler = scheduler;
        this.faults = faults;
        this.lora = lora;
        this.stopped = stopped;
    }

    /** @param sglang {@code /generate}'s shapes; else {@code /v1/completions}'s */
    Http1Server.Response generate(Http1Server.Request req, Http1Server.Exchange exchange, boolean sglang) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        GenerateRequests.Parsed parsed = sglang ? GenerateRequests.sglang(body) : GenerateRequests.vllm(body);
        FaultInjector.Decision fault = faults.onGenerate();
        if (fault.crash()) {
            log.warn("model server {}: crash_after fault strikes at rid '{}'", server.baseUrl(), parsed.rid());
            server.crash();
            return null;
        }
        if (fault.error()) {
            return Http1Server.Response.json(
                    500, Json.errorBody(500, "injected fault: internal server error for rid '" + parsed.rid() + "'"));
        }
        if (fault.hangUntil() != null) {
            faults.holding(() -> CompletableFuture.anyOf(fault.hangUntil(), exchange.disconnected(), stopped)
                    .join());
            if (stopped.isDone() || !exchange.isOpen()) {
                return null;
            }
        }
        LoraAdapter adapter = parsed.lora() == null ? null : lora.adapter(parsed.lora());
        if (adapter == null && parsed.lora() != null && parsed.loraRequired()) {
            throw new BadRequestException(
                    "lora_path",
                    "lora_path '" + parsed.lora() + "' is not a loaded LoRA adapter (loaded: " + lora.loaded() + ")");
        }
        Generation g = new Generation(
                parsed.rid(),
                parsed.prompt(),
                parsed.params(),
                GenerateRequests.seedOf(parsed.params()),
                parsed.inputLogprobStart(),
                adapter,
                parsed.promptLogprobs(),
                parsed.topLogprobs());
        CompletableFuture<GenerationResult> result;
        try {
            result = scheduler.submit(g);
        } catch (GenerationScheduler.DuplicateRidException e) {
            throw new BadRequestException(sglang ? "rid" : "request_id", e.getMessage());
        }
        exchange.onDisconnect(() -> scheduler.abort(g, "Aborted: the client disconnected"));
        GenerationResult r;
        try {
            r = result.join();
        } catch (CompletionException e) {
            if (server.crashed()) {
                return null;
            }
            Throwable cause = e.getCause() == null ? e : e.getCause();
            if (cause instanceof GenerationScheduler.StoppedException stoppedCause) {
                return Http1Server.Response.json(503, Json.errorBody(503, stoppedCause.getMessage()));
            }
            return Http1Server.Response.json(
                    500, Json.errorBody(500, "generation of rid '" + parsed.rid() + "' failed: " + cause));
        }
        ObjectNode json =
                sglang ? ResponseBodies.sglang(r, parsed) : ResponseBodies.vllm(r, parsed, server.modelPath());
        byte[] bytes = fault.malformed() == null
                ? Json.bytes(json)
                : ResponseBodies.malformed(json, fault.malformed(), sglang);
        if (!fault.slow().isZero()) {
            try {
                CompletableFuture.anyOf(exchange.disconnected(), stopped)
                        .get(fault.slow().toNanos(), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                // The injected delay has passed: answer now.
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException e) {
                throw new IllegalStateException("a completion signal cannot fail", e);
            }
            if (server.crashed()) {
                return null;
            }
        }
        return Http1Server.Response.json(200, bytes);
    }
}
