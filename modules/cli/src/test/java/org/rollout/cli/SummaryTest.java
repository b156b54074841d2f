package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.cluster.StatsBook;

class SummaryTest {
    @Test
    void oneStepShowsItsMeanRewardAlone() {
        assertThat(Summary.rewardTrend(new double[] {0.25})).isEqualTo("  mean reward: 0.250 (1 step)");
    }

    @Test
    void fewerThanTenStepsShowTheFirstAndLastHalfWithoutARatio() {
        String line = Summary.rewardTrend(new double[] {0.1, 0.1, 0.2, 0.3, 0.4});
        assertThat(line).isEqualTo("  mean reward: first 2 steps 0.100, last 3 steps 0.300");
        assertThat(Summary.rewardTrend(new double[] {0.1, 0.3}))
                .isEqualTo("  mean reward: first step 0.100, last step 0.300");
    }

    @Test
    void tenStepsOrMoreShowTheFirstAndLastFiveAndTheirRatio() {
        double[] rewards = {0.1, 0.1, 0.1, 0.1, 0.1, 0.2, 0.2, 0.2, 0.2, 0.2};
        assertThat(Summary.rewardTrend(rewards))
                .isEqualTo("  mean reward: first 5 steps 0.100, last 5 steps 0.200 (2.0×)");
    }

    @Test
    void theGroupCountsAreTheSumsOfTheStatsLinesOfTheirScope() {
        List<StatsBook.Line> history = List.of(
                new StatsBook.Line(0, "eval-rollout", Map.of("groups", 26, "accepted", 26, "rejected", 0)),
                new StatsBook.Line(
                        0,
                        "rollout",
                        Map.of("groups", 10, "accepted", 8, "rejected", 2, "rejected_reasons", Map.of("rejected", 2))),
                new StatsBook.Line(
                        1,
                        "rollout",
                        Map.of("groups", 5, "accepted", 4, "rejected", 1, "rejected_reasons", Map.of("rejected", 1L))));
        Summary.Counts training = Summary.Counts.of(history, "rollout");
        assertThat(training).isEqualTo(new Summary.Counts(2, 15, 12, 3, Map.of("rejected", 3L)));
        assertThat(Summary.Counts.of(history, "eval-rollout").groups()).isEqualTo(26);
    }
}
