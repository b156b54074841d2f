package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.core.StalenessBudget;

/**
 * The coordinator's protocol, with probes for its runners and its collector: admission under the
 * staleness budget and weight updates, re-dispatch when a runner is lost, and acknowledgements.
 */
class CoordinatorProtocolTest {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private final ActorTestKit kit = ActorTestKit.create("coordinator-protocol", TestRollout.PEKKO);

    @AfterEach
    void shutdown() {
        kit.shutdownTestKit();
    }

    private record Run(
            ActorRef<RolloutCoordinator.Command> coordinator,
            TestProbe<Collector.Command> collector,
            DurableState state) {}

    /** A fresh run: batch size 2, at most 4 running, η = 0 (capacity (0 + 0 + 1) · 2 = 2). */
    private Run start() {
        DurableState state = DurableState.inMemory();
        TestProbe<Collector.Command> collector = kit.createTestProbe("collector");
        PromptSource prompts = index -> Optional.of(Map.of("prompt", "p" + index));
        ActorRef<RolloutCoordinator.Command> c = kit.spawn(RolloutCoordinator.create(
                new StalenessBudget(4, 2, 0),
                prompts,
                List.of(),
                0,
                1,
                64,
                collector.getRef(),
                state,
                WAIT,
                RankShare.ALONE));
        Collector.Introduce hello = collector.expectMessageClass(Collector.Introduce.class, WAIT);
        hello.coordinator().tell(new RolloutCoordinator.CollectorIs(collector.getRef()));
        collector.expectMessageClass(Collector.Attach.class, WAIT);
        return new Run(c, collector, state);
    }

    /** A runner of capacity {@code capacity}, listed with the Receptionist; answers GetInfo. */
    private TestProbe<GroupRunner.Command> runner(String node, int capacity) {
        TestProbe<GroupRunner.Command> r = kit.createTestProbe(node);
        kit.system().receptionist().tell(Receptionist.register(GroupRunner.SERVICE_KEY, r.getRef()));
        GroupRunner.GetInfo info = r.expectMessageClass(GroupRunner.GetInfo.class, WAIT);
        info.replyTo().tell(new GroupRunner.Info(r.getRef(), node, capacity, 0));
        return r;
    }

    private static List<GroupRunner.RunGroup> groups(TestProbe<GroupRunner.Command> r, int n) {
        List<GroupRunner.RunGroup> got = new ArrayList<>();
        while (got.size() < n) {
            if (r.receiveMessage(WAIT) instanceof GroupRunner.RunGroup g) {
                got.add(g);
            }
        }
        return got;
    }

    private static void finished(ActorRef<RolloutCoordinator.Command> c, GroupRunner.RunGroup g, boolean accepted) {
        c.tell(new RolloutCoordinator.TaskFinished(
                g.taskId(), g.attempt(), false, accepted, accepted ? null : "failed", accepted ? 1 : 0));
    }

    @Test
    void shouldAdmitOnlyWhileTheStalenessBudgetHasCapacity() {
        Run run = start();
        TestProbe<GroupRunner.Command> r = runner("node-1", 8);
        List<GroupRunner.RunGroup> first = groups(r, 2);
        r.expectNoMessage(Duration.ofMillis(300));

        // Accepted groups keep their place until the version moves on; a rejected one frees it.
        finished(run.coordinator(), first.get(0), true);
        r.expectNoMessage(Duration.ofMillis(300));
        finished(run.coordinator(), first.get(1), false);
        assertThat(groups(r, 1)).extracting(GroupRunner.RunGroup::attempt).containsExactly(0);
        r.expectNoMessage(Duration.ofMillis(300));

        run.coordinator().tell(new RolloutCoordinator.ResumeAdmission(1, 1));
        List<GroupRunner.RunGroup> atOne = groups(r, 2);
        assertThat(atOne).allSatisfy(g -> assertThat(g.dispatchVersion()).isEqualTo(1));
    }

    @Test
    void shouldAdmitNothingWhileAWeightUpdateRuns() {
        Run run = start();
        run.coordinator().tell(new RolloutCoordinator.PauseAdmission(7));
        TestProbe<GroupRunner.Command> r = runner("node-1", 8);
        r.expectNoMessage(Duration.ofMillis(500));
        run.coordinator().tell(new RolloutCoordinator.ResumeAdmission(7, 0));
        assertThat(groups(r, 2)).hasSize(2);
    }

    @Test
    void shouldDispatchTheTasksOfALostRunnerAgainElsewhereWithTheNextAttempt() {
        Run run = start();
        TestProbe<GroupRunner.Command> lost = runner("node-1", 2);
        List<GroupRunner.RunGroup> onLost = groups(lost, 2);
        TestProbe<GroupRunner.Command> other = runner("node-2", 2);
        lost.stop();

        List<GroupRunner.RunGroup> again = groups(other, 2);
        assertThat(again)
                .extracting(GroupRunner.RunGroup::taskId)
                .containsExactlyInAnyOrderElementsOf(
                        onLost.stream().map(GroupRunner.RunGroup::taskId).toList());
        assertThat(again).allSatisfy(g -> assertThat(g.attempt()).isEqualTo(1));
    }

    @Test
    void shouldAnswerAnAcknowledgementOnlyOnceItsTasksLeftTheDurableLedger() throws Exception {
        Run run = start();
        TestProbe<GroupRunner.Command> r = runner("node-1", 4);
        List<GroupRunner.RunGroup> batch = groups(r, 2);
        batch.forEach(g -> finished(run.coordinator(), g, true));
        TestRollout.await("both accepted in the ledger", WAIT, () -> {
            try {
                return run.state().readLedger().toCompletableFuture().get().open().values().stream()
                                .filter(DurableState.OpenTask::accepted)
                                .count()
                        == 2;
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });

        TestProbe<Collector.AckReply> trainer = kit.createTestProbe();
        List<Long> ids = batch.stream().map(GroupRunner.RunGroup::taskId).toList();
        run.coordinator().tell(new RolloutCoordinator.BatchConsumed(5, ids, trainer.getRef()));
        assertThat(trainer.receiveMessage(WAIT).batchId()).isEqualTo(5);
        assertThat(run.state().readLedger().toCompletableFuture().get().open()).isEmpty();
        // The runner that holds the outcomes may forget them.
        List<Long> forgotten = new ArrayList<>();
        while (forgotten.size() < 2) {
            if (r.receiveMessage(WAIT) instanceof GroupRunner.Forget f) {
                forgotten.addAll(f.taskIds());
            }
        }
        assertThat(forgotten).containsExactlyInAnyOrderElementsOf(ids);
    }

    @Test
    void aRecoveringCoordinatorHoldsMoreMessagesThanItsOldFixedStashAndAnswersThemAll() {
        // The stash is sized for the run (4 per group in flight, plus the buffer's share): 25 000
        // status reads while the ledger is read overflowed the old fixed 10 000 and failed it.
        int reads = 25_000;
        assertThat(CoordinatorRecovery.stashCapacity(12_000, 64)).isGreaterThan(reads);
        DurableState fast = DurableState.inMemory();
        CompletableFuture<DurableState.Ledger> ledger = new CompletableFuture<>();
        DurableState slow = new DurableState() {
            @Override
            public CompletionStage<DurableState.VersionRecord> readVersion() {
                return fast.readVersion();
            }

            @Override
            public CompletionStage<Void> writeVersion(DurableState.VersionRecord record) {
                return fast.writeVersion(record);
            }

            @Override
            public CompletionStage<DurableState.Ledger> readLedger() {
                return ledger;
            }

            @Override
            public CompletionStage<Void> writeLedger(
                    Collection<DurableState.OpenTask> put, Collection<Long> remove, DurableState.Cursor cursor) {
                return fast.writeLedger(put, remove, cursor);
            }
        };
        TestProbe<Collector.Command> collector = kit.createTestProbe("collector");
        PromptSource prompts = index -> Optional.of(Map.of("prompt", "p" + index));
        ActorRef<RolloutCoordinator.Command> c = kit.spawn(RolloutCoordinator.create(
                new StalenessBudget(12_000, 2, 0),
                prompts,
                List.of(),
                0,
                1,
                64,
                collector.getRef(),
                slow,
                WAIT,
                RankShare.ALONE));
        TestProbe<RolloutCoordinator.Status> reader = kit.createTestProbe("reader");
        for (int i = 0; i < reads; i++) {
            c.tell(new RolloutCoordinator.GetStatus(reader.getRef()));
        }
        reader.expectNoMessage(Duration.ofMillis(200));
        fast.readLedger().thenAccept(ledger::complete);
        Collector.Introduce hello = collector.expectMessageClass(Collector.Introduce.class, WAIT);
        hello.coordinator().tell(new RolloutCoordinator.CollectorIs(collector.getRef()));
        assertThat(reader.receiveSeveralMessages(reads, Duration.ofSeconds(60)))
                .as("every status read held during recovery is answered")
                .hasSize(reads);
    }
}
