package org.rollout.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.rollout.api.Float32Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.HttpRolloutClient;
import org.rollout.trainer.RolloutClient;

/** The Java client's lease against a real gateway: renewed while the batch is held, not after its acknowledgement. */
class ClientLeaseTest {
    private static final Duration DEADLINE = Duration.ofSeconds(20);

    @Test
    void theClientRenewsItsLeaseEveryThirdOfItWhileItHoldsABatchAndStopsOnceItIsAcknowledged() throws Exception {
        FakeEngine engine = new FakeEngine();
        TensorDict rows = TensorDict.builder()
                .put(TensorDict.REWARDS, Float32Tensor.vector(0.5f, 1f))
                .build();
        engine.batch = new TrainingBatch(
                7, List.of(new TrainingGroup(4, 0, rows, new int[] {0, 1}, new int[] {1, 1}, 1, 1, 1, 1)), 1);
        try (TrainerGateway g = TrainerGateway.start(GatewayConfig.defaults(), engine);
                HttpRolloutClient c = (HttpRolloutClient) RolloutClient.connect(
                        ClientConfig.of(g.uri().toString()).withLease(Duration.ofSeconds(1)))) {
            TrainingBatch b = c.nextBatch(Duration.ofSeconds(5)).orElseThrow();
            assertThat(engine.lastLease.duration()).isEqualTo(Duration.ofSeconds(1));
            assertThat(c.leasedBatches()).containsExactly(7L);
            long deadline = System.nanoTime() + DEADLINE.toNanos();
            while (engine.renewals.get() < 4) {
                assertThat(System.nanoTime())
                        .as("four renewals within %s", DEADLINE)
                        .isLessThan(deadline);
                Thread.sleep(50);
            }
            assertThat(engine.lastRenewal.holder()).isEqualTo(engine.lastLease.holder());
            engine.renewedIds = List.of();
            c.acknowledge(b);
            assertThat(c.leasedBatches()).isEmpty();
            int after = engine.renewals.get();
            Thread.sleep(1_200); // more than three renewal periods with nothing held
            assertThat(engine.renewals.get()).as("no renewal once acknowledged").isLessThanOrEqualTo(after + 1);
        }
    }
}
