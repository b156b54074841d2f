package org.rollout.inference;

import java.time.Duration;
import java.util.random.RandomGenerator;

/**
 * Exponential back-off with jitter between attempts on the same server: the k-th consecutive
 * failure waits {@code min(retry_backoff_max, retry_backoff_initial · 2^(k−1))}, scaled by a
 * random factor in [0.5, 1) so that many clients failing together do not retry in lockstep.
 * Thread-safe (the random generator is used under a lock).
 */
final class Backoff {
    private final long initialNanos;
    private final long maxNanos;
    private final RandomGenerator random;

    Backoff(Duration initial, Duration max, RandomGenerator random) {
        this.initialNanos = initial.toNanos();
        this.maxNanos = max.toNanos();
        this.random = random;
    }

    /** The wait after {@code failures} (≥ 1) consecutive failures on one server. */
    Duration delay(int failures) {
        if (failures < 1 || initialNanos == 0) {
            return Duration.ZERO;
        }
        int doublings = Math.min(failures - 1, 62);
        long base = initialNanos;
        for (int i = 0; i < doublings && base < maxNanos; i++) {
            base = base > Long.MAX_VALUE / 2 ? Long.MAX_VALUE : base * 2;
        }
        base = Math.min(base, maxNanos);
        double factor;
        synchronized (random) {
            factor = 0.5 + 0.5 * random.nextDouble();
        }
        return Duration.ofNanos((long) (base * factor));
    }

    /** Sleeps {@link #delay(int)}; interruptible. */
    void sleep(int failures) throws InterruptedException {
        Duration d = delay(failures);
        if (!d.isZero()) {
            Thread.sleep(d);
        }
    }
}
