package org.rollout.benchmarks.e2e;

import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.HdrHistogram.Histogram;
import org.rollout.inference.InferenceConfig;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.inference.ServerAddress;
import org.rollout.inference.WeightUpdateReport;
import org.rollout.inference.WeightUpdater;
import org.rollout.modelserver.LatencyModel;
import org.rollout.modelserver.TinyLmWeights;

/**
 * Issue 7, end to end 4: the weight-update control plane across many servers.
 *
 * <pre>
 *   --servers idle built-in model servers (no latency model, nothing generating)
 *   --updates times: WeightUpdater.update(all servers, weight file, v)
 *       pause (SGLang: abort mode, then in_place) → update_weights_from_disk → continue, each phase fanned out
 *   baseline: one fan-out of GET /health to every server on the same HttpClient
 * </pre>
 *
 * <p>The weight file is the built-in model's ({@value #WEIGHT_FILE_KB} KB, read and checked by every
 * server on each update): the nearest thing to "no real load time" a real load can be. Reported:
 * p50/p99/max of one whole update (HdrHistogram), the health fan-out's p50, and their ratio (how many
 * one-call fan-outs an update costs; it makes four calls per server). Target: p99 ≤ 50 ms.
 */
public final class WeightUpdateBenchmark implements EndToEndBenchmark {
    static final double TARGET_P99_MS = 50;
    static final long WEIGHT_FILE_KB = (TinyLmWeights.fileSize() + 1023) / 1024;

    @Override
    public String name() {
        return "weights";
    }

    @Override
    public String description() {
        return "latency of pause → update → continue across many idle model servers (WeightUpdater.update)";
    }

    @Override
    public List<Flag> flags() {
        return List.of(
                new Flag("servers", "64", "idle built-in model servers"),
                new Flag("updates", "50", "updates measured"),
                new Flag("warmup-updates", "5", "updates before measuring"));
    }

    @Override
    public SummaryLine run(Flags f, PrintStream log) throws Exception {
        int n = f.integer("servers", 1);
        int updates = f.integer("updates", 1);
        int warmup = f.integer("warmup-updates", 0);
        log.printf("weights: starting %d model servers%n", n);
        Histogram update = new Histogram(3_600_000_000_000L, 3);
        Histogram fanOut = new Histogram(3_600_000_000_000L, 3);
        int failed = 0;
        try (SimulatedFleet fleet = SimulatedFleet.start(n, LatencyModel.NONE, null, 1)) {
            List<ServerAddress> servers = fleet.addresses();
            InferenceConfig config =
                    InferenceConfig.builder().serverAddresses(servers).build();
            HttpClient client = RemoteInferenceEngine.newHttpClient(config);
            try {
                WeightUpdater updater = new WeightUpdater(config, client);
                log.printf("weights: %d + %d updates across %d servers%n", warmup, updates, n);
                for (int v = 1; v <= warmup + updates; v++) {
                    healthFanOut(client, servers, v > warmup ? fanOut : null);
                    WeightUpdateReport report = updater.update(servers, fleet.weights(), v);
                    if (!report.allSucceeded()) {
                        failed++;
                        log.println("weights: update " + v + " failed on some servers: " + report.summary());
                    }
                    if (v > warmup) {
                        update.recordValue(report.elapsed().toNanos());
                    }
                }
            } finally {
                client.close();
            }
        }
        double p50 = update.getValueAtPercentile(50) / 1e6;
        double p99 = update.getValueAtPercentile(99) / 1e6;
        double fanOutP50 = fanOut.getValueAtPercentile(50) / 1e6;
        SummaryLine line = new SummaryLine(name())
                .put("p50_ms", p50)
                .put("p99_ms", p99)
                .put("max_ms", update.getMaxValue() / 1e6)
                .put("health_fanout_p50_ms", fanOutP50)
                .put("ratio_update_to_fanout", p50 / fanOutP50)
                .put("weight_file_kb", WEIGHT_FILE_KB)
                .put("failed_updates", failed);
        f.appendTo(line);
        return line.put("target_p99_ms", TARGET_P99_MS).put("met", p99 <= TARGET_P99_MS && failed == 0 ? "yes" : "no");
    }

    /** One GET /health to every server at once; records the time until all answered. */
    private static void healthFanOut(HttpClient client, List<ServerAddress> servers, Histogram into) {
        long start = System.nanoTime();
        List<CompletableFuture<HttpResponse<Void>>> calls = new ArrayList<>(servers.size());
        for (ServerAddress s : servers) {
            HttpRequest req = HttpRequest.newBuilder(URI.create("http://" + s + "/health"))
                    .timeout(Duration.ofSeconds(30))
                    .GET()
                    .build();
            calls.add(client.sendAsync(req, HttpResponse.BodyHandlers.discarding()));
        }
        for (CompletableFuture<HttpResponse<Void>> c : calls) {
            int status = c.join().statusCode();
            if (status != 200) {
                throw new IllegalStateException("GET /health answered HTTP " + status);
            }
        }
        if (into != null) {
            into.recordValue(System.nanoTime() - start);
        }
    }
}
