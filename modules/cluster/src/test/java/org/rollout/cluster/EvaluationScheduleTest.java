package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EvaluationScheduleTest {
    private static final List<Map<String, Object>> THREE =
            List.of(Map.of("q", "a"), Map.of("q", "b"), Map.of("q", "c"));

    @Test
    void shouldHandOutEveryItemOfAPassAtMostMaxConcurrentAtATime() {
        EvaluationSchedule s = new EvaluationSchedule(THREE, 2, 2);
        assertThat(s.start(0)).isEqualTo(EvaluationSchedule.Start.STARTED);
        assertThat(s.next()).hasValue(0);
        assertThat(s.next()).hasValue(1);
        assertThat(s.next()).as("at the limit").isEmpty();
        assertThat(s.finished()).isFalse();
        assertThat(s.next()).hasValue(2);
        assertThat(s.finished()).isFalse();
        assertThat(s.finished()).as("the last group ends the pass").isTrue();
        assertThat(s.running()).isFalse();
    }

    @Test
    void shouldSkipAPassDueWhileThePreviousOneStillRuns() {
        EvaluationSchedule s = new EvaluationSchedule(THREE, 2, 3);
        s.start(2);
        s.next();
        assertThat(s.start(4)).isEqualTo(EvaluationSchedule.Start.SKIPPED);
        assertThat(s.version()).isEqualTo(2);
    }

    @Test
    void aPassAskedForWhileAnotherRunsStartsWhenItEndsUnlessTheVersionMovedOn() {
        EvaluationSchedule s = new EvaluationSchedule(THREE, 10, 3);
        assertThat(s.ask(0)).as("nothing runs: start now").isTrue();
        s.start(0);
        s.next();
        assertThat(s.ask(0)).as("the pass at 0 runs already").isFalse();
        assertThat(s.askedAt(0)).as("nothing more to run at 0").isEmpty();
        assertThat(s.ask(4)).as("a pass at 0 runs: after it").isFalse();
        assertThat(s.askedAt(4)).hasValue(4);
        assertThat(s.askedAt(4)).as("taken once").isEmpty();
        assertThat(s.ask(5)).isFalse();
        assertThat(s.askedAt(6)).as("the version moved on: forgotten").isEmpty();
    }

    @Test
    void shouldBeDueAtMultiplesOfEvalEveryOnlyAndNeverWithoutItems() {
        EvaluationSchedule s = new EvaluationSchedule(THREE, 3, 1);
        assertThat(s.dueAt(3)).isTrue();
        assertThat(s.dueAt(4)).isFalse();
        assertThat(new EvaluationSchedule(THREE, 0, 1).dueAt(3))
                .as("eval_every 0: only at start")
                .isFalse();
        assertThat(new EvaluationSchedule(List.of(), 1, 1).start(1)).isEqualTo(EvaluationSchedule.Start.NO_ITEMS);
    }

    @Test
    void shouldPutBackAnItemThatCouldNotBeDispatched() {
        EvaluationSchedule s = new EvaluationSchedule(THREE, 1, 1);
        s.start(1);
        int first = s.next().getAsInt();
        s.putBack(first);
        assertThat(s.inFlight()).isZero();
        assertThat(s.next()).hasValue(first);
    }

    @Test
    void shouldGoOnWithTheOpenGroupsOfAPredecessorsPassOnly() {
        EvaluationSchedule s = new EvaluationSchedule(THREE, 1, 3);
        s.resume(5, 2);
        assertThat(s.version()).isEqualTo(5);
        assertThat(s.next())
                .as("items not dispatched before the loss are not run")
                .isEmpty();
        assertThat(s.finished()).isFalse();
        assertThat(s.finished()).isTrue();
        assertThat(s.item(2)).isEqualTo(Map.of("q", "c"));
        assertThat(s.item(3)).isNull();
    }
}
