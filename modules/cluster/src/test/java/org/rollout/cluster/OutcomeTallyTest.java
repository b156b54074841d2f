package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.rollout.cluster.Collector.GroupFinished;
import org.slf4j.event.Level;

/** The collector's counts of the outcomes it took, and how loudly a rejection is logged. */
class OutcomeTallyTest {

    private static GroupFinished rejected(long taskId, RejectReason reason, String detail, long tokens) {
        return new GroupFinished(
                taskId,
                1,
                false,
                0,
                0,
                new Collector.Rejected(reason, detail),
                Map.of(),
                ScalarStats.Totals.EMPTY,
                tokens);
    }

    @ParameterizedTest(name = "{0}: {1}")
    @CsvSource({
        "TIMEOUT, WARN",
        "STALE, WARN",
        "CANCELLED, WARN",
        "ACCEPT_ERROR, WARN",
        "REJECTED, INFO",
        "RETURNED_NONE, INFO",
        "FAILED, DEBUG",
        "CONTRACT, DEBUG"
    })
    void aRejectionIsLoggedAsLoudlyAsItsReasonDeserves(RejectReason reason, Level level) {
        assertThat(OutcomeTally.loudness(reason)).isEqualTo(level);
    }

    @Test
    void aLongDetailIsCutSayingHowLongItWasAndNoDetailIsEmpty() {
        assertThat(OutcomeTally.shortened(null)).isEmpty();
        assertThat(OutcomeTally.shortened("x".repeat(500))).isEqualTo("x".repeat(500));
        assertThat(OutcomeTally.shortened("x".repeat(501))).isEqualTo("x".repeat(500) + "… (501 characters)");
    }

    @Test
    void tokensAndRejectionsPerReasonAreCountedAndTheLatestRejectionPerReasonIsKept() {
        OutcomeTally tally = new OutcomeTally();
        tally.taken(Payloads.oneRowAccepted(1, 0, 0));
        tally.taken(rejected(2, RejectReason.TIMEOUT, "too slow", 10));
        tally.taken(rejected(3, RejectReason.TIMEOUT, "y".repeat(600), 20));
        tally.taken(rejected(4, RejectReason.REJECTED, null, 0));
        tally.discarded(RejectReason.STALE);

        assertThat(tally.tokens()).isEqualTo(31);
        assertThat(tally.rejectedByReason()).isEqualTo(Map.of("timeout", 2L, "rejected", 1L, "stale", 1L));
        assertThat(tally.lastRejections())
                .isEqualTo(Map.of(
                        "timeout",
                        "task 3 attempt 1: " + "y".repeat(500) + "… (600 characters)",
                        "rejected",
                        "task 4 attempt 1: "));
    }
}
