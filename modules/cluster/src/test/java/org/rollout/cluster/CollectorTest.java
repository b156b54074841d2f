package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.pubsub.Topic;
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
        ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic =
                kit.spawn(Topic.create(WeightVersion.VersionChanged.class, name + "-topic"), name + "-topic");
        ActorRef<Collector.Command> c =
                kit.spawn(Collector.create(1, Duration.ofMinutes(5), Long.MAX_VALUE, new StatsBook(null), topic), name);
        c.tell(new Collector.Attach(coordinator.getRef(), 0, 0, java.util.List.of(), java.util.List.of()));
        return c;
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
        TestProbe<RolloutCoordinator.Command> coordinator = kit.createTestProbe();
        ActorRef<Collector.Command> c = collector("pull", coordinator);
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
    void aPredecessorsBatchAcknowledgedBeforeTheCoordinatorAttachedIsRetiredOnceItDoes() {
        // A successor collector: the trainer's acknowledgement (with task ids, of a batch the lost
        // collector handed out) arrives before the recovering coordinator attaches.
        ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic =
                kit.spawn(Topic.create(WeightVersion.VersionChanged.class, "early-ack-topic"), "early-ack-topic");
        ActorRef<Collector.Command> c = kit.spawn(
                Collector.create(1, Duration.ofMinutes(5), Long.MAX_VALUE, new StatsBook(null), topic, null, true),
                "early-ack");
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
        TestProbe<RolloutCoordinator.Command> coordinator = kit.createTestProbe();
        ActorRef<Collector.Command> c = collector("release", coordinator);
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
}
