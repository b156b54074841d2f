package org.rollout.workflows;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.rollout.api.RewardFunction;
import org.rollout.api.WorkflowContext;
import org.rollout.core.RepeatedWarnings;
import org.rollout.workflows.python.PythonRewardFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link RewardFunction} run the way AReaL's {@code AsyncRewardWrapper} runs one: each attempt on
 * its own virtual thread with a timeout, {@code max_retries} retries after a failed attempt.
 *
 * <pre>
 *   attempt 1 .. max_retries + 1 (default 4), each at most {@code timeout} (default 15 s):
 *     returns r            → r
 *     times out           → interrupt it; retry, or 0.0 (logged) after the last attempt
 *     throws e            → log; retry, or throw e (unchanged) after the last attempt
 * </pre>
 *
 * <p>Why a separate thread: a slow or stuck grader must not hold the episode past its timeout. The
 * attempt thread inherits the caller's {@link WorkflowContext}, so the function can use the
 * context's HTTP client and statistics. A function that ignores interruption keeps running after
 * its timeout until it returns on its own (AReaL's process pool behaves the same); its late result
 * is discarded.
 *
 * <p>Differences from AReaL: a thread, not a process pool (Java has no GIL to escape), so there is
 * no pool to size or to recreate when broken. (A reward written in Python, {@link
 * PythonRewardFunction}, does run in a process pool; interrupting its attempt kills its worker.) Interrupting the caller (the episode is cancelled)
 * interrupts the attempt and throws {@link InterruptedException} at once, without retrying.
 *
 * <p>Immutable and thread-safe.
 */
public final class TimedRewardFunction implements RewardFunction {
    /** AReaL's default per-attempt timeout. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(15);
    /** AReaL's default number of retries: four attempts in all. */
    public static final int DEFAULT_MAX_RETRIES = 3;

    private static final Logger log = LoggerFactory.getLogger(TimedRewardFunction.class);
    /** A reward that fails every call would log every attempt of every sample: a few per minute per kind. */
    private static final RepeatedWarnings WARNINGS = new RepeatedWarnings(5, Duration.ofSeconds(60));

    private final RewardFunction function;
    private final Duration timeout;
    private final int maxRetries;

    /**
     * @param function the reward function to run
     * @param timeout the limit of one attempt, positive
     * @param maxRetries retries after the first attempt, ≥ 0
     */
    public TimedRewardFunction(RewardFunction function, Duration timeout, int maxRetries) {
        this.function = Objects.requireNonNull(function, "reward_fn");
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("reward timeout must be positive, got " + timeout);
        }
        if (maxRetries < 0) {
            throw new IllegalArgumentException("reward max_retries must be >= 0, got " + maxRetries);
        }
        this.maxRetries = maxRetries;
    }

    /** {@code function} with AReaL's defaults: 15 s per attempt, 3 retries. */
    public static TimedRewardFunction withDefaults(RewardFunction function) {
        return new TimedRewardFunction(function, DEFAULT_TIMEOUT, DEFAULT_MAX_RETRIES);
    }

    /** The wrapped function. */
    public RewardFunction function() {
        return function;
    }

    public Duration timeout() {
        return timeout;
    }

    public int maxRetries() {
        return maxRetries;
    }

    /**
     * Runs the function with the timeout and retries above.
     *
     * @return the function's value, or 0.0 when the last attempt timed out
     * @throws InterruptedException when the calling thread is interrupted (the attempt is too)
     * @throws Exception the last attempt's exception, unchanged
     */
    @Override
    public double reward(
            String prompt, String completion, int[] promptIds, int[] completionIds, Map<String, Object> data)
            throws Exception {
        int attempts = maxRetries + 1;
        for (int attempt = 1; ; attempt++) {
            boolean last = attempt == attempts;
            FutureTask<Double> task =
                    new FutureTask<>(() -> function.reward(prompt, completion, promptIds, completionIds, data));
            Thread.ofVirtual().name("reward-attempt-" + attempt).start(task);
            try {
                return task.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                task.cancel(true);
                throw e;
            } catch (TimeoutException e) {
                task.cancel(true);
                WARNINGS.warn(
                        log,
                        "reward function timed out",
                        () -> "reward function timed out after {} ms (attempt {}/{}, episode {}); {}",
                        timeout.toMillis(),
                        attempt,
                        attempts,
                        episode(),
                        last ? "the reward is 0.0" : "retrying");
                if (last) {
                    return 0.0;
                }
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                WARNINGS.warn(
                        log,
                        "reward function failed: " + RepeatedWarnings.kindOf(cause),
                        () -> "reward function failed (attempt {}/{}, episode {}); {}: {}",
                        attempt,
                        attempts,
                        episode(),
                        last ? "giving up" : "retrying",
                        cause.toString());
                if (last) {
                    if (cause instanceof Exception ex) {
                        throw ex;
                    }
                    throw (Error) cause;
                }
            }
        }
    }

    private static String episode() {
        String key = WorkflowContext.current().episodeKey();
        return key.isEmpty() ? "none" : key;
    }

    @Override
    public String toString() {
        return "TimedRewardFunction{" + function + ", timeout=" + timeout + ", max_retries=" + maxRetries + "}";
    }
}
