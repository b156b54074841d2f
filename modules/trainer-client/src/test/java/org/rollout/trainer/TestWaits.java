package org.rollout.trainer;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Waiting on a condition with a deadline, never a bare sleep. */
final class TestWaits {
    private TestWaits() {}

    static void await(String what, Duration deadline, BooleanSupplier condition) {
        long end = System.nanoTime() + deadline.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                throw new AssertionError("timed out after " + deadline + " waiting for " + what);
            }
            LockSupport.parkNanos(5_000_000);
        }
    }
}
