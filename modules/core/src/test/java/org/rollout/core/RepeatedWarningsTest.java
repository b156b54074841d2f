package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class RepeatedWarningsTest {
    private final AtomicLong now = new AtomicLong();
    private final RepeatedWarnings warnings = new RepeatedWarnings(3, Duration.ofSeconds(60), now::get);

    @Test
    void theFirstOfAKindInAPeriodAreLoggedAndTheRestSummarisedWhenTheNextPeriodBegins() {
        for (int i = 0; i < 3; i++) {
            assertThat(warnings.offer("failed").log()).isTrue();
        }
        for (int i = 0; i < 8_400; i++) {
            assertThat(warnings.offer("failed").log()).isFalse();
        }
        now.addAndGet(Duration.ofSeconds(61).toNanos());
        RepeatedWarnings.Decision next = warnings.offer("failed");
        assertThat(next.log()).isTrue();
        assertThat(next.summary()).isEqualTo("… 8,400 more like this in the last 61 s: failed");
        assertThat(warnings.offer("failed").summary()).isNull();
    }

    @Test
    void kindsAreCountedApart() {
        for (int i = 0; i < 3; i++) {
            warnings.offer("a");
        }
        assertThat(warnings.offer("a").log()).isFalse();
        assertThat(warnings.offer("b").log()).isTrue();
    }

    @Test
    void anExceptionsKindMasksTheNumbersThatDifferFromOneTaskToTheNext() {
        assertThat(RepeatedWarnings.kindOf(new IllegalStateException("task 17 has no prompt\nmore")))
                .isEqualTo(RepeatedWarnings.kindOf(new IllegalStateException("task 18 has no prompt\nother")))
                .isEqualTo("IllegalStateException: task # has no prompt");
    }
}
