package org.rollout.system;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Callable;

/** Polling with a deadline: every wait of the system tests says what it waited for when it expires. */
final class Waits {
    private static final long POLL_MILLIS = 100;

    private Waits() {}

    /**
     * Polls {@code probe} until it returns a value, at most {@code timeout}.
     *
     * @throws AssertionError naming {@code what}, the timeout and the last exception the probe threw
     */
    static <T> T until(String what, Duration timeout, Callable<Optional<T>> probe) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        Exception last = null;
        while (true) {
            try {
                Optional<T> value = probe.call();
                if (value.isPresent()) {
                    return value.get();
                }
            } catch (InterruptedException e) {
                throw e;
            } catch (Exception e) {
                last = e;
            }
            if (System.nanoTime() - deadline >= 0) {
                AssertionError error = new AssertionError("timed out after " + timeout + " waiting for " + what
                        + (last == null ? "" : " (last error: " + last + ")"));
                if (last != null) {
                    error.initCause(last);
                }
                throw error;
            }
            Thread.sleep(POLL_MILLIS);
        }
    }

    /** Polls {@code condition} until it is true, at most {@code timeout}. */
    static void untilTrue(String what, Duration timeout, Callable<Boolean> condition) throws InterruptedException {
        until(what, timeout, () -> condition.call() ? Optional.of(Boolean.TRUE) : Optional.empty());
    }
}
