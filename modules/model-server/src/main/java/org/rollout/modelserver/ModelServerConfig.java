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
 * @param outputLengths simulated output lengths, or null (the default): the model's own EOS and the
 *     request's stop rules end generations
 * @param prefixCacheTokens the most tokens the prefix cache ({@link RadixCache}) holds; {@link
 *     #DEFAULT_PREFIX_CACHE_TOKENS} by default, 0 turns it off
 */
public record ModelServerConfig(
        String host,
        int port,
        long seed,
        Path weightsPath,
        TinyLmWeights weights,
        int maxRunningRequests,
        LatencyModel latency,
        FaultPlan faults,
        OutputLengths outputLengths,
        int prefixCacheTokens) {

    /**
     * 256 Ki tokens: the order of the KV pool of one GPU serving a small model (SGLang sizes its
     * pool from the memory left after the weights), so that a benchmark's working set of shared
     * prompts fits, as it would there, while an unbounded stream of distinct prompts is evicted.
     */
    public static final int DEFAULT_PREFIX_CACHE_TOKENS = 262_144;

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
        if (prefixCacheTokens < 0) {
            throw new IllegalArgumentException(
                    "prefix_cache_tokens must be >= 0 (0 turns the prefix cache off), got " + prefixCacheTokens);
        }
    }

    /**
     * 127.0.0.1, a free port, seed 0, seeded weights, 256 running requests, no latency, no faults,
     * no simulated output lengths, a prefix cache of {@link #DEFAULT_PREFIX_CACHE_TOKENS} tokens.
     */
    public static ModelServerConfig defaults() {
        return new ModelServerConfig(
                "127.0.0.1",
                0,
                0,
                null,
                null,
                256,
                LatencyModel.NONE,
                FaultPlan.NONE,
                null,
                DEFAULT_PREFIX_CACHE_TOKENS);
    }

    /** This config binding {@code h}. */
    public ModelServerConfig withHost(String h) {
        return new ModelServerConfig(
                h,
                port,
                seed,
                weightsPath,
                weights,
                maxRunningRequests,
                latency,
                faults,
                outputLengths,
                prefixCacheTokens);
    }

    /** This config listening on port {@code p} (0: a free one). */
    public ModelServerConfig withPort(int p) {
        return new ModelServerConfig(
                host,
                p,
                seed,
                weightsPath,
                weights,
                maxRunningRequests,
                latency,
                faults,
                outputLengths,
                prefixCacheTokens);
    }

    /** This config seeding the weights with {@code s} (used without weights or a weights path). */
    public ModelServerConfig withSeed(long s) {
        return new ModelServerConfig(
                host,
                port,
                s,
                weightsPath,
                weights,
                maxRunningRequests,
                latency,
                faults,
                outputLengths,
                prefixCacheTokens);
    }

    /** This config serving the weight file {@code p}. */
    public ModelServerConfig withWeightsPath(Path p) {
        return new ModelServerConfig(
                host, port, seed, p, weights, maxRunningRequests, latency, faults, outputLengths, prefixCacheTokens);
    }

    /** This config serving the in-memory weights {@code w}. */
    public ModelServerConfig withWeights(TinyLmWeights w) {
        return new ModelServerConfig(
                host,
                port,
                seed,
                weightsPath,
                w,
                maxRunningRequests,
                latency,
                faults,
                outputLengths,
                prefixCacheTokens);
    }

    /** This config decoding at most {@code n} sequences at once. */
    public ModelServerConfig withMaxRunningRequests(int n) {
        return new ModelServerConfig(
                host, port, seed, weightsPath, weights, n, latency, faults, outputLengths, prefixCacheTokens);
    }

    /** This config with the latency model {@code l}. */
    public ModelServerConfig withLatency(LatencyModel l) {
        return new ModelServerConfig(
                host,
                port,
                seed,
                weightsPath,
                weights,
                maxRunningRequests,
                l,
                faults,
                outputLengths,
                prefixCacheTokens);
    }

    /** This config injecting the faults {@code f} from the start. */
    public ModelServerConfig withFaults(FaultPlan f) {
        return new ModelServerConfig(
                host,
                port,
                seed,
                weightsPath,
                weights,
                maxRunningRequests,
                latency,
                f,
                outputLengths,
                prefixCacheTokens);
    }

    /**
     * This config ending every generation at a simulated length ({@link OutputLengths}); null turns
     * it off.
     */
    public ModelServerConfig withOutputLengths(OutputLengths o) {
        return new ModelServerConfig(
                host, port, seed, weightsPath, weights, maxRunningRequests, latency, faults, o, prefixCacheTokens);
    }

    /** This config with a prefix cache of at most {@code tokens} tokens; 0 turns it off. */
    public ModelServerConfig withPrefixCacheTokens(int tokens) {
        return new ModelServerConfig(
                host, port, seed, weightsPath, weights, maxRunningRequests, latency, faults, outputLengths, tokens);
    }
}
