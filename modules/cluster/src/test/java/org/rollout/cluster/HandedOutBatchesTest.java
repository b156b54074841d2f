package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.rollout.api.TrainingBatch;
import org.rollout.trainer.HeldBatch;

class HandedOutBatchesTest {
    private static final long S = 1_000_000_000L;

    private static TrainingBatch batch(long id) {
        return new TrainingBatch(id, List.of(), 0);
    }

    @Test
    void aLeasedBatchIsDueWhenItsLeaseLapsesAndAnUnleasedOneAfterTheAckTimeout() {
        HandedOutBatches h = new HandedOutBatches(Duration.ofSeconds(600));
        h.handOut(batch(1), "trainer-a", Duration.ofSeconds(15), 0);
        h.handOut(batch(2), "127.0.0.1:4000", null, 0);
        assertThat(h.takeDue(14 * S)).isEmpty();
        List<HandedOutBatches.Due> due = h.takeDue(15 * S);
        assertThat(due).extracting(d -> d.batch().batchId()).containsExactly(1L);
        assertThat(due.get(0).why()).contains("trainer-a").contains("lapsed");
        assertThat(h.waiting(due.get(0).batch()))
                .isEqualTo(new HeldBatch(
                        1, 0, "nobody: waiting for the next pull (the lease of trainer-a lapsed)", false, 0));
        assertThat(h.takeDue(599 * S)).isEmpty();
        assertThat(h.takeDue(600 * S)).extracting(d -> d.batch().batchId()).containsExactly(2L);
        assertThat(h.size()).isZero();
    }

    @Test
    void aRenewalExtendsOnlyTheHoldersLeasedBatchesAndNeverBeyondTheAckTimeout() {
        HandedOutBatches h = new HandedOutBatches(Duration.ofSeconds(60));
        h.handOut(batch(1), "a", Duration.ofSeconds(10), 0);
        h.handOut(batch(2), "b", Duration.ofSeconds(10), 0);
        h.handOut(batch(3), "a", null, 0);
        assertThat(h.renew("a", Duration.ofSeconds(10), 8 * S)).containsExactly(1L);
        assertThat(h.takeDue(10 * S)).extracting(d -> d.batch().batchId()).containsExactly(2L);
        assertThat(h.takeDue(17 * S)).isEmpty();
        for (long t = 17; t < 60; t += 5) {
            assertThat(h.renew("a", Duration.ofSeconds(10), t * S)).containsExactly(1L);
        }
        // A holder that renews for ever still gives its batch back after batch_ack_timeout.
        assertThat(h.takeDue(60 * S)).extracting(d -> d.batch().batchId()).containsExactly(1L, 3L);
        assertThat(h.renew("a", Duration.ofSeconds(10), 61 * S)).isEmpty();
    }

    @Test
    void theStatusNamesEachHolderAndWhenItsBatchGoesBack() {
        HandedOutBatches h = new HandedOutBatches(Duration.ofSeconds(600));
        h.handOut(batch(7), "trainer-a", Duration.ofSeconds(15), 0);
        h.handOut(batch(8), "", null, 0);
        assertThat(h.status(5 * S))
                .containsExactly(
                        new HeldBatch(7, 0, "trainer-a", true, 10_000),
                        new HeldBatch(8, 0, "an unnamed trainer", false, 595_000));
        assertThat(h.remove(7)).isNotNull();
        assertThat(h.remove(7)).isNull();
        assertThat(h.batches()).extracting(TrainingBatch::batchId).containsExactly(8L);
    }
}
