package org.rollout.inference;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drains a server in the background: waits for its segments in flight to finish, and when {@code
 * handOverAfter} passes first asks it to hand them over (the protocol's abort-mode pause, then
 * continue), so each resumes on another server with its tokens kept.
 */
final class ServerDrain {
    // Logs under the engine's name, as the engine's lines always have.
    private static final Logger log = LoggerFactory.getLogger(RemoteInferenceEngine.class);

    private final InferenceConfig config;
    private final ServerProtocol protocol;
    private final HttpExchanges http;
    private final ServerPool pool;
    private final BooleanSupplier closed;

    /** @param closed whether the engine is closed (a drain then ends without a hand-over) */
    ServerDrain(
            InferenceConfig config,
            ServerProtocol protocol,
            HttpExchanges http,
            ServerPool pool,
            BooleanSupplier closed) {
        this.config = config;
        this.protocol = protocol;
        this.http = http;
        this.pool = pool;
        this.closed = closed;
    }

    /**
     * Drains {@code server}, already marked draining in the pool, on a virtual thread of its own;
     * returns at once.
     */
    void start(ServerAddress server, Duration handOverAfter) {
        Thread.ofVirtual().name("inference-drain-" + server).start(() -> {
            try {
                if (pool.awaitRemoved(server, handOverAfter) || closed.getAsBoolean() || !pool.contains(server)) {
                    return;
                }
                if (!pool.stats(server).draining()) {
                    return; // added again while draining
                }
                log.info(
                        "inference server {} still runs segments {} s into its drain: asking it to hand them over",
                        server,
                        handOverAfter.toMillis() / 1000.0);
                handOver(server);
                if (!pool.awaitRemoved(server, config.requestTimeout())) {
                    log.warn("inference server {} has not finished its segments after the hand-over", server);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException e) {
                log.warn("drain of inference server {} failed", server, e);
            }
        });
    }

    /**
     * Aborts every request on {@code server} with the protocol's first pause call (abort mode: each
     * returns its partial output with {@code abort}), then sends continue, so the server is left
     * serving. Best effort: failures are logged.
     */
    private void handOver(ServerAddress server) throws InterruptedException {
        for (ControlCall call : List.of(protocol.pauseCalls().get(0), protocol.continueCall())) {
            try {
                HttpResponse<byte[]> r =
                        HttpExchanges.await(http.start(server, call, config.controlTimeout()), config.controlTimeout());
                if (!HttpExchanges.isSuccess(r.statusCode())) {
                    log.warn("hand-over on draining server {}: {} answered HTTP {}", server, call, r.statusCode());
                }
            } catch (IOException e) {
                log.warn("hand-over on draining server {}: {} failed: {}", server, call, e.toString());
            }
        }
    }
}
