package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class BackoffTest {

    @Test
    void doublesFromTheInitialDelayWithJitterInTheUpperHalf() {
        Backoff b = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(10), new SplittableRandom(1));
        for (int k = 1; k <= 5; k++) {
            long base = 100L << (k - 1);
            for (int i = 0; i < 50; i++) {
                assertThat(b.delay(k).toMillis()).isBetween(base / 2, base);
            }
        }
    }

    @Test
    void isCappedAtTheMaximum() {
        Backoff b = new Backoff(Duration.ofMillis(100), Duration.ofMillis(300), new SplittableRandom(2));
        for (int i = 0; i < 50; i++) {
            assertThat(b.delay(40)).isBetween(Duration.ofMillis(150), Duration.ofMillis(300));
        }
        assertThat(b.delay(Integer.MAX_VALUE)).isLessThanOrEqualTo(Duration.ofMillis(300));
    }

    @Test
    void isZeroWithoutFailuresOrWithAZeroInitialDelay() {
        assertThat(new Backoff(Duration.ofMillis(100), Duration.ofSeconds(1), new SplittableRandom(3)).delay(0))
                .isZero();
        assertThat(new Backoff(Duration.ZERO, Duration.ZERO, new SplittableRandom(3)).delay(3))
                .isZero();
    }
}
