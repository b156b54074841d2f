package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.cluster.TestRollout.await;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.Test;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.core.InvariantChecker;
import org.rollout.trainer.RolloutStatus;
import org.rollout.trainer.WeightPublishException;

/**
 * Each long-lived actor throws once from inside (while handling one message of a given kind): the
 * engine carries on, every task still ends once, and no group reaches the trainer twice.
 */
class SupervisionTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);

    /** Throws once, from inside actor {@code actor}, at its {@code nth} message of class {@code kind}. */
    static final class ThrowOnce implements Supervision.Wrapper {
        final String actor;
        final Class<?> kind;
        final int nth;
        final AtomicInteger seen = new AtomicInteger();

        ThrowOnce(String actor, Class<?> kind, int nth) {
            this.actor = actor;
            this.kind = kind;
            this.nth = nth;
        }

        boolean fired() {
            return seen.get() >= nth;
        }

        @Override
        @SuppressWarnings("unchecked")
        public <T> Behavior<T> wrap(String name, Behavior<T> behavior) {
            if (!name.equals(actor)) {
                return behavior;
            }
            return Behaviors.intercept(
                    () -> new BehaviorInterceptor<T, T>((Class<T>) (Class<?>) Object.class) {
                        @Override
                        public Behavior<T> aroundReceive(TypedActorContext<T> ctx, T msg, ReceiveTarget<T> target) {
                            if (kind.isInstance(msg) && seen.incrementAndGet() == nth) {
                                throw new IllegalStateException("injected failure in the " + actor);
                            }
                            return target.apply(ctx, msg);
                        }
                    },
                    behavior);
        }
    }

    @Test
    void theRunnerRestartsWithItsGroupsAndOutboxAndTheRunGoesOn() throws Exception {
        ThrowOnce fault = new ThrowOnce("runner", GroupRunner.Forget.class, 3);
        runsOnAfter(fault, new TestRollout(), 6);
    }

    @Test
    void aGroupWhoseActorThrowsIsRejectedAsFailedOnceAndTheRunGoesOn() throws Exception {
        ThrowOnce fault = new ThrowOnce("group", GroupRun.Concluded.class, 10);
        TestRollout t = new TestRollout();
        try (LocalRollout rollout = LocalRollout.start(t.spec(), t.pekko, fault)) {
            deliverBatches(rollout, t, 6, fault);
            await("the failed group counted", DEADLINE, () -> rejected(rollout, "failed") == 1);
        }
    }

    @Test
    void aGroupActorThatThrowsBeforeTakingItsGroupStillEndsItAsFailedOnceAndIsNotReused() throws Exception {
        // The throw comes as the pooled group actor receives the group (Start): it stops owning
        // nothing, and its runner, which watches it, ends the group it was handed.
        ThrowOnce fault = new ThrowOnce("group", GroupRun.Start.class, 10);
        TestRollout t = new TestRollout();
        try (LocalRollout rollout = LocalRollout.start(t.spec(), t.pekko, fault)) {
            deliverBatches(rollout, t, 6, fault);
            await("the failed group counted", DEADLINE, () -> rejected(rollout, "failed") == 1);
        }
    }

    @Test
    void theCoordinatorRestartsFromTheLedgerAndTheRunGoesOn() throws Exception {
        ThrowOnce fault = new ThrowOnce("coordinator", RolloutCoordinator.TaskFinished.class, 5);
        runsOnAfter(fault, new TestRollout(), 6);
    }

    @Test
    void theCollectorRestartsAndIsRefilledFromTheRunnersOutboxes() throws Exception {
        ThrowOnce fault = new ThrowOnce("collector", Collector.GroupFinished.class, 5);
        runsOnAfter(fault, new TestRollout(), 6);
    }

    @Test
    void theWeightVersionRestartsAbandoningTheUpdateInFlightAndTheNextPublishSucceeds() throws Exception {
        ThrowOnce fault = new ThrowOnce("weight-version", WeightVersion.RunnerPrepared.class, 1);
        TestRollout t = new TestRollout();
        try (LocalRollout rollout = LocalRollout.start(t.spec(), t.pekko, fault)) {
            var client = rollout.client();
            client.acknowledge(client.nextBatch(DEADLINE).orElseThrow());
            assertThatThrownBy(() -> client.publishWeights(1, Path.of("w1")))
                    .as("the update in flight is abandoned")
                    .isInstanceOf(WeightPublishException.class)
                    .hasMessageContaining("restarted");
            assertThat(fault.fired()).isTrue();
            client.publishWeights(1, Path.of("w1"));
            assertThat(client.status().version()).isEqualTo(1);
            // Admission resumed: batches keep coming at the new version.
            TrainingBatch b = client.nextBatch(DEADLINE).orElseThrow();
            client.acknowledge(b);
            client.publishWeights(2, Path.of("w2"));
            assertThat(client.status().version()).isEqualTo(2);
        }
    }

    /** Runs with {@code fault} until {@code batches} batches were delivered; checks exactly once. */
    private static void runsOnAfter(ThrowOnce fault, TestRollout t, int batches) throws Exception {
        try (LocalRollout rollout = LocalRollout.start(t.spec(), t.pekko, fault)) {
            deliverBatches(rollout, t, batches, fault);
        }
    }

    private static void deliverBatches(LocalRollout rollout, TestRollout t, int batches, ThrowOnce fault)
            throws Exception {
        var client = rollout.client();
        InvariantChecker checker = new InvariantChecker(t.eta, false);
        Set<Long> tasks = new HashSet<>();
        for (int step = 0; step < batches; step++) {
            // A pull waiting in a collector that restarts is answered empty: a trainer pulls again.
            TrainingBatch batch =
                    client.nextBatch(DEADLINE).or(() -> pullAgain(client)).orElseThrow();
            checker.onBatch(batch);
            for (TrainingGroup g : batch.groups()) {
                assertThat(tasks.add(g.taskId()))
                        .as("task %d delivered once", g.taskId())
                        .isTrue();
            }
            client.acknowledge(batch);
            client.publishWeights(step + 1, Path.of("w" + (step + 1)));
        }
        assertThat(fault.fired()).as("the fault was injected").isTrue();
        assertThat(checker.violations()).isEmpty();
        RolloutStatus s = client.status();
        assertThat(s.version()).isEqualTo(batches);
    }

    private static java.util.Optional<TrainingBatch> pullAgain(LocalRolloutClient client) {
        try {
            return client.nextBatch(DEADLINE);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    private static long rejected(LocalRollout rollout, String reason) {
        try {
            return rollout.client().status().rejectedByReason().getOrDefault(reason, 0L);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }
}
