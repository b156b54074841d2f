package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.rollout.core.FailureBreaker;

class FailureWatchTest {

    @Test
    void theMessageNamesTheReasonAnExampleAndTheKeyToChange() {
        String m = FailureWatch.describe(
                new FailureBreaker.Trip(200, 200, "failed", 200, 1.0),
                "task 17 attempt 0: task 17 slot 2 threw PythonRewardException: reward function failed:"
                        + " ZeroDivisionError: division by zero\nTraceback …");
        assertThat(m)
                .startsWith("the run cannot make progress: 200 of the last 200 groups failed (failed: 200)")
                .contains("example: task 17 attempt 0: task 17 slot 2 threw PythonRewardException")
                .contains("ZeroDivisionError: division by zero …")
                .doesNotContain("Traceback")
                .contains("to change: the reward function (rollout.workflow_kwargs.reward_fn)")
                .contains("rollout.failure_breaker.window = 200");
    }

    @Test
    void eachReasonPointsAtItsOwnSetting() {
        assertThat(FailureWatch.keyFor("failed", "task 3 slot 0 threw IllegalArgumentException: no prompt"))
                .contains("rollout.workflow");
        assertThat(FailureWatch.keyFor("contract", null)).contains("rollout.workflow");
        assertThat(FailureWatch.keyFor("accept_error", null)).contains("rollout.accept");
        assertThat(FailureWatch.keyFor("timeout", null)).contains("rollout.episode_timeout");
    }
}
