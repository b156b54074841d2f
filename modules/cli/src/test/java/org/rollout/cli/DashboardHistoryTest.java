package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.rollout.cli.DashboardHistory.Sample;

class DashboardHistoryTest {
    private static Sample at(int second) {
        return new Sample(1_000 + second, second / 10, 8L * second, second, 100L * second);
    }

    @Test
    void keepsEverySampleOldestFirstWhileBelowItsBound() {
        DashboardHistory history = new DashboardHistory(5);
        history.add(at(0));
        history.add(at(1));
        history.add(at(2));

        assertThat(history.samples()).containsExactly(at(0), at(1), at(2));
    }

    @Test
    void keepsOnlyTheNewestSamplesOnceFull() {
        DashboardHistory history = new DashboardHistory(DashboardHistory.CAPACITY);
        int added = DashboardHistory.CAPACITY + 35;
        IntStream.range(0, added).forEach(s -> history.add(at(s)));

        List<Sample> samples = history.samples();
        assertThat(samples).hasSize(DashboardHistory.CAPACITY);
        assertThat(samples.getFirst()).isEqualTo(at(35));
        assertThat(samples.getLast()).isEqualTo(at(added - 1));
        assertThat(samples).isSortedAccordingTo((a, b) -> Double.compare(a.time(), b.time()));
    }

    @Test
    void holdsTheCountersItWasGiven() {
        DashboardHistory history = new DashboardHistory(2);
        history.add(new Sample(1_700_000_000.25, 7, 56, 3, 9_000));

        assertThat(history.samples()).singleElement().satisfies(s -> {
            assertThat(s.time()).isEqualTo(1_700_000_000.25);
            assertThat(s.version()).isEqualTo(7);
            assertThat(s.accepted()).isEqualTo(56);
            assertThat(s.rejected()).isEqualTo(3);
            assertThat(s.tokensGenerated()).isEqualTo(9_000);
        });
    }

    @Test
    void aSnapshotDoesNotChangeWhenSamplesArriveLater() {
        DashboardHistory history = new DashboardHistory(2);
        history.add(at(0));
        List<Sample> before = history.samples();
        history.add(at(1));
        history.add(at(2));

        assertThat(before).containsExactly(at(0));
    }

    @Test
    void refusesABoundBelowOneSample() {
        assertThatThrownBy(() -> new DashboardHistory(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least one sample");
    }
}
