package org.rollout.modelserver;

import java.nio.file.Path;

/**
 * How to start a {@link ModelServer}. Immutable; start from {@link #defaults()} and change fields
 * with the {@code with…} methods.
 *
 * <p>Where the served weights come from, first match wins: {@link #weights()} (an in-memory
 * snapshot), {@link #weightsPath()} (a weight file), else {@link TinyLmWeights#seeded(long)} with
 * {@link #seed()}.
 *
 * @param host the address to bind; {@code 127.0.0.1} by default
 * @param port the port; 0 picks a free one
 * @param seed the seed of the weights when neither weights nor a weights path is given
 * @param weightsPath a weight file to serve, or null
 * @param weights weights to serve, or null
 * @param maxRunningRequests how many sequences decode at once; the rest wait (SGLang's
 *     max_running_requests)
 * @param latency the simulated accelerator's step time; {@link LatencyModel#NONE} by default
 * @param faults the faults injected from the start; {@link FaultPlan#NONE} by default
 */
public record ModelServerConfig(
        String host,
        int port,
        long seed,
        Path weightsPath,
        TinyLmWeights weights,
        int maxRunningRequests,
        LatencyModel latency,
        FaultPlan faults) {

    public ModelServerConfig {
        if (host == null || host.isBlank()) {
            throw new IllegalArgumentException("host must be set");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be in [0, 65535], got " + port);
        }
        if (maxRunningRequests < 1) {
            throw new IllegalArgumentException("max_running_requests must be >= 1, got " + maxRunningRequests);
        }
        if (latency == null) {
            throw new IllegalArgumentException("latency must be set (LatencyModel.NONE for none)");
        }
        if (faults == null) {
            throw new IllegalArgumentException("faults must be set (FaultPlan.NONE for none)");
        }
    }

    /** 127.0.0.1, a free port, seed 0, seeded weights, 256 running requests, no latency, no faults. */
    public static ModelServerConfig defaults() {
        return new ModelServerConfig("127.0.0.1", 0, 0, null, null, 256, LatencyModel.NONE, FaultPlan.NONE);
    }

    public ModelServerConfig withHost(String h) {
        return new ModelServerConfig(h, port, seed, weightsPath, weights, maxRunningRequests, latency, faults);
    }

    public ModelServerConfig withPort(int p) {
        return new ModelServerConfig(host, p, seed, weightsPath, weights, maxRunningRequests, latency, faults);
    }

    public ModelServerConfig withSeed(long s) {
        return new ModelServerConfig(host, port, s, weightsPath, weights, maxRunningRequests, latency, faults);
    }

    public ModelServerConfig withWeightsPath(Path p) {
        return new ModelServerConfig(host, port, seed, p, weights, maxRunningRequests, latency, faults);
    }

    public ModelServerConfig withWeights(TinyLmWeights w) {
        return new ModelServerConfig(host, port, seed, weightsPath, w, maxRunningRequests, latency, faults);
    }

    public ModelServerConfig withMaxRunningRequests(int n) {
        return new ModelServerConfig(host, port, seed, weightsPath, weights, n, latency, faults);
    }

    public ModelServerConfig withLatency(LatencyModel l) {
        return new ModelServerConfig(host, port, seed, weightsPath, weights, maxRunningRequests, l, faults);
    }

    public ModelServerConfig withFaults(FaultPlan f) {
        return new ModelServerConfig(host, port, seed, weightsPath, weights, maxRunningRequests, latency, f);
    }
}
