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
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;
import org.rollout.inference.ControlCall;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.inference.ServerProtocol;
import org.rollout.inference.WeightUpdateReport;
import org.rollout.inference.WeightUpdater;
import org.rollout.modelserver.LatencyModel;
import org.rollout.modelserver.TinyLmWeights;

/**
 * End to end 4: the weight-update control plane across many servers.
 *
 * <pre>
 *   --servers idle built-in model servers (no latency model, nothing generating)
 *   --updates times: WeightUpdater.update(all servers, weight file, v)
 *       SGLang: update_weights_from_disk (abort_all_requests) → continue, each server's chain in parallel
 *       (no separate pause: the load aborts and holds requests itself; see WeightUpdater)
 *   baseline: one fan-out of GET /health to every server on the same HttpClient
 * </pre>
 *
 * <p>To show where the time goes, every round also fans out each phase alone ({@code pause_phase}:
 * AReaL's two pause calls, which the update no longer sends to SGLang servers, kept for comparison;
 * {@code load_phase}: the load; {@code continue_phase}) the same way and times
 * one in-process read of the weight file, interleaved with the updates so all see the same load.
 *
 * <p>The weight file is the built-in model's ({@value #WEIGHT_FILE_KB} KB, read and checked by every
 * server on each update): the nearest thing to "no real load time" a real load can be. Reported:
 * p50/p99/max of one whole update (HdrHistogram), the health fan-out's p50, and their ratio (how many
 * one-call fan-outs an update costs; it makes two calls per server). Target: p99 ≤ 50 ms.
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
        return "latency of a weight update ([pause →] load → continue) across many idle model servers (WeightUpdater.update)";
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
        Histogram pausePhase = new Histogram(3_600_000_000_000L, 3);
        Histogram loadPhase = new Histogram(3_600_000_000_000L, 3);
        Histogram continuePhase = new Histogram(3_600_000_000_000L, 3);
        Histogram read = new Histogram(3_600_000_000_000L, 3);
        int failed = 0;
        try (SimulatedFleet fleet = SimulatedFleet.start(n, LatencyModel.NONE, null, 1)) {
            List<ServerAddress> servers = fleet.addresses();
            InferenceConfig config =
                    InferenceConfig.builder().serverAddresses(servers).build();
            HttpClient client = RemoteInferenceEngine.newHttpClient(config);
            try {
                WeightUpdater updater = new WeightUpdater(config, client);
                ServerProtocol protocol = ServerProtocol.of(config.backend());
                log.printf("weights: %d + %d rounds across %d servers%n", warmup, updates, n);
                // Each round: a health fan-out, one whole update, then (to show where the time goes)
                // each phase of an update alone, fanned out the same way (every server in parallel, a
                // server's calls in order), and one in-process read of the weight file. Interleaved,
                // so that all of them see the same machine load.
                for (int round = 1; round <= warmup + updates; round++) {
                    boolean measured = round > warmup;
                    int v = 2 * round - 1;
                    healthFanOut(client, servers, measured ? fanOut : null);
                    WeightUpdateReport report = updater.update(servers, fleet.weights(), v);
                    if (!report.allSucceeded()) {
                        failed++;
                        log.println("weights: update " + v + " failed on some servers: " + report.summary());
                    }
                    fanOut(client, servers, protocol.pauseCalls(), measured ? pausePhase : null);
                    fanOut(
                            client,
                            servers,
                            List.of(protocol.updateWeightsCall(fleet.weights(), v + 1)),
                            measured ? loadPhase : null);
                    fanOut(client, servers, List.of(protocol.continueCall()), measured ? continuePhase : null);
                    long t0 = System.nanoTime();
                    TinyLmWeights.read(fleet.weights());
                    if (measured) {
                        update.recordValue(report.elapsed().toNanos());
                        read.recordValue(System.nanoTime() - t0);
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
                .put("pause_phase_p50_ms", pausePhase.getValueAtPercentile(50) / 1e6)
                .put("load_phase_p50_ms", loadPhase.getValueAtPercentile(50) / 1e6)
                .put("continue_phase_p50_ms", continuePhase.getValueAtPercentile(50) / 1e6)
                .put("one_file_read_p50_ms", read.getValueAtPercentile(50) / 1e6)
                .put("ratio_update_to_fanout", p50 / fanOutP50)
                .put("weight_file_kb", WEIGHT_FILE_KB)
                .put("failed_updates", failed);
        f.appendTo(line);
        return line.put("target_p99_ms", TARGET_P99_MS).put("met", p99 <= TARGET_P99_MS && failed == 0 ? "yes" : "no");
    }

    /** One GET /health to every server at once; records the time until all answered. */
    private static void healthFanOut(HttpClient client, List<ServerAddress> servers, Histogram into) {
        fanOut(client, servers, List.of(ControlCall.get("/health")), into);
    }

    /**
     * Sends {@code calls} to every server at once (each server's calls in order) and records the
     * time until every server answered the last one, when {@code into} is not null.
     *
     * @throws IllegalStateException naming the call and server when one does not answer 2xx
     */
    private static void fanOut(
            HttpClient client, List<ServerAddress> servers, List<ControlCall> calls, Histogram into) {
        long start = System.nanoTime();
        List<CompletableFuture<Void>> chains = new ArrayList<>(servers.size());
        for (ServerAddress s : servers) {
            CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
            for (ControlCall call : calls) {
                chain = chain.thenCompose(ignored -> client.sendAsync(
                                request(s, call), HttpResponse.BodyHandlers.discarding())
                        .thenAccept(r -> {
                            if (r.statusCode() / 100 != 2) {
                                throw new IllegalStateException(call + " on " + s + " answered HTTP " + r.statusCode());
                            }
                        }));
            }
            chains.add(chain);
        }
        chains.forEach(CompletableFuture::join);
        if (into != null) {
            into.recordValue(System.nanoTime() - start);
        }
    }

    private static HttpRequest request(ServerAddress s, ControlCall call) {
        HttpRequest.Builder b =
                HttpRequest.newBuilder(URI.create("http://" + s + call.path())).timeout(Duration.ofSeconds(60));
        return call.method().equals("GET")
                ? b.GET().build()
                : b.header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(call.body()))
                        .build();
    }
}
