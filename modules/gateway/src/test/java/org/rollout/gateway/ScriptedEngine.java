package org.rollout.gateway;

import java.time.Duration;
import java.util.Arrays;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.cluster.ControllableEngine;

/**
 * A test engine (a trimmed copy of the cluster tests' one): every generation produces {@code
 * tokens} tokens ('a'.., logprob −0.5) pinned to the version current when it passes the gate.
 */
final class ScriptedEngine implements ControllableEngine {
    private final int tokens;
    private final Object gate = new Object();
    private volatile int version;
    private boolean paused;

    ScriptedEngine(int tokens) {
        this.tokens = tokens;
    }

    @Override
    public ModelResponse generate(ModelRequest request) throws InterruptedException {
        long start = System.nanoTime();
        int pinned;
        synchronized (gate) {
            while (paused) {
                gate.wait();
            }
            pinned = version;
        }
        int n = Math.min(tokens, request.gconfig().maxNewTokens());
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = 'a' + i % 26;
        }
        float[] lp = new float[n];
        Arrays.fill(lp, -0.5f);
        int[] versions = new int[n];
        Arrays.fill(versions, pinned);
        return ModelResponse.of(
                request.inputIds(), out, lp, versions, StopReason.LENGTH, Duration.ofNanos(System.nanoTime() - start));
    }

    @Override
    public int version() {
        return version;
    }

    @Override
    public void pause() {
        synchronized (gate) {
            paused = true;
        }
    }

    @Override
    public void resume() {
        synchronized (gate) {
            paused = false;
            gate.notifyAll();
        }
    }

    @Override
    public void setVersion(int v) {
        if (v < version) {
            throw new IllegalArgumentException("version " + v + " is below the current " + version);
        }
        version = v;
    }
}
