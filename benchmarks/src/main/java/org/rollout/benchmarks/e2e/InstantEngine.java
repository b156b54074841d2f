package org.rollout.benchmarks.e2e;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.cluster.ControllableEngine;

/**
 * An in-process engine that answers at once: {@code min(tokens, max_new_tokens)} tokens ('a', 'b',
 * …, logprob −0.5) pinned to the current version, stop reason {@code length}. It has the gate a
 * weight update needs (generations wait while paused) and nothing else, so a benchmark built on it
 * measures the orchestration around generation, not generation. Thread-safe.
 */
public final class InstantEngine implements ControllableEngine {
    private final int tokens;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition open = lock.newCondition();
    private volatile int version;
    private volatile boolean paused;

    /** @param tokens output tokens per generation, {@code >= 1} */
    public InstantEngine(int tokens) {
        if (tokens < 1) {
            throw new IllegalArgumentException("tokens must be >= 1, got " + tokens);
        }
        this.tokens = tokens;
    }

    @Override
    public ModelResponse generate(ModelRequest request) throws InterruptedException {
        if (paused) {
            lock.lockInterruptibly();
            try {
                while (paused) {
                    open.await();
                }
            } finally {
                lock.unlock();
            }
        }
        int pinned = version;
        int n = Math.min(tokens, request.gconfig().maxNewTokens());
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = 'a' + i % 26;
        }
        float[] logprobs = new float[n];
        Arrays.fill(logprobs, -0.5f);
        int[] versions = new int[n];
        Arrays.fill(versions, pinned);
        return ModelResponse.of(request.inputIds(), out, logprobs, versions, StopReason.LENGTH, Duration.ZERO);
    }

    @Override
    public int version() {
        return version;
    }

    @Override
    public void pause() {
        lock.lock();
        try {
            paused = true;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void resume() {
        lock.lock();
        try {
            paused = false;
            open.signalAll();
        } finally {
            lock.unlock();
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
