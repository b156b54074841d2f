package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.rollout.api.EpisodeResult;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.api.WorkflowContext;
import org.rollout.core.TrajectoryRows;

/**
 * The coordinator fails while 100 000 tasks are open and outcomes and admissions stream through
 * it: the restarted coordinator recovers from the ledger while everything that arrives meanwhile
 * (outcomes, holdings, acknowledgements, status reads) waits in its stash, which is sized for the
 * run and does not overflow; every task open at the failure reaches the trainer exactly once.
 *
 * <p>The episodes wait at a gate until 100 000 are open, then end after 0–8 s each, so that at the
 * failure thousands of outcomes a second reach the coordinator and it admits as many new groups.
 */
class CoordinatorRestartUnderLoadTest {
    private static final int OPEN = 100_000;
    private static final Duration DEADLINE = Duration.ofSeconds(150);
    /** Outcomes (or admissions) a rate is measured over. */
    private static final int WINDOW = 10_000;

    /** Throws once from inside the coordinator, at the first outcome after it is armed; notes what else it throws. */
    static final class ArmedFailure implements Supervision.Wrapper {
        final AtomicBoolean armed = new AtomicBoolean();
        final AtomicLong thrownAt = new AtomicLong();
        final AtomicInteger starts = new AtomicInteger();
        final List<Throwable> otherFailures = new CopyOnWriteArrayList<>();

        @Override
        @SuppressWarnings("unchecked")
        public <T> Behavior<T> wrap(String name, Behavior<T> behavior) {
            if (!name.equals("coordinator")) {
                return behavior;
            }
            return Behaviors.intercept(
                    () -> new BehaviorInterceptor<T, T>((Class<T>) (Class<?>) Object.class) {
                        @Override
                        public Behavior<T> aroundStart(TypedActorContext<T> ctx, PreStartTarget<T> target) {
                            starts.incrementAndGet();
                            return target.start(ctx);
                        }

                        @Override
                        public Behavior<T> aroundReceive(TypedActorContext<T> ctx, T msg, ReceiveTarget<T> target) {
                            if (msg instanceof RolloutCoordinator.TaskFinished && armed.compareAndSet(true, false)) {
                                thrownAt.set(System.nanoTime());
                                throw new IllegalStateException("injected failure in the coordinator");
                            }
                            try {
                                return target.apply(ctx, msg);
                            } catch (RuntimeException | Error e) {
                                otherFailures.add(e);
                                throw e;
                            }
                        }
                    },
                    behavior);
        }
    }

    @Test
    @Timeout(240)
    void aCoordinatorThatFailsWithAHundredThousandTasksOpenRecoversWithoutStashOverflowAndLosesNothing()
            throws Exception {
        CountDownLatch gate = new CountDownLatch(1);
        Set<Long> started = ConcurrentHashMap.newKeySet();
        AtomicLong startedCount = new AtomicLong();
        AtomicLong endedCount = new AtomicLong();
        ModelResponse response = ModelResponse.of(
                new int[] {1, 2}, new int[] {3}, new float[] {-0.1f}, new int[] {0}, StopReason.STOP, Duration.ZERO);
        TestRollout t = new TestRollout();
        t.groupSize = 1;
        t.maxConcurrent = OPEN;
        t.consumerBatchSize = 1_000;
        t.eta = 1_000; // (η + 1) · B far above the open tasks: the staleness budget never holds admission
        t.queueSize = 2 * OPEN; // running plus buffered: never the limit here
        t.episodeTimeout = Duration.ofMinutes(5);
        t.workflow = (engine, data) -> {
            if (started.add(WorkflowContext.current().taskId().orElseThrow())) {
                startedCount.incrementAndGet();
            }
            if (!gate.await(DEADLINE.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("the gate never opened");
            }
            // The episode's own length, 0-8 s: what the test runs, not a wait for anything.
            Thread.sleep(ThreadLocalRandom.current().nextLong(8_000));
            endedCount.incrementAndGet();
            return EpisodeResult.trajectory(TrajectoryRows.singleTurn(response, 1.0));
        };
        ArmedFailure fault = new ArmedFailure();
        Set<Long> delivered = ConcurrentHashMap.newKeySet();
        List<Long> twice = new CopyOnWriteArrayList<>();
        AtomicReference<Throwable> trainerFailed = new AtomicReference<>();
        AtomicBoolean stop = new AtomicBoolean();
        long began = System.nanoTime();
        try (LocalRollout rollout = LocalRollout.start(t.spec(), t.pekko, fault)) {
            LocalRolloutClient client = rollout.client();
            Thread trainer = Thread.ofPlatform().name("trainer").start(() -> {
                try {
                    while (!stop.get()) {
                        var next = client.nextBatch(Duration.ofSeconds(1));
                        if (next.isEmpty()) {
                            continue;
                        }
                        TrainingBatch b = next.get();
                        for (TrainingGroup g : b.groups()) {
                            if (!delivered.add(g.taskId())) {
                                twice.add(g.taskId());
                            }
                        }
                        client.acknowledge(b);
                    }
                } catch (Throwable e) {
                    trainerFailed.set(e);
                }
            });
            try {
                TestRollout.await(OPEN + " tasks open", DEADLINE, () -> startedCount.get() >= OPEN);
                double fill = OPEN / ((System.nanoTime() - began) / 1e9);
                gate.countDown();
                // Outcomes and admissions now stream: once 10 000 episodes have ended, measure both
                // over the next 10 000 outcomes, then fail the coordinator.
                TestRollout.await("10 000 outcomes", DEADLINE, () -> endedCount.get() >= WINDOW);
                long s0 = startedCount.get();
                long e0 = endedCount.get();
                long t0 = System.nanoTime();
                TestRollout.await("10 000 more outcomes", DEADLINE, () -> endedCount.get() >= e0 + WINDOW);
                double seconds = (System.nanoTime() - t0) / 1e9;
                double admissions = (startedCount.get() - s0) / seconds;
                double outcomes = (endedCount.get() - e0) / seconds;
                long openAtFailure = client.status().running();
                Set<Long> mustArrive = new HashSet<>(started);
                fault.armed.set(true);
                TestRollout.await("the injected failure", DEADLINE, () -> fault.thrownAt.get() != 0);
                long endedAtFailure = endedCount.get();
                // A status read waits in the stash until the successor has recovered.
                client.status();
                double recovery = (System.nanoTime() - fault.thrownAt.get()) / 1e9;
                long endedInRecovery = endedCount.get() - endedAtFailure;
                long s1 = startedCount.get();
                long t1 = System.nanoTime();
                TestRollout.await(
                        "10 000 admissions after recovery", DEADLINE, () -> startedCount.get() >= s1 + WINDOW);
                double admissionsAfter = (startedCount.get() - s1) / ((System.nanoTime() - t1) / 1e9);
                TestRollout.await(
                        "every task open at the failure delivered", DEADLINE, () -> delivered.containsAll(mustArrive));
                System.out.printf(
                        Locale.ROOT,
                        "coordinator restart under load: %d tasks open at the failure (%d started), filled at %.0f"
                                + " admissions/s; before the failure %.0f outcomes/s and %.0f admissions/s; recovered"
                                + " (a status read answered) %.2f s after the failure, %d episodes ended meanwhile;"
                                + " %.0f admissions/s over the next 10 000; %d delivered, in %.0f s%n",
                        openAtFailure,
                        mustArrive.size(),
                        fill,
                        outcomes,
                        admissions,
                        recovery,
                        endedInRecovery,
                        admissionsAfter,
                        delivered.size(),
                        (System.nanoTime() - began) / 1e9);
                assertThat(openAtFailure).as("tasks open at the failure").isGreaterThanOrEqualTo(OPEN * 9 / 10);
                assertThat(fault.starts.get())
                        .as("coordinator starts: the first and one restart")
                        .isEqualTo(2);
                assertThat(fault.otherFailures)
                        .as("failures other than the injected one")
                        .isEmpty();
            } finally {
                stop.set(true);
                gate.countDown();
                trainer.join(Duration.ofSeconds(10));
            }
            assertThat(trainerFailed.get()).as("the trainer's calls").isNull();
            assertThat(twice).as("tasks delivered twice").isEmpty();
            assertThat(new ArrayList<>(delivered)).hasSizeGreaterThanOrEqualTo(OPEN);
        }
    }
}
