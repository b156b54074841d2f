package org.rollout.benchmarks.e2e;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.rollout.config.ServerAddress;
import org.rollout.modelserver.LatencyModel;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.ModelServerStats;
import org.rollout.modelserver.OutputLengths;
import org.rollout.modelserver.TinyLmWeights;

/**
 * A fleet of built-in model servers standing in for GPUs: each with the same {@link LatencyModel},
 * {@link OutputLengths} and {@code max_running_requests}, all serving one weight file (written to a
 * temporary directory) that weight updates load again under each new version. {@link #close()}
 * stops the servers and deletes the directory.
 *
 * <p>Utilisation is the servers' {@code busy_fraction} (scheduler step time over wall time, the
 * modelled step time included) taken between two {@link Snapshot}s and averaged over servers.
 */
public final class SimulatedFleet implements AutoCloseable {
    /** The flags every fleet benchmark shares, with their defaults. */
    static List<Flag> flags(int servers, String lengths, int maxNewTokens) {
        return List.of(
                new Flag("servers", Integer.toString(servers), "built-in model servers in the fleet"),
                new Flag("decode-base-us", "10000", "latency model: fixed time of one decode step, µs"),
                new Flag("decode-us-per-seq", "20", "latency model: extra decode time per running sequence, µs"),
                new Flag("prefill-us-per-token", "5", "latency model: time per prompt token admitted, µs"),
                new Flag("max-running", "256", "sequences one server decodes at once (max_running_requests)"),
                new Flag("lengths", lengths, "simulated output length distribution (lognormal, pareto or fixed)"),
                new Flag("length-seed", "1", "seed of the simulated output lengths"),
                new Flag("max-new-tokens", Integer.toString(maxNewTokens), "gconfig.max_new_tokens: caps every length"),
                new Flag("prompt-tokens", "32", "prompt tokens per generation"));
    }

    private final List<ModelServer> servers;
    private final Path directory;
    private final Path weights;

    private SimulatedFleet(List<ModelServer> servers, Path directory, Path weights) {
        this.servers = servers;
        this.directory = directory;
        this.weights = weights;
    }

    /** Starts the fleet described by {@link #flags}' values. */
    static SimulatedFleet start(Flags f) throws IOException {
        return start(f.integer("servers", 1), latency(f), lengths(f), f.integer("max-running", 1));
    }

    /** The latency model of the {@code decode-base-us}, {@code decode-us-per-seq} and {@code prefill-us-per-token} flags. */
    static LatencyModel latency(Flags f) {
        return new LatencyModel(
                Duration.ofNanos(Math.round(f.decimal("prefill-us-per-token", 0) * 1000)),
                Duration.ofNanos(Math.round(f.decimal("decode-base-us", 0) * 1000)),
                Duration.ofNanos(Math.round(f.decimal("decode-us-per-seq", 0) * 1000)));
    }

    /** The simulated output lengths of the {@code lengths} and {@code length-seed} flags. */
    static OutputLengths lengths(Flags f) {
        return new OutputLengths(f.lengths("lengths"), f.longValue("length-seed", Long.MIN_VALUE));
    }

    /** Starts {@code n} servers on free loopback ports. */
    public static SimulatedFleet start(int n, LatencyModel latency, OutputLengths lengths, int maxRunning)
            throws IOException {
        Path dir = Files.createTempDirectory("rollout-bench-");
        Path weights = dir.resolve("weights.rlm");
        TinyLmWeights.seeded(1).write(weights);
        List<ModelServer> started = new ArrayList<>(n);
        try {
            for (int i = 0; i < n; i++) {
                started.add(ModelServer.start(ModelServerConfig.defaults()
                        .withWeightsPath(weights)
                        .withLatency(latency)
                        .withOutputLengths(lengths)
                        .withMaxRunningRequests(maxRunning)));
            }
        } catch (IOException | RuntimeException e) {
            started.forEach(ModelServer::close);
            deleteTree(dir);
            throw e;
        }
        return new SimulatedFleet(List.copyOf(started), dir, weights);
    }

    public List<ServerAddress> addresses() {
        return servers.stream()
                .map(s -> new ServerAddress("127.0.0.1", s.port()))
                .toList();
    }

    /** The weight file every server serves; publish it again under a new version to update. */
    public Path weights() {
        return weights;
    }

    public List<ModelServer> servers() {
        return servers;
    }

    /** The servers' counters now. */
    public Snapshot snapshot() {
        double[] busy = new double[servers.size()];
        double[] up = new double[servers.size()];
        long tokens = 0;
        for (int i = 0; i < servers.size(); i++) {
            ModelServerStats s = servers.get(i).stats();
            busy[i] = s.busyFraction() * s.uptimeSeconds();
            up[i] = s.uptimeSeconds();
            tokens += s.tokensGenerated();
        }
        return new Snapshot(busy, up, tokens);
    }

    /**
     * Counters of every server at one moment.
     *
     * @param busySeconds per server: scheduler busy time since start
     * @param uptimeSeconds per server: wall time since start
     * @param tokensGenerated summed over servers: output tokens sampled since start
     */
    public record Snapshot(double[] busySeconds, double[] uptimeSeconds, long tokensGenerated) {
        /** The mean over servers of busy time / wall time between {@code earlier} and this. */
        public double utilisationSince(Snapshot earlier) {
            double sum = 0;
            for (int i = 0; i < busySeconds.length; i++) {
                double wall = uptimeSeconds[i] - earlier.uptimeSeconds[i];
                sum += wall <= 0 ? 0 : Math.min(1, (busySeconds[i] - earlier.busySeconds[i]) / wall);
            }
            return sum / busySeconds.length;
        }
    }

    @Override
    public void close() {
        servers.forEach(ModelServer::close);
        deleteTree(directory);
    }

    static void deleteTree(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            System.err.println("could not delete " + dir + ": " + e);
        }
    }
}
