package org.rollout.inference;

import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The client-side pause of semantics §6.9: while closed, no segment is sent. It is closed while the user has
 * paused the engine ({@link #pause()}) or while any weight update holds it ({@link #hold()}); the
 * two are independent, so a weight update's release never reopens a gate the user paused.
 *
 * <p>Waiting is on a condition (no polling, unlike AReaL's 0.5 s sleep loop) and interruptible.
 * Thread-safe.
 */
final class PauseGate {
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition opened = lock.newCondition();
    private boolean paused;
    private int holds;
    private int waiting;
    private boolean closed;

    /**
     * Waits until the gate is open; returns at once when it is.
     *
     * @throws IllegalStateException when the gate is closed for good ({@link #close()})
     */
    void awaitOpen() throws InterruptedException {
        lock.lockInterruptibly();
        try {
            if (paused || holds > 0) {
                waiting++;
                try {
                    while ((paused || holds > 0) && !closed) {
                        opened.await();
                    }
                } finally {
                    waiting--;
                }
            }
            if (closed) {
                throw new IllegalStateException("the engine is closed");
            }
        } finally {
            lock.unlock();
        }
    }

    /** Fails every waiting and future {@link #awaitOpen()}. */
    void close() {
        lock.lock();
        try {
            closed = true;
            opened.signalAll();
        } finally {
            lock.unlock();
        }
    }

    void pause() {
        lock.lock();
        try {
            paused = true;
        } finally {
            lock.unlock();
        }
    }

    void resume() {
        lock.lock();
        try {
            paused = false;
            if (holds == 0) {
                opened.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    void hold() {
        lock.lock();
        try {
            holds++;
        } finally {
            lock.unlock();
        }
    }

    void release() {
        lock.lock();
        try {
            if (holds == 0) {
                throw new IllegalStateException("pause gate released more often than held");
            }
            holds--;
            if (holds == 0 && !paused) {
                opened.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    boolean isClosed() {
        lock.lock();
        try {
            return paused || holds > 0;
        } finally {
            lock.unlock();
        }
    }

    int waiting() {
        lock.lock();
        try {
            return waiting;
        } finally {
            lock.unlock();
        }
    }
}
