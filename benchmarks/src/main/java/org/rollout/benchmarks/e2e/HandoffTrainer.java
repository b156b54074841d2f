package org.rollout.benchmarks.e2e;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import org.rollout.api.TrainingBatch;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.RolloutClient;

/**
 * The Java trainer's side of {@code bin/rollout bench handoff} when it runs in a process of its own
 * (as a trainer does): pulls batches from a trainer gateway when told to on stdin, one command a
 * line, the same protocol as {@code benchmarks/python/bench_handoff.py}.
 *
 * <pre>
 *   pull   pull one batch (HTTP, RBATCH decoded into tensors), acknowledge it, drop it, print
 *          "&lt;tensor bytes&gt; &lt;seconds for the pull&gt; &lt;peak heap used above the heap before the first pull&gt;"
 *   quit   exit
 * </pre>
 *
 * Not a test and not user-facing.
 */
public final class HandoffTrainer {
    private static final Duration PULL_TIMEOUT = Duration.ofSeconds(120);

    private HandoffTrainer() {}

    public static void main(String[] args) throws Exception {
        String url = null;
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (args[i].equals("--url")) {
                url = args[i + 1];
            }
        }
        if (url == null) {
            throw new IllegalArgumentException("HandoffTrainer: --url is required");
        }
        System.gc();
        long before = HandoffBenchmark.heapUsed();
        HandoffBenchmark.resetPeaks();
        try (RolloutClient client = RolloutClient.connect(ClientConfig.of(url)
                        .withPollWait(Duration.ofSeconds(2))
                        .withConnectTimeout(Duration.ofSeconds(5))
                        .withRequestTimeout(PULL_TIMEOUT)
                        .withRetry(Duration.ofMillis(100), Duration.ofSeconds(1), Duration.ofSeconds(60)));
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                String cmd = line.strip();
                if (cmd.equals("quit")) {
                    break;
                }
                if (!cmd.equals("pull")) {
                    throw new IllegalArgumentException("HandoffTrainer: unknown command '" + cmd + "' (pull, quit)");
                }
                long start = System.nanoTime();
                TrainingBatch batch = client.nextBatch(PULL_TIMEOUT)
                        .orElseThrow(
                                () -> new IllegalStateException("HandoffTrainer: no batch within " + PULL_TIMEOUT));
                double seconds = (System.nanoTime() - start) / 1e9;
                long bytes = tensorBytes(batch);
                client.acknowledge(batch);
                System.out.printf(Locale.ROOT, "%d %.6f %d%n", bytes, seconds, HandoffBenchmark.peakHeap() - before);
                System.out.flush();
            }
        }
    }

    private static long tensorBytes(TrainingBatch batch) {
        long n = 0;
        for (var g : batch.groups()) {
            for (var t : g.rows().asMap().values()) {
                n += (long) t.numel()
                        * switch (t.dtype()) {
                            case INT32, FLOAT32 -> 4;
                            case INT64 -> 8;
                            case BOOL -> 1;
                        };
            }
        }
        return n;
    }
}
