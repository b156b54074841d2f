package org.rollout.trainer;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class LeaseKeeperTest {
    private static final Duration DEADLINE = Duration.ofSeconds(20);

    @Test
    void renewsEveryThirdOfTheLeaseWhileABatchIsHeldAndStopsOnceItIsDone() throws Exception {
        List<Long> calls = new CopyOnWriteArrayList<>();
        try (LeaseKeeper k = new LeaseKeeper(new BatchLease("t", Duration.ofMillis(300)), lease -> {
            calls.add(System.nanoTime());
            return List.of(5L);
        })) {
            Thread.sleep(400); // a renewal period passes with nothing held: no call
            assertThat(calls).isEmpty();
            k.holding(5);
            long deadline = System.nanoTime() + DEADLINE.toNanos();
            while (calls.size() < 4) {
                assertThat(System.nanoTime())
                        .as("four renewals within %s", DEADLINE)
                        .isLessThan(deadline);
                Thread.sleep(20);
            }
            k.done(5);
            int after = calls.size();
            Thread.sleep(400);
            assertThat(calls.size()).as("at most one renewal was under way").isLessThanOrEqualTo(after + 1);
        }
    }

    @Test
    void aBatchTheEngineNoLongerHoldsForUsIsDroppedAndAFailedRenewalKeepsTheRest() {
        AtomicReference<Object> answer = new AtomicReference<>(List.of(1L, 2L));
        try (LeaseKeeper k = new LeaseKeeper(new BatchLease("t", Duration.ofHours(1)), lease -> {
            Object a = answer.get();
            if (a instanceof Exception e) {
                throw e;
            }
            @SuppressWarnings("unchecked")
            List<Long> ids = (List<Long>) a;
            return ids;
        })) {
            k.holding(1);
            k.holding(2);
            k.renewNow();
            assertThat(k.held()).containsExactlyInAnyOrder(1L, 2L);
            answer.set(new java.io.IOException("gateway down"));
            k.renewNow();
            assertThat(k.held()).as("a failure says nothing of the batches").containsExactlyInAnyOrder(1L, 2L);
            answer.set(List.of(2L));
            k.renewNow();
            assertThat(k.held()).as("batch 1 went back to other trainers").containsExactly(2L);
        }
    }
}
