package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class SimulatedLengthsTest {
    private static final OutputLengths LENGTHS = new OutputLengths(new LengthDistribution.LogNormal(100, 1.5), 7);

    @Test
    void aResumedSegmentWithALongerPromptKeepsTheDrawnEnd() {
        SimulatedLengths s = new SimulatedLengths(LENGTHS);
        long end = s.endOf("r", 10);
        assertThat(end).isGreaterThan(10);
        assertThat(s.endOf("r", 10 + 3)).isEqualTo(end);
        assertThat(s.endOf("r", 10 + 40)).isEqualTo(end);
    }

    @Test
    void aRestartFromThePromptDrawsAgainDeterministically() {
        SimulatedLengths a = new SimulatedLengths(LENGTHS);
        SimulatedLengths b = new SimulatedLengths(LENGTHS);
        long first = a.endOf("r", 10);
        long second = a.endOf("r", 10);
        long third = a.endOf("r", 10);
        assertThat(new long[] {first, second, third})
                .as("three attempts of one rid draw three times (with this seed, three different lengths)")
                .doesNotHaveDuplicates();
        assertThat(new long[] {b.endOf("r", 10), b.endOf("r", 10), b.endOf("r", 10)})
                .as("the same seed, rid and attempts draw the same lengths")
                .containsExactly(first, second, third);
        assertThat(new SimulatedLengths(new OutputLengths(LENGTHS.distribution(), 8)).endOf("r", 10))
                .as("another seed draws another length")
                .isNotEqualTo(first);
    }

    @Test
    void aFinishedGenerationIsForgottenSoItsRidStartsOver() {
        SimulatedLengths s = new SimulatedLengths(LENGTHS);
        long first = s.endOf("r", 10);
        s.finished("r");
        assertThat(s.remembered()).isZero();
        assertThat(s.endOf("r", 30))
                .as("attempt 0 again, now for a 30-token prompt")
                .isEqualTo(first - 10 + 30);
    }

    @Test
    void atMostRememberedRidsAreKeptAndTheOldestIsForgottenFirst() {
        SimulatedLengths s = new SimulatedLengths(new OutputLengths(new LengthDistribution.Fixed(5), 0));
        for (int i = 0; i <= OutputLengths.REMEMBERED_RIDS; i++) {
            s.endOf("r" + i, 10);
        }
        assertThat(s.remembered()).isEqualTo(OutputLengths.REMEMBERED_RIDS);
        assertThat(s.endOf("r1", 12)).as("r1 is remembered: its end stays").isEqualTo(15);
        assertThat(s.endOf("r0", 12))
                .as("r0 was forgotten: a new draw from the 12-token prompt")
                .isEqualTo(17);
    }
}
