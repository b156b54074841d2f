package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import org.apache.pekko.actor.ActorIdentity;
import org.apache.pekko.actor.Identify;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.FishingOutcomes;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.rollout.testengine.ScriptedEngine;

/** The runner's protocol, message by message, with probes for the collector and the coordinator. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GroupRunnerProtocolTest {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private final ActorTestKit kit = ActorTestKit.create("runner-protocol-test", TestRollout.PEKKO);
    private int runners;

    @AfterAll
    void shutdown() {
        kit.shutdownTestKit();
    }

    private record Node(TestRollout t, ActorRef<GroupRunner.Command> runner, TestProbe<Collector.Command> collector) {}

    private Node node() {
        TestRollout t = new TestRollout();
        String name = "runner-" + runners++;
        ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic =
                kit.spawn(Topic.create(WeightVersion.VersionChanged.class, name + "-topic"), name + "-topic");
        ActorRef<GroupRunner.Command> runner = kit.spawn(
                GroupRunner.create(
                        t.spec().services(),
                        name,
                        4,
                        topic,
                        Duration.ofSeconds(60),
                        new java.util.concurrent.atomic.LongAdder(),
                        Supervision.Wrapper.IDENTITY),
                name);
        return new Node(t, runner, kit.createTestProbe());
    }

    private static GroupRunner.RunGroup run(Node n, long taskId, String prompt) {
        return new GroupRunner.RunGroup(
                taskId, 0, Map.of("prompt", prompt), false, 0, n.collector().getRef(), 0, 1);
    }

    /** A prompt whose generations block until they are interrupted ({@link ScriptedEngine#BLOCK}). */
    private static final String BLOCKING = "\u0007 blocks";

    private static List<GroupRunner.Held> holdingsVia(Node n, TestProbe<GroupRunner.Holdings> reply) {
        n.runner().tell(new GroupRunner.GetHoldings(n.collector().getRef(), 0, 1, reply.getRef()));
        return reply.receiveMessage(WAIT).held();
    }

    @Test
    void aFinishedGroupIsDeliveredOnceAndHeldAsFinishedAndAccepted() {
        Node n = node();
        n.runner().tell(run(n, 1, "p1"));
        Collector.GroupFinished g = n.collector().expectMessageClass(Collector.GroupFinished.class, WAIT);
        assertThat(g.taskId()).isEqualTo(1);
        assertThat(g.outcome()).isInstanceOf(Collector.Accepted.class);
        assertThat(holdingsVia(n, kit.createTestProbe())).containsExactly(new GroupRunner.Held(1, 0, true, true));
        n.collector().expectNoMessage(Duration.ofMillis(200));
    }

    @Test
    void aRunningGroupIsHeldAsNotFinished() {
        Node n = node();
        n.runner().tell(run(n, 2, BLOCKING));
        TestRollout.await("the slots to block", WAIT, () -> n.t().engine.blocking() == 4);
        assertThat(holdingsVia(n, kit.createTestProbe())).containsExactly(new GroupRunner.Held(2, 0, false, false));
    }

    @Test
    void resendDeliversAHeldOutcomeAgainToTheNamedCollector() {
        Node n = node();
        n.runner().tell(run(n, 3, "p3"));
        n.collector().expectMessageClass(Collector.GroupFinished.class, WAIT);
        TestProbe<Collector.Command> other = kit.createTestProbe();
        n.runner().tell(new GroupRunner.Resend(List.of(3L, 99L), other.getRef(), 0, 1));
        Collector.GroupFinished again = other.expectMessageClass(Collector.GroupFinished.class, WAIT);
        assertThat(again.taskId()).isEqualTo(3);
        other.expectNoMessage(Duration.ofMillis(200));
    }

    @Test
    void withTrainerRanksEachTasksOutcomeGoesToItsRanksCollectorAndEachRankHearsOfItsOwnTasksOnly() {
        Node n = node();
        TestProbe<Collector.Command> rank1 = kit.createTestProbe();
        n.runner()
                .tell(new GroupRunner.RunGroup(
                        4, 0, Map.of("prompt", "p4"), false, 0, n.collector().getRef(), 0, 2));
        n.runner().tell(new GroupRunner.RunGroup(5, 0, Map.of("prompt", "p5"), false, 0, rank1.getRef(), 1, 2));
        assertThat(n.collector()
                        .expectMessageClass(Collector.GroupFinished.class, WAIT)
                        .taskId())
                .isEqualTo(4);
        assertThat(rank1.expectMessageClass(Collector.GroupFinished.class, WAIT).taskId())
                .isEqualTo(5);

        TestProbe<GroupRunner.Holdings> reply = kit.createTestProbe();
        n.runner().tell(new GroupRunner.GetHoldings(rank1.getRef(), 1, 2, reply.getRef()));
        assertThat(reply.receiveMessage(WAIT).held()).containsExactly(new GroupRunner.Held(5, 0, true, true));
        n.runner().tell(new GroupRunner.GetHoldings(n.collector().getRef(), 0, 2, reply.getRef()));
        assertThat(reply.receiveMessage(WAIT).held()).containsExactly(new GroupRunner.Held(4, 0, true, true));

        // Rank 1's collector was replaced: the next of its tasks goes to the new one, rank 0's stays.
        TestProbe<Collector.Command> newRank1 = kit.createTestProbe();
        n.runner().tell(new GroupRunner.Resend(List.of(5L), newRank1.getRef(), 1, 2));
        assertThat(newRank1.expectMessageClass(Collector.GroupFinished.class, WAIT)
                        .taskId())
                .isEqualTo(5);
        n.runner().tell(new GroupRunner.RunGroup(7, 0, Map.of("prompt", "p7"), false, 0, newRank1.getRef(), 1, 2));
        assertThat(newRank1.expectMessageClass(Collector.GroupFinished.class, WAIT)
                        .taskId())
                .isEqualTo(7);
        rank1.expectNoMessage(Duration.ofMillis(200));
        n.collector().expectNoMessage(Duration.ofMillis(100));
    }

    @Test
    void forgetDropsTheHeldOutcomeSoThatResendSendsNothing() {
        Node n = node();
        n.runner().tell(run(n, 4, "p4"));
        n.collector().expectMessageClass(Collector.GroupFinished.class, WAIT);
        n.runner().tell(new GroupRunner.Forget(List.of(4L)));
        assertThat(holdingsVia(n, kit.createTestProbe())).isEmpty();
        n.runner().tell(new GroupRunner.Resend(List.of(4L), n.collector().getRef(), 0, 1));
        n.collector().expectNoMessage(Duration.ofMillis(300));
    }

    @Test
    void cancelGroupStopsItsSlotsAbortingTheirGenerationsAndReportsItRejectedWithoutKeepingIt() {
        Node n = node();
        n.runner().tell(run(n, 5, BLOCKING));
        TestRollout.await("the slots to block", WAIT, () -> n.t().engine.blocking() == 4);
        n.runner().tell(new GroupRunner.CancelGroup(5, 0, RejectReason.CANCELLED, "another attempt won"));
        Collector.GroupFinished g = n.collector().expectMessageClass(Collector.GroupFinished.class, WAIT);
        assertThat(g.outcome()).isEqualTo(new Collector.Rejected(RejectReason.CANCELLED, "another attempt won"));
        TestRollout.await("every slot interrupted", WAIT, () -> n.t().engine.interrupted() == 4);
        assertThat(holdingsVia(n, kit.createTestProbe())).isEmpty();
        n.collector().expectNoMessage(Duration.ofMillis(200));
    }

    /** Whether {@code runner} is listed with the Receptionist now. */
    private boolean listed(ActorRef<GroupRunner.Command> runner) {
        TestProbe<Receptionist.Listing> listing = kit.createTestProbe();
        kit.system().receptionist().tell(Receptionist.find(GroupRunner.SERVICE_KEY, listing.getRef()));
        return listing.receiveMessage(WAIT)
                .getServiceInstances(GroupRunner.SERVICE_KEY)
                .contains(runner);
    }

    @Test
    void drainLeavesTheReceptionistAndRepliesToEveryDrainOnceTheGroupsInFlightHaveEnded() {
        Node n = node();
        TestProbe<Receptionist.Listing> listings = kit.createTestProbe();
        kit.system().receptionist().tell(Receptionist.subscribe(GroupRunner.SERVICE_KEY, listings.getRef()));
        listings.fishForMessage(
                WAIT,
                l -> l.getServiceInstances(GroupRunner.SERVICE_KEY).contains(n.runner())
                        ? FishingOutcomes.complete()
                        : FishingOutcomes.continueAndIgnore());
        n.runner().tell(run(n, 8, BLOCKING));
        TestRollout.await("the slots to block", WAIT, () -> n.t().engine.blocking() == 4);

        TestProbe<GroupRunner.Drained> drained = kit.createTestProbe();
        TestProbe<GroupRunner.Drained> again = kit.createTestProbe();
        n.runner().tell(new GroupRunner.Drain(drained.getRef()));
        // No longer listed: the coordinator dispatches no more groups here.
        listings.fishForMessage(
                WAIT,
                l -> l.getServiceInstances(GroupRunner.SERVICE_KEY).contains(n.runner())
                        ? FishingOutcomes.continueAndIgnore()
                        : FishingOutcomes.complete());
        n.runner().tell(new GroupRunner.Drain(again.getRef()));
        // Not drained while the group runs; a draining runner still answers.
        drained.expectNoMessage(Duration.ofMillis(300));
        again.expectNoMessage(Duration.ofMillis(1));
        TestProbe<GroupRunner.Info> info = kit.createTestProbe();
        n.runner().tell(new GroupRunner.GetInfo(info.getRef()));
        assertThat(info.receiveMessage(WAIT).running()).isEqualTo(1);
        n.runner().tell(new GroupRunner.CancelGroup(8, 0, RejectReason.CANCELLED, "dispatched again elsewhere"));
        n.collector().expectMessageClass(Collector.GroupFinished.class, WAIT);
        assertThat(drained.receiveMessage(WAIT).node()).startsWith("runner-");
        assertThat(again.receiveMessage(WAIT).node()).startsWith("runner-");
        drained.expectNoMessage(Duration.ofMillis(200));
        again.expectNoMessage(Duration.ofMillis(1));
        // A drain of an idle draining runner answers at once.
        n.runner().tell(new GroupRunner.Drain(drained.getRef()));
        drained.receiveMessage(WAIT);
        assertThat(listed(n.runner())).isFalse();
    }

    @Test
    void drainWithNothingInFlightRepliesAtOnceAndAGroupDispatchedMeanwhileStillRunsAndIsReported() {
        Node n = node();
        TestRollout.await("the runner listed", WAIT, () -> listed(n.runner()));
        TestProbe<GroupRunner.Drained> drained = kit.createTestProbe();
        n.runner().tell(new GroupRunner.Drain(drained.getRef()));
        assertThat(drained.receiveMessage(WAIT).node()).startsWith("runner-");
        assertThat(listed(n.runner())).isFalse();

        // Sent before the coordinator learnt that the runner left: run, reported and held.
        n.runner().tell(run(n, 12, "p12"));
        Collector.GroupFinished g = n.collector().expectMessageClass(Collector.GroupFinished.class, WAIT);
        assertThat(g.taskId()).isEqualTo(12);
        assertThat(g.outcome()).isInstanceOf(Collector.Accepted.class);
        assertThat(holdingsVia(n, kit.createTestProbe())).containsExactly(new GroupRunner.Held(12, 0, true, true));
        n.runner().tell(new GroupRunner.Drain(drained.getRef()));
        drained.receiveMessage(WAIT);
        assertThat(listed(n.runner())).as("still draining").isFalse();
    }

    @Test
    void aRunnerRestartedWhileDrainingStaysDrainingOffTheReceptionistWithItsGroupAndItsWaiter() {
        TestRollout t = new TestRollout();
        SupervisionTest.ThrowOnce fault = new SupervisionTest.ThrowOnce("runner", GroupRunner.GetInfo.class, 1);
        ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic =
                kit.spawn(Topic.create(WeightVersion.VersionChanged.class, "restarted-topic"), "restarted-topic");
        ActorRef<GroupRunner.Command> runner = kit.spawn(
                GroupRunner.create(
                        t.spec().services(), "restarted", 4, topic, Duration.ofSeconds(60), new LongAdder(), fault),
                "restarted");
        Node n = new Node(t, runner, kit.createTestProbe());
        TestRollout.await("the runner listed", WAIT, () -> listed(runner));
        runner.tell(run(n, 13, BLOCKING));
        TestRollout.await("the slots to block", WAIT, () -> t.engine.blocking() == 4);
        TestProbe<GroupRunner.Drained> drained = kit.createTestProbe();
        runner.tell(new GroupRunner.Drain(drained.getRef()));
        TestRollout.await("the runner off the Receptionist", WAIT, () -> !listed(runner));

        // The runner throws on this GetInfo and is restarted.
        TestProbe<GroupRunner.Info> info = kit.createTestProbe();
        runner.tell(new GroupRunner.GetInfo(info.getRef()));
        info.expectNoMessage(Duration.ofMillis(300));
        assertThat(fault.fired()).isTrue();
        runner.tell(new GroupRunner.GetInfo(info.getRef()));
        assertThat(info.receiveMessage(WAIT).running())
                .as("its group carries on")
                .isEqualTo(1);
        assertThat(listed(runner))
                .as("a restarted draining runner does not register again")
                .isFalse();

        drained.expectNoMessage(Duration.ofMillis(200));
        runner.tell(new GroupRunner.CancelGroup(13, 0, RejectReason.CANCELLED, "dispatched again elsewhere"));
        n.collector().expectMessageClass(Collector.GroupFinished.class, WAIT);
        assertThat(drained.receiveMessage(WAIT).node()).isEqualTo("restarted");
        runner.tell(new GroupRunner.Drain(drained.getRef()));
        drained.receiveMessage(WAIT);
        assertThat(listed(runner)).isFalse();
    }

    @Test
    void cancellingAGroupThatAlreadyEndedChangesNothing() {
        Node n = node();
        n.runner().tell(run(n, 6, "p6"));
        n.collector().expectMessageClass(Collector.GroupFinished.class, WAIT);
        n.runner().tell(new GroupRunner.CancelGroup(6, 0, RejectReason.CANCELLED, "late"));
        n.collector().expectNoMessage(Duration.ofMillis(300));
        assertThat(holdingsVia(n, kit.createTestProbe())).containsExactly(new GroupRunner.Held(6, 0, true, true));
    }

    @Test
    void aGroupPastItsEpisodeTimeoutIsRejectedAsTimeoutAndHeld() {
        TestRollout t = new TestRollout();
        t.episodeTimeout = Duration.ofMillis(300);
        ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic =
                kit.spawn(Topic.create(WeightVersion.VersionChanged.class, "timeout-topic"), "timeout-topic");
        ActorRef<GroupRunner.Command> runner = kit.spawn(
                GroupRunner.create(
                        t.spec().services(),
                        "timeout",
                        4,
                        topic,
                        Duration.ofSeconds(60),
                        new java.util.concurrent.atomic.LongAdder(),
                        Supervision.Wrapper.IDENTITY),
                "timeout");
        Node n = new Node(t, runner, kit.createTestProbe());
        runner.tell(run(n, 7, BLOCKING));
        Collector.GroupFinished g = n.collector().expectMessageClass(Collector.GroupFinished.class, WAIT);
        assertThat(((Collector.Rejected) g.outcome()).reason()).isEqualTo(RejectReason.TIMEOUT);
        TestRollout.await("every slot interrupted", WAIT, () -> t.engine.interrupted() == 4);
        assertThat(holdingsVia(n, kit.createTestProbe())).containsExactly(new GroupRunner.Held(7, 0, true, false));
    }

    @Test
    void groupActorsAreReusedAndALateCancelNeverReachesTheNextGroupOnThem() {
        Node n = node();
        n.runner().tell(run(n, 8, BLOCKING));
        TestRollout.await("the slots to block", WAIT, () -> n.t().engine.blocking() == 4);
        n.runner().tell(new GroupRunner.CancelGroup(8, 0, RejectReason.CANCELLED, "another attempt won"));
        assertThat(n.collector()
                        .expectMessageClass(Collector.GroupFinished.class, WAIT)
                        .outcome())
                .isInstanceOf(Collector.Rejected.class);
        TestRollout.await("every slot interrupted", WAIT, () -> n.t().engine.interrupted() == 4);
        // One group at a time: each runs on the same group actor as the cancelled one, and is
        // neither interrupted nor delivered twice; a group's slots are its own, not actors.
        for (long task = 9; task < 29; task++) {
            n.runner().tell(run(n, task, "p" + task));
            Collector.GroupFinished g = n.collector().expectMessageClass(Collector.GroupFinished.class, WAIT);
            assertThat(g.taskId()).isEqualTo(task);
            assertThat(g.outcome()).isInstanceOf(Collector.Accepted.class);
        }
        n.collector().expectNoMessage(Duration.ofMillis(200));
        assertThat(n.t().engine.interrupted()).isEqualTo(4);
        assertThat(children(n, "group-*")).isEqualTo(1);
        assertThat(children(n, "slot-*")).isZero();
    }

    /** How many children of {@code n}'s runner match {@code pattern} (an actor selection). */
    private int children(Node n, String pattern) {
        TestProbe<Object> probe = kit.createTestProbe();
        kit.system()
                .classicSystem()
                .actorSelection(n.runner().path().child(pattern))
                .tell(new Identify(pattern), Adapter.toClassic(probe.getRef()));
        // A selection answers once per match; no reply within a quiet second means all came.
        int found = 0;
        while (true) {
            Object reply;
            try {
                reply = probe.receiveMessage(Duration.ofSeconds(1));
            } catch (AssertionError quiet) {
                return found;
            }
            if (reply instanceof ActorIdentity id && id.getActorRef().isPresent()) {
                found++;
            }
        }
    }
}
