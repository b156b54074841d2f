package org.rollout.workflows;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.RewardFunction;
import org.rollout.api.StopReason;
import org.rollout.api.TensorDict;
import org.rollout.api.WorkflowContext;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.testengine.ScriptedEngine;

/**
 * AReaL's reward-wrapper rules: each attempt on its own thread with a timeout, {@code max_retries}
 * retries, a timeout on the last attempt gives 0, any other failure on the last attempt propagates.
 * Timeouts here are short so the tests are fast; no test depends on how long anything takes.
 */
class TimedRewardFunctionTest {
    private static final Duration SHORT = Duration.ofMillis(100);
    private static final Duration LONG = Duration.ofSeconds(30);
    private static final Map<String, Object> DATA = Map.of();

    private static double call(RewardFunction f) throws Exception {
        return f.reward("p", "c", new int[0], new int[0], DATA);
    }

    /** Blocks until interrupted, counting the interruptions it sees. */
    private static RewardFunction blocking(AtomicInteger calls, CountDownLatch interrupted) {
        return (p, c, pi, ci, d) -> {
            calls.incrementAndGet();
            try {
                new CountDownLatch(1).await();
                throw new AssertionError("unreachable");
            } catch (InterruptedException e) {
                interrupted.countDown();
                throw e;
            }
        };
    }

    @Test
    void returnsTheFunctionsValue() throws Exception {
        assertThat(call(new TimedRewardFunction((p, c, pi, ci, d) -> 0.3, LONG, 3)))
                .isEqualTo(0.3);
    }

    @Test
    void retriesAfterAFailureAndReturnsTheFirstValue() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        RewardFunction flaky = (p, c, pi, ci, d) -> {
            if (calls.incrementAndGet() < 3) {
                throw new IllegalStateException("flaky " + calls.get());
            }
            return 0.9;
        };

        assertThat(call(new TimedRewardFunction(flaky, LONG, 3))).isEqualTo(0.9);
        assertThat(calls).hasValue(3);
    }

    @Test
    void throwsTheLastAttemptsExceptionUnchangedAfterMaxRetriesPlusOneAttempts() {
        AtomicInteger calls = new AtomicInteger();
        IllegalStateException last = new IllegalStateException("still failing");
        RewardFunction failing = (p, c, pi, ci, d) -> {
            if (calls.incrementAndGet() == 4) {
                throw last;
            }
            throw new IllegalStateException("failure " + calls.get());
        };

        assertThatThrownBy(() -> call(new TimedRewardFunction(failing, LONG, 3)))
                .isSameAs(last);
        assertThat(calls).hasValue(4);
    }

    @Test
    void aCheckedExceptionPropagatesAsIs() {
        Exception checked = new java.io.IOException("grader unreachable");

        assertThatThrownBy(() -> call(new TimedRewardFunction(
                        (p, c, pi, ci, d) -> {
                            throw checked;
                        },
                        LONG,
                        0)))
                .isSameAs(checked);
    }

    @Test
    void anErrorOnTheLastAttemptPropagatesAsIs() {
        Error error = new Error("out of grader memory");

        assertThatThrownBy(() -> call(new TimedRewardFunction(
                        (p, c, pi, ci, d) -> {
                            throw error;
                        },
                        LONG,
                        1)))
                .isSameAs(error);
    }

    @Test
    void retriesAnAttemptThatTimedOutAfterInterruptingIt() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        CountDownLatch interrupted = new CountDownLatch(1);
        RewardFunction stuckOnce = (p, c, pi, ci, d) -> {
            if (calls.get() == 0) {
                return blocking(calls, interrupted).reward(p, c, pi, ci, d);
            }
            calls.incrementAndGet();
            return 0.7;
        };

        assertThat(call(new TimedRewardFunction(stuckOnce, SHORT, 3))).isEqualTo(0.7);
        assertThat(calls).hasValue(2);
        assertThat(interrupted.await(10, TimeUnit.SECONDS))
                .as("the timed-out attempt is interrupted")
                .isTrue();
    }

    @Test
    void givesZeroWhenTheLastAttemptTimesOut() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        CountDownLatch interrupted = new CountDownLatch(2);

        double reward = call(new TimedRewardFunction(blocking(calls, interrupted), SHORT, 1));

        assertThat(reward).isEqualTo(0.0);
        assertThat(calls).hasValue(2);
        assertThat(interrupted.await(10, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void interruptingTheCallerInterruptsTheAttemptAndThrowsWithoutRetrying() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        CountDownLatch interrupted = new CountDownLatch(1);
        CountDownLatch started = new CountDownLatch(1);
        RewardFunction blocking = blocking(calls, interrupted);
        TimedRewardFunction f = new TimedRewardFunction(
                (p, c, pi, ci, d) -> {
                    started.countDown();
                    return blocking.reward(p, c, pi, ci, d);
                },
                LONG,
                3);
        CompletableFuture<Throwable> thrown = new CompletableFuture<>();
        Thread caller = Thread.ofVirtual().start(() -> {
            try {
                call(f);
                thrown.complete(null);
            } catch (Throwable t) {
                thrown.complete(t);
            }
        });
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();

        caller.interrupt();

        assertThat(thrown.get(10, TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);
        assertThat(interrupted.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(calls).hasValue(1);
    }

    @Test
    void theAttemptSeesTheCallersWorkflowContext() throws Exception {
        AtomicReference<String> key = new AtomicReference<>();
        TimedRewardFunction f = TimedRewardFunction.withDefaults((p, c, pi, ci, d) -> {
            key.set(WorkflowContext.current().episodeKey());
            return 1.0;
        });

        WorkflowContext.callWith(
                WorkflowContext.builder().taskId(5).groupSize(4).sampleIdx(2).build(), () -> call(f));

        assertThat(key.get()).isEqualTo("5:2");
    }

    @Test
    void refusesANonPositiveTimeoutAndNegativeRetries() {
        RewardFunction f = (p, c, pi, ci, d) -> 1.0;
        assertThatThrownBy(() -> new TimedRewardFunction(f, Duration.ZERO, 3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("reward timeout must be positive");
        assertThatThrownBy(() -> new TimedRewardFunction(f, LONG, -1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("max_retries must be >= 0, got -1");
    }

    @Test
    void aWorkflowWhoseRewardTimesOutOnEveryAttemptRecordsRewardZero() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        TimedRewardFunction f = new TimedRewardFunction(blocking(calls, new CountDownLatch(4)), SHORT, 3);
        ScriptedEngine engine = ScriptedEngine.scripted().thenOutput(new int[] {'x'}, 0, StopReason.LENGTH);
        RLVRWorkflow workflow = new RLVRWorkflow(
                f, GenerationConfig.builder().maxNewTokens(1).build(), ByteLevelTokenizer.INSTANCE, false);

        TensorDict row = RLVRWorkflowTest.rowOf(workflow.runEpisode(engine, Map.of("prompt", "hi")));

        assertThat(row.float32("rewards").get(0)).isEqualTo(0f);
        assertThat(calls).hasValue(4);
        assertThat(workflow.rewardFunction()).isSameAs(f);
    }
}
