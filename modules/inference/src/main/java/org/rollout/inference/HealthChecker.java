package org.rollout.inference;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.rollout.config.ServerAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Probes servers with {@code GET /health}: once for all of them at start
 * ({@link RemoteInferenceEngine#initialize()}), and in the background, every
 * {@code health_check_interval}, for the servers out of rotation. A background probe that passes
 * hands the server to {@code onHealthy} (the engine re-admits it, or re-syncs its weights first);
 * one that fails records the error as the server's last error.
 *
 * <p>One virtual thread; {@link #close()} stops it. Only servers out of rotation are probed: a
 * server in rotation shows its failures on the requests it serves.
 */
final class HealthChecker implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(HealthChecker.class);

    /** What the engine does with a server out of rotation whose probe passed. */
    interface HealthyServerAction {
        void onHealthy(ServerAddress server) throws InterruptedException;
    }

    private final ServerPool pool;
    private final ServerProtocol protocol;
    private final HttpExchanges http;
    private final Duration interval;
    private final Duration timeout;
    private final HealthyServerAction onHealthy;
    private final Thread thread;
    private volatile boolean closed;

    HealthChecker(
            ServerPool pool,
            ServerProtocol protocol,
            HttpExchanges http,
            Duration interval,
            Duration timeout,
            HealthyServerAction onHealthy) {
        this.pool = pool;
        this.protocol = protocol;
        this.http = http;
        this.interval = interval;
        this.timeout = timeout;
        this.onHealthy = onHealthy;
        this.thread = Thread.ofVirtual().name("inference-health-checker").unstarted(this::loop);
    }

    void start() {
        thread.start();
    }

    /**
     * Probes {@code servers} in parallel.
     *
     * @return each server mapped to null when healthy, else why not
     */
    Map<ServerAddress, String> probe(List<ServerAddress> servers) throws InterruptedException {
        List<CompletableFuture<HttpResponse<byte[]>>> probes = new ArrayList<>(servers.size());
        for (ServerAddress s : servers) {
            probes.add(http.start(s, protocol.healthCall(), timeout));
        }
        Map<ServerAddress, String> out = new LinkedHashMap<>();
        try {
            for (int i = 0; i < servers.size(); i++) {
                String error;
                try {
                    HttpResponse<byte[]> r = HttpExchanges.await(probes.get(i), timeout);
                    error = HttpExchanges.isSuccess(r.statusCode())
                            ? null
                            : "health check: HTTP " + r.statusCode() + ": "
                                    + MalformedResponseException.excerpt(r.body());
                } catch (IOException e) {
                    error = "health check: " + HttpExchanges.describe(e, timeout);
                }
                out.put(servers.get(i), error);
            }
        } catch (InterruptedException e) {
            probes.forEach(p -> p.cancel(true));
            throw e;
        }
        return out;
    }

    private void loop() {
        while (!closed) {
            try {
                Thread.sleep(interval);
                List<ServerAddress> out = pool.outOfRotation();
                if (out.isEmpty()) {
                    continue;
                }
                for (Map.Entry<ServerAddress, String> e : probe(out).entrySet()) {
                    if (e.getValue() == null) {
                        onHealthy.onHealthy(e.getKey());
                    } else {
                        pool.eject(e.getKey(), e.getValue());
                    }
                }
            } catch (InterruptedException e) {
                if (closed) {
                    return;
                }
                log.warn("health checker interrupted while the engine is open; carrying on");
            } catch (RuntimeException e) {
                // One failed round must not end health checking: ejected servers would never return.
                log.error("health check round failed; retrying in {} ms", interval.toMillis(), e);
            }
        }
    }

    /** Stops the background thread and waits briefly for it. */
    @Override
    public void close() {
        closed = true;
        thread.interrupt();
        try {
            thread.join(Duration.ofSeconds(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
