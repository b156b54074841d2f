package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.rollout.core.StalenessBudget;

/** How each task's outcome is counted into the staleness budget, held or not. */
class OutcomeAccountingTest {

    private final StalenessBudget budget = new StalenessBudget(10, 10, 0);
    private final OutcomeAccounting outcomes = new OutcomeAccounting(budget);

    private void running(int n) {
        for (int i = 0; i < n; i++) {
            budget.onEnqueue();
            budget.onAdmit();
        }
    }

    /** running, held, accepted, rejected. */
    private long[] counters() {
        return new long[] {budget.running(), budget.held(), budget.accepted(), budget.rejected()};
    }

    static Stream<Arguments> endings() {
        return Stream.of(
                Arguments.of("running, accepted", false, true, new long[] {0, 0, 1, 0}),
                Arguments.of("running, rejected", false, false, new long[] {0, 0, 0, 1}),
                Arguments.of("held, accepted", true, true, new long[] {0, 0, 1, 0}),
                Arguments.of("held, rejected", true, false, new long[] {0, 0, 0, 1}));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("endings")
    void aTrainingTaskEndsOnceFromWhereItIsCounted(String name, boolean held, boolean accepted, long[] expected) {
        running(1);
        if (held) {
            outcomes.held(1);
        }

        outcomes.ended(1, false, accepted);

        assertThat(counters()).containsExactly(expected);
    }

    @Test
    void aHeldOutcomeIsCountedAsHeldOnce() {
        running(2);

        assertThat(outcomes.held(1)).isTrue();
        assertThat(outcomes.held(1)).isFalse();
        assertThat(counters()).containsExactly(1, 1, 0, 0);
    }

    @Test
    void anEvaluationTaskIsNotCounted() {
        running(1);

        outcomes.ended(7, true, true);

        assertThat(counters()).containsExactly(1, 0, 0, 0);
    }

    @Test
    void aTaskConsumedWhileItRanAgainCountsOnceAsAcceptedHeldOrNot() {
        running(2);
        outcomes.held(1);

        outcomes.consumedWhileRerun(1);
        outcomes.consumedWhileRerun(2);

        assertThat(counters()).containsExactly(0, 0, 2, 0);
    }

    @Test
    void whenTheCollectorRestartsHeldOutcomesCountAsRunningAgain() {
        running(2);
        outcomes.held(1);

        outcomes.collectorRestarted();
        outcomes.ended(1, false, true);

        assertThat(counters()).containsExactly(1, 0, 1, 0);
        assertThat(outcomes.held(2)).isTrue();
    }
}
