package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.config.RolloutSettings;
import org.rollout.core.FailureBreaker;
import org.rollout.trainer.RolloutStatus;

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

    /** One trainer rank as the watch sees it: totals the test sets, and the pauses it was sent. */
    private static final class FakeRank implements FailureWatch.Rank {
        final int version;
        long accepted;
        long failed;
        String example;
        final List<String> calls = new ArrayList<>();

        FakeRank(int version) {
            this.version = version;
        }

        @Override
        public RolloutStatus status(Duration timeout) {
            return new RolloutStatus(version, 0, accepted, failed, 0, 0, 0, 0, 0, Map.of("failed", failed), Map.of());
        }

        @Override
        public Map<String, String> lastRejections() {
            return example == null ? Map.of() : Map.of("failed", example);
        }

        @Override
        public void pauseAdmission(long id) {
            calls.add("pause " + id);
        }

        @Override
        public void resumeAdmission(long id, int version) {
            calls.add("resume " + id + " at " + version);
        }
    }

    /**
     * With several trainer ranks the watch judges the run's groups, every rank's summed, and stops
     * every rank's admission: a workflow failing in one rank's share must not leave the others
     * admitting; after the node's pause every rank resumes at the run's version.
     */
    @Test
    void withSeveralRanksTheRunsGroupsAreJudgedAndEveryRankIsStoppedAndResumed() throws Exception {
        FakeRank rank0 = new FakeRank(3);
        FakeRank rank1 = new FakeRank(4);
        List<String> trips = new ArrayList<>();
        FailureWatch w = FailureWatch.unscheduled(
                List.of(rank0, rank1), new RolloutSettings.FailureBreaker(10, 1.0), Duration.ZERO, trips::add);
        rank0.failed = 6;
        rank1.failed = 3;
        w.poll();
        assertThat(trips).as("9 failed groups do not fill a window of 10").isEmpty();
        assertThat(rank0.calls).isEmpty();
        rank1.failed = 4;
        rank1.example = "task 7 attempt 0: task 7 slot 1 threw KeyError: 'answer'";
        w.poll();
        assertThat(trips).hasSize(1);
        assertThat(trips.get(0))
                .contains("10 of the last 10 groups failed")
                .contains("example: task 7 attempt 0")
                .contains("admission resumes in 0 s");
        assertThat(rank0.calls).containsExactly("pause " + FailureWatch.PAUSE_ID);
        assertThat(rank1.calls).containsExactly("pause " + FailureWatch.PAUSE_ID);
        w.poll();
        assertThat(rank0.calls).last().isEqualTo("resume " + FailureWatch.PAUSE_ID + " at 4");
        assertThat(rank1.calls).last().isEqualTo("resume " + FailureWatch.PAUSE_ID + " at 4");
        assertThat(w.message()).isNull();
    }

    /** One rank whose groups all fail while another's succeed: the run makes progress, no trip. */
    @Test
    void withSeveralRanksAcceptedGroupsInAnotherRankKeepTheRunGoing() throws Exception {
        FakeRank rank0 = new FakeRank(0);
        FakeRank rank1 = new FakeRank(0);
        List<String> trips = new ArrayList<>();
        FailureWatch w = FailureWatch.unscheduled(
                List.of(rank0, rank1), new RolloutSettings.FailureBreaker(10, 1.0), null, trips::add);
        rank0.failed = 5;
        rank1.accepted = 5;
        w.poll();
        rank0.failed = 10;
        rank1.accepted = 10;
        w.poll();
        assertThat(trips).isEmpty();
        assertThat(rank0.calls).isEmpty();
        assertThat(rank1.calls).isEmpty();
    }
}
