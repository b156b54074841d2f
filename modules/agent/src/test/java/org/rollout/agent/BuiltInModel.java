package org.rollout.agent;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.modelserver.LatencyModel;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLmWeights;

/** The built-in model server on 127.0.0.1 and a real {@link RemoteInferenceEngine} over it. */
public final class BuiltInModel implements AutoCloseable {
    public final ModelServer server;
    public final RemoteInferenceEngine engine;

    private BuiltInModel(ModelServer server) {
        this.server = server;
        InferenceConfig config = InferenceConfig.builder()
                .serverAddresses(List.of(new ServerAddress("127.0.0.1", server.port())))
                .requestTimeout(Duration.ofSeconds(60))
                .setupTimeout(Duration.ofSeconds(30))
                .healthCheckInterval(Duration.ofMillis(100))
                .controlTimeout(Duration.ofSeconds(20))
                .build();
        this.engine = new RemoteInferenceEngine(config);
    }

    /** The seeded built-in model (seed 0), no latency. */
    public static BuiltInModel seeded() throws IOException, InterruptedException {
        return start(ModelServerConfig.defaults());
    }

    public static BuiltInModel start(ModelServerConfig config) throws IOException, InterruptedException {
        BuiltInModel m = new BuiltInModel(ModelServer.start(config));
        m.engine.initialize();
        return m;
    }

    /** Weights under which greedy decoding repeats {@code token} whatever the context. */
    public static TinyLmWeights repeating(int token, int version) {
        int v = TinyLmWeights.VOCAB_SIZE;
        float[] bias = new float[v];
        bias[token] = 30f;
        return TinyLmWeights.of(version, TinyLmWeights.DEFAULT_DECAY, bias, new float[v * v], new float[v * v]);
    }

    /** A server that decodes one token per {@code perToken}, so a generation stays in flight. */
    public static ModelServerConfig slow(TinyLmWeights weights, Duration perToken) {
        return ModelServerConfig.defaults()
                .withWeights(weights)
                .withLatency(new LatencyModel(Duration.ZERO, perToken, Duration.ZERO));
    }

    /** Waits until {@code condition} holds, or fails naming {@code what}. */
    public static void await(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout + " waiting for " + what);
            }
            LockSupport.parkNanos(2_000_000);
        }
    }

    @Override
    public void close() {
        engine.close();
        server.close();
    }
}
