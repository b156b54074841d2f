package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.rollout.api.TrainingGroup;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CollectorTest {
    private final ActorTestKit kit = ActorTestKit.create("collector-test", TestRollout.PEKKO);

    @AfterAll
    void shutdown() {
        kit.shutdownTestKit();
    }

    private ActorRef<Collector.Command> collector(String name, TestProbe<RolloutCoordinator.Command> coordinator) {
        return collector(name, coordinator.getRef());
    }

    private ActorRef<Collector.Command> collector(String name, ActorRef<RolloutCoordinator.Command> coordinator) {
        ActorRef<Collector.Command> c = TestCollectors.spawn(kit, name, 1, Duration.ofMinutes(5), false);
        c.tell(new Collector.Attach(coordinator, 0, 0, java.util.List.of(), java.util.List.of()));
        return c;
    }

    /**
     * A collector whose coordinator writes its ledger at once: every acceptance, hand-out and
     * acknowledgement it is told of is recorded and answered.
     */
    private ActorRef<Collector.Command> collectorWithInstantLedger(String name) {
        AtomicReference<ActorRef<Collector.Command>> self = new AtomicReference<>();
        ActorRef<RolloutCoordinator.Command> ledger = kit.spawn(
                Behaviors.receive(RolloutCoordinator.Command.class)
                        .onMessage(RolloutCoordinator.TaskFinished.class, f -> {
                            if (f.accepted() && !f.isEval()) {
                                self.get().tell(new Collector.AcceptRecorded(f.taskId()));
                            }
                            return Behaviors.same();
                        })
                        .onMessage(RolloutCoordinator.HandingOut.class, h -> {
                            h.collector().tell(new Collector.HandOutRecorded(h.batchId()));
                            return Behaviors.same();
                        })
                        .onMessage(RolloutCoordinator.BatchConsumed.class, b -> {
                            b.replyTo().tell(new Collector.AckReply(b.batchId(), true));
                            return Behaviors.same();
                        })
                        .onAnyMessage(m -> Behaviors.same())
                        .build(),
                name + "-ledger");
        self.set(collector(name, ledger));
        return self.get();
    }

    private static Collector.GroupFinished accepted(long taskId, int attempt) {
        return Payloads.oneRowAccepted(taskId, attempt, 0);
    }

    @Test
    void aLateDuplicateOfAFinishedTaskIsDroppedAndReportedOnce() {
        TestProbe<RolloutCoordinator.Command> coordinator = kit.createTestProbe();
        ActorRef<Collector.Command> c = collector("dedup", coordinator);
        c.tell(accepted(7, 0));
        c.tell(accepted(7, 1));
        RolloutCoordinator.TaskFinished first = coordinator.expectMessageClass(RolloutCoordinator.TaskFinished.class);
        assertThat(first.taskId()).isEqualTo(7);
        assertThat(first.attempt()).isZero();
        coordinator.expectNoMessage(Duration.ofMillis(300));

        TestProbe<Collector.Status> status = kit.createTestProbe();
        c.tell(new Collector.GetStatus(status.getRef()));
        Collector.Status s = status.receiveMessage();
        assertThat(s.duplicates()).isEqualTo(1);
        assertThat(s.bufferedGroups()).isEqualTo(1);
    }

    @Test
    void aPullWaitsForEnoughGroupsAndAnExpiredPullGetsAnEmptyReply() {
        ActorRef<Collector.Command> c = collectorWithInstantLedger("pull");
        TestProbe<Collector.PullReply> trainer = kit.createTestProbe();
        c.tell(new Collector.PullBatch(Duration.ofMillis(300), 0, trainer.getRef()));
        assertThat(((Collector.BatchReply) trainer.receiveMessage(Duration.ofSeconds(5))).batch())
                .isNull();

        c.tell(new Collector.PullBatch(Duration.ofSeconds(10), 0, trainer.getRef()));
        c.tell(accepted(1, 0));
        Collector.BatchReply reply = (Collector.BatchReply) trainer.receiveMessage(Duration.ofSeconds(5));
        assertThat(reply.batch().groups()).extracting(TrainingGroup::taskId).containsExactly(1L);
    }

    @Test
    void anAcceptedGroupIsHandedOutOnlyOnceTheCoordinatorHasWrittenItsAcceptanceAndItsHandOut() {
        // A group handed out before its acceptance is in the ledger could be handed out again by
        // a successor that never learnt of it.
        TestProbe<RolloutCoordinator.Command> coordinator = kit.createTestProbe();
        ActorRef<Collector.Command> c = collector("recorded", coordinator);
        TestProbe<Collector.PullReply> trainer = kit.createTestProbe();
        c.tell(accepted(3, 0));
        RolloutCoordinator.TaskFinished finished =
                coordinator.expectMessageClass(RolloutCoordinator.TaskFinished.class);
        assertThat(finished.buffered()).as("counted among the groups waiting").isEqualTo(1);
        c.tell(new Collector.PullBatch(Duration.ofMillis(300), 0, trainer.getRef()));
        assertThat(((Collector.BatchReply) trainer.receiveMessage(Duration.ofSeconds(5))).batch())
                .as("not before its acceptance is written")
                .isNull();

        c.tell(new Collector.PullBatch(Duration.ofSeconds(10), 0, trainer.getRef()));
        c.tell(new Collector.AcceptRecorded(3));
        // The batch is formed; it leaves once its hand-out is written too.
        RolloutCoordinator.HandingOut handing = coordinator
                .fishForMessage(
                        Duration.ofSeconds(5),
                        m -> m instanceof RolloutCoordinator.HandingOut
                                ? org.apache.pekko.actor.testkit.typed.javadsl.FishingOutcomes.complete()
                                : org.apache.pekko.actor.testkit.typed.javadsl.FishingOutcomes.continueAndIgnore())
                .stream()
                .map(RolloutCoordinator.HandingOut.class::cast)
                .reduce((a, b) -> b)
                .orElseThrow();
        assertThat(handing.taskIds()).containsExactly(3L);
        trainer.expectNoMessage(Duration.ofMillis(300));
        handing.collector().tell(new Collector.HandOutRecorded(handing.batchId()));
        assertThat(((Collector.BatchReply) trainer.receiveMessage(Duration.ofSeconds(5)))
                        .batch()
                        .groups())
                .extracting(TrainingGroup::taskId)
                .containsExactly(3L);
    }

    @Test
    void aPredecessorsBatchAcknowledgedBeforeTheCoordinatorAttachedIsRetiredOnceItDoes() {
        // A successor collector: the trainer's acknowledgement (with task ids, of a batch the lost
        // collector handed out) arrives before the recovering coordinator attaches.
        ActorRef<Collector.Command> c = TestCollectors.spawn(kit, "early-ack", 1, Duration.ofMinutes(5), true);
        TestProbe<Collector.AckReply> trainer = kit.createTestProbe();
        c.tell(new Collector.Ack(4L << 32, java.util.List.of(5L, 6L), trainer.getRef()));
        trainer.expectNoMessage(Duration.ofMillis(200));

        TestProbe<RolloutCoordinator.Command> coordinator = kit.createTestProbe();
        c.tell(new Collector.Attach(coordinator.getRef(), 5, 10, java.util.List.of(5L, 6L, 7L), java.util.List.of()));
        RolloutCoordinator.BatchConsumed consumed =
                coordinator.expectMessageClass(RolloutCoordinator.BatchConsumed.class);
        assertThat(consumed.taskIds()).containsExactly(5L, 6L);

        // The held outcome of task 5, delivered again by its runner, is not handed out again.
        c.tell(accepted(5, 0));
        c.tell(accepted(7, 0));
        RolloutCoordinator.TaskFinished finished =
                coordinator.expectMessageClass(RolloutCoordinator.TaskFinished.class);
        assertThat(finished.taskId()).isEqualTo(7);
        TestProbe<Collector.Status> status = kit.createTestProbe();
        c.tell(new Collector.GetStatus(status.getRef()));
        Collector.Status s = status.receiveMessage();
        assertThat(s.bufferedGroups()).isEqualTo(1);
        assertThat(s.duplicates()).isEqualTo(1);
    }

    @Test
    void aReleasedBatchGoesToTheNextPullAheadOfNewOnesAndAnUnknownReleaseIsIgnored() {
        ActorRef<Collector.Command> c = collectorWithInstantLedger("release");
        TestProbe<Collector.PullReply> trainer = kit.createTestProbe();
        c.tell(accepted(1, 0));
        c.tell(new Collector.PullBatch(Duration.ofSeconds(10), 0, trainer.getRef()));
        long first = ((Collector.BatchReply) trainer.receiveMessage(Duration.ofSeconds(5)))
                .batch()
                .batchId();

        // A newer group is buffered; the released batch still comes first, with its id and groups.
        c.tell(accepted(2, 0));
        c.tell(new Collector.Release(first));
        c.tell(new Collector.Release(first)); // already back: ignored, not delivered twice
        c.tell(new Collector.Release(12345)); // never handed out: ignored
        c.tell(new Collector.PullBatch(Duration.ofSeconds(10), 0, trainer.getRef()));
        var again = ((Collector.BatchReply) trainer.receiveMessage(Duration.ofSeconds(5))).batch();
        assertThat(again.batchId()).isEqualTo(first);
        assertThat(again.groups()).extracting(TrainingGroup::taskId).containsExactly(1L);
        c.tell(new Collector.PullBatch(Duration.ofSeconds(10), 0, trainer.getRef()));
        var next = ((Collector.BatchReply) trainer.receiveMessage(Duration.ofSeconds(5))).batch();
        assertThat(next.groups()).extracting(TrainingGroup::taskId).containsExactly(2L);
        c.tell(new Collector.PullBatch(Duration.ofMillis(300), 0, trainer.getRef()));
        assertThat(((Collector.BatchReply) trainer.receiveMessage(Duration.ofSeconds(5))).batch())
                .as("nothing else to deliver")
                .isNull();

        // Once acknowledged, a late release changes nothing.
        TestProbe<Collector.AckReply> ack = kit.createTestProbe();
        c.tell(new Collector.Ack(first, java.util.List.of(), ack.getRef()));
        c.tell(new Collector.Release(first));
        c.tell(new Collector.PullBatch(Duration.ofMillis(300), 0, trainer.getRef()));
        assertThat(((Collector.BatchReply) trainer.receiveMessage(Duration.ofSeconds(5))).batch())
                .isNull();
    }

    @Test
    void acknowledgingAnUnknownBatchSaysSo() {
        TestProbe<RolloutCoordinator.Command> coordinator = kit.createTestProbe();
        ActorRef<Collector.Command> c = collector("ack", coordinator);
        TestProbe<Collector.AckReply> probe = kit.createTestProbe();
        c.tell(new Collector.Ack(42, java.util.List.of(), probe.getRef()));
        assertThat(probe.receiveMessage().known()).isFalse();
    }

    @Test
    void aBatchWhoseLeaseLapsesGoesToTheNextPullAtOnceWhileARenewedOneStays() {
        // The ack timeout is 5 minutes: only the lease can bring the batch back within seconds.
        ActorRef<Collector.Command> c = collectorWithInstantLedger("lease");
        TestProbe<Collector.PullReply> dead = kit.createTestProbe();
        TestProbe<Collector.PullReply> alive = kit.createTestProbe();
        c.tell(accepted(1, 0));
        c.tell(accepted(2, 0));
        c.tell(new Collector.PullBatch(Duration.ofSeconds(10), 0, "dead-trainer", 1_000, dead.getRef()));
        long deadBatch = ((Collector.BatchReply) dead.receiveMessage(Duration.ofSeconds(5)))
                .batch()
                .batchId();
        // The live trainer's lease is longer than the test's renewal period with a margin for a busy machine.
        c.tell(new Collector.PullBatch(Duration.ofSeconds(10), 0, "alive-trainer", 3_000, alive.getRef()));
        long aliveBatch = ((Collector.BatchReply) alive.receiveMessage(Duration.ofSeconds(5)))
                .batch()
                .batchId();

        TestProbe<Collector.Status> status = kit.createTestProbe();
        c.tell(new Collector.GetStatus(status.getRef()));
        assertThat(status.receiveMessage().heldBatches())
                .extracting(org.rollout.trainer.HeldBatch::batchId, org.rollout.trainer.HeldBatch::holder)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(deadBatch, "dead-trainer"),
                        org.assertj.core.groups.Tuple.tuple(aliveBatch, "alive-trainer"));

        // The live trainer renews every 300 ms; the dead one never does. A second trainer pulls.
        TestProbe<Collector.LeaseRenewed> renewed = kit.createTestProbe();
        TestProbe<Collector.PullReply> second = kit.createTestProbe();
        c.tell(new Collector.PullBatch(Duration.ofSeconds(10), 0, "second-trainer", 1_000, second.getRef()));
        long start = System.nanoTime();
        Collector.BatchReply redelivered = null;
        while (redelivered == null) {
            c.tell(new Collector.RenewLease("alive-trainer", 3_000, renewed.getRef()));
            assertThat(renewed.receiveMessage(Duration.ofSeconds(5)).batchIds()).containsExactly(aliveBatch);
            redelivered = tryReceive(second, Duration.ofMillis(300));
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
        }
        assertThat(redelivered.batch())
                .as("the dead trainer's batch, not a new one")
                .isNotNull();
        assertThat(redelivered.batch().batchId()).isEqualTo(deadBatch);
        // Three more renewal rounds: the renewed batch stays with its trainer.
        for (int i = 0; i < 4; i++) {
            c.tell(new Collector.RenewLease("alive-trainer", 3_000, renewed.getRef()));
            assertThat(renewed.receiveMessage(Duration.ofSeconds(5)).batchIds()).containsExactly(aliveBatch);
            second.expectNoMessage(Duration.ofMillis(300));
        }
        // The second trainer never renewed either: its batch went back too, and the status says why.
        c.tell(new Collector.GetStatus(status.getRef()));
        Collector.Status after = status.receiveMessage();
        assertThat(after.heldBatches())
                .extracting(org.rollout.trainer.HeldBatch::holder)
                .containsExactly(
                        "alive-trainer", "nobody: waiting for the next pull (the lease of second-trainer lapsed)");
        assertThat(after.unacknowledgedBatches()).isEqualTo(2);
    }

    private static Collector.BatchReply tryReceive(TestProbe<Collector.PullReply> probe, Duration within) {
        try {
            return (Collector.BatchReply) probe.receiveMessage(within);
        } catch (AssertionError none) {
            return null;
        }
    }
}
