package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class FailureBreakerTest {

    @Test
    void aRunWhoseEveryGroupFailsTripsOnceTheWindowIsFull() {
        FailureBreaker b = new FailureBreaker(200, 1.0);
        assertThat(b.observe(0, Map.of("failed", 199L)))
                .as("199 of a window of 200")
                .isEmpty();
        FailureBreaker.Trip trip = b.observe(0, Map.of("failed", 200L)).orElseThrow();
        assertThat(trip.describe()).isEqualTo("200 of the last 200 groups failed (failed: 200)");
        assertThat(b.observe(5, Map.of("failed", 200L))).as("a trip stays").contains(trip);
    }

    @Test
    void oneAcceptedGroupInTheWindowKeepsARunAtTheDefaultThresholdGoing() {
        FailureBreaker b = new FailureBreaker(200, 1.0);
        assertThat(b.observe(1, Map.of("failed", 199L))).isEmpty();
        assertThat(b.observe(1, Map.of("failed", 398L)))
                .as("199 failures after the accepted group")
                .isEmpty();
        assertThat(b.observe(1, Map.of("failed", 399L)))
                .as("the accepted group has left the window once 200 failures came after it")
                .isPresent();
    }

    @Test
    void rejectionsOnPurposeStaleAndCancelledGroupsAreNotFailures() {
        FailureBreaker b = new FailureBreaker(10, 1.0);
        assertThat(b.observe(0, Map.of("rejected", 50L, "returned_none", 50L, "stale", 5L, "cancelled", 5L)))
                .isEmpty();
        assertThat(b.observe(0, Map.of("rejected", 50L, "returned_none", 50L, "contract", 6L, "timeout", 4L)))
                .get()
                .satisfies(t -> {
                    assertThat(t.commonestReason()).isEqualTo("contract");
                    assertThat(t.describe()).isEqualTo("10 of the last 10 groups failed (contract: 6, and others)");
                });
    }

    @Test
    void aThresholdBelowOneTripsOnThatShareOfTheWindow() {
        FailureBreaker b = new FailureBreaker(10, 0.8);
        assertThat(b.observe(2, Map.of())).isEmpty();
        assertThat(b.observe(2, Map.of("failed", 7L)))
                .as("9 groups: the window is not full")
                .isEmpty();
        assertThat(b.observe(2, Map.of("failed", 8L)))
                .as("8 failed of the last 10")
                .isPresent();
    }

    @Test
    void aTotalThatGoesDownCountsFromZeroAgain() {
        // A collector that took over after a fail-over counts its rejections from zero.
        FailureBreaker b = new FailureBreaker(5, 1.0);
        b.observe(10, Map.of("failed", 3L));
        assertThat(b.observe(10, Map.of("failed", 1L)))
                .as("one new failure after 10 accepted")
                .isEmpty();
        assertThat(b.observe(10, Map.of("failed", 4L))).as("four after them").isEmpty();
        assertThat(b.observe(10, Map.of("failed", 5L))).as("five in a row").isPresent();
    }

    @Test
    void aWindowOrThresholdOutOfRangeIsRefusedNamingIt() {
        assertThatThrownBy(() -> new FailureBreaker(0, 1.0)).hasMessageContaining("window");
        assertThatThrownBy(() -> new FailureBreaker(10, 0)).hasMessageContaining("threshold");
        assertThatThrownBy(() -> new FailureBreaker(10, 1.5)).hasMessageContaining("threshold");
    }
}
