package org.rollout.cluster;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;

/**
 * A test engine: every generation produces {@code tokens} tokens (values 'a'.., logprob −0.5) pinned
 * to the version current when it passes the gate, unless the request's prompt asks it to block
 * until interrupted. Counts generations and interruptions (the stand-in for server aborts).
 */
final class ScriptedEngine implements ControllableEngine {
    /** A prompt starting with this token blocks its generation until the thread is interrupted. */
    static final int BLOCK = 7;

    private final int tokens;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition open = lock.newCondition();
    private volatile int version;
    private boolean paused;
    final AtomicInteger generations = new AtomicInteger();
    final AtomicInteger interrupted = new AtomicInteger();
    final AtomicInteger blocked = new AtomicInteger();

    ScriptedEngine(int tokens) {
        this.tokens = tokens;
    }

    @Override
    public ModelResponse generate(ModelRequest request) throws InterruptedException {
        long start = System.nanoTime();
        int pinned;
        lock.lockInterruptibly();
        try {
            while (paused) {
                open.await();
            }
            pinned = version;
        } finally {
            lock.unlock();
        }
        generations.incrementAndGet();
        if (request.inputLength() > 0 && request.inputId(0) == BLOCK) {
            blocked.incrementAndGet();
            try {
                new CountDownLatch(1).await(); // only interruption ends it
            } catch (InterruptedException e) {
                interrupted.incrementAndGet();
                throw e;
            }
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
