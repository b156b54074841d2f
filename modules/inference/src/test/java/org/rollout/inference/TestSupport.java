package org.rollout.inference;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.random.RandomGenerator;
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;

/** Configurations and waits shared by the engine tests. */
final class TestSupport {
    /** Round-robin starts at index 0 and back-off jitter is fixed: routing is reproducible. */
    static final RandomGenerator DETERMINISTIC = () -> 0L;

    private TestSupport() {}

    /** A config for fast tests: short health interval and back-off, generous timeouts. */
    static InferenceConfig.Builder config(ServerAddress... servers) {
        return InferenceConfig.builder()
                .serverAddresses(List.of(servers))
                .requestTimeout(Duration.ofSeconds(20))
                .requestRetries(3)
                .setupTimeout(Duration.ofSeconds(20))
                .healthCheckInterval(Duration.ofMillis(50))
                .healthCheckTimeout(Duration.ofSeconds(2))
                .controlTimeout(Duration.ofSeconds(10))
                .retryBackoffInitial(Duration.ofMillis(10))
                .retryBackoffMax(Duration.ofMillis(50));
    }

    static RemoteInferenceEngine engine(InferenceConfig config) {
        return new RemoteInferenceEngine(config, DETERMINISTIC);
    }

    /**
     * Waits until {@code condition} holds, checking every millisecond.
     *
     * @throws AssertionError naming {@code what} when {@code timeout} passes first
     */
    static void await(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout + " waiting for " + what);
            }
            LockSupport.parkNanos(1_000_000);
        }
    }

    static int[] range(int first, int count) {
        int[] out = new int[count];
        for (int i = 0; i < count; i++) {
            out[i] = first + i;
        }
        return out;
    }

    static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    static int[] repeat(int value, int count) {
        int[] out = new int[count];
        Arrays.fill(out, value);
        return out;
    }

    /** The logprobs the fake serves for a segment of {@code count} tokens. */
    static float[] fakeLogprobs(int count) {
        float[] out = new float[count];
        for (int i = 0; i < count; i++) {
            out[i] = FakeInferenceServer.logprob(i);
        }
        return out;
    }

    static float[] concat(float[] a, float[] b) {
        float[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
