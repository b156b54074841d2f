package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.cluster.TestRollout.await;

import com.typesafe.config.ConfigFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.rollout.api.TrainingBatch;
import org.rollout.core.InvariantChecker;
import org.rollout.trainer.RolloutStatus;
import org.rollout.trainer.WeightPublishException;

/**
 * A whole local engine with {@code pekko.actor.serialize-messages = on}: Pekko serializes and
 * deserializes every message it delivers (except {@link NodeLocal} ones) with the bound
 * serializer, so a message that could not cross nodes fails here even though nothing leaves the
 * JVM.
 */
class SerializeMessagesTest {
    private static final Duration DEADLINE = Duration.ofSeconds(60);

    @Test
    void aTrainingLoopWithEvaluationRejectionsAndPublishesRunsWithEveryMessageSerialized() throws Exception {
        TestRollout t = new TestRollout();
        t.pekko = ConfigFactory.parseString("""
                        pekko.actor.serialize-messages = on
                        pekko.actor.serialize-creators = off
                        """).withFallback(TestRollout.PEKKO);
        t.evalItems = List.of(Map.of("prompt", "e1"), Map.of("prompt", "e2"));
        t.evalEvery = 2;
        t.source = new GeneratedPromptSource(i -> Map.of("prompt", "p" + i, "index", i, "tags", List.of("a", "b")), -1);
        // Every third group is rejected by the accept filter, so rejections travel too.
        AtomicInteger judged = new AtomicInteger();
        t.accept = rows -> judged.incrementAndGet() % 3 != 0;
        try (LogCapture log = new LogCapture();
                LocalRollout rollout = t.start()) {
            var client = rollout.client();
            InvariantChecker checker = new InvariantChecker(t.eta, false);
            for (int step = 0; step < 3; step++) {
                TrainingBatch batch = client.nextBatch(DEADLINE).orElseThrow();
                checker.onBatch(batch);
                client.acknowledge(batch);
                client.publishWeights(step + 1, Path.of("weights-v" + (step + 1)));
                checker.onVersion(step + 1);
            }
            assertThat(checker.violations()).isEmpty();
            try {
                client.publishWeights(1, Path.of("stale"));
            } catch (WeightPublishException e) {
                assertThat(e.getMessage()).contains("not newer");
            }
            await(
                    "the evaluation passes to finish",
                    DEADLINE,
                    () -> status(client).evalRunning() == 0);
            RolloutStatus s = client.status();
            assertThat(s.version()).isEqualTo(3);
            assertThat(s.rejectedByReason()).containsKey("rejected");
            assertThat(client.coordinatorStatus().budget().version()).isEqualTo(3);
            assertThat(log.errorsContaining("serializ")).isEmpty();
        }
    }

    private static RolloutStatus status(LocalRolloutClient client) {
        try {
            return client.status();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
