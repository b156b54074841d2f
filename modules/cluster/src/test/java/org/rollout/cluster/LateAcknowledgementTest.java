package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.core.StalenessBudget;

/**
 * A coordinator and collector that take over a run (their predecessors' node was lost) while a
 * trainer holds a batch the predecessor handed out and has not acknowledged: the acknowledgement
 * reaches the successor only after the re-runs of the batch's lost tasks have ended.
 *
 * <p>The run before the loss: version 1, η = 1, {@code consumer_batch_size} 4, 8 groups accepted,
 * tasks 4–7 accepted and handed out to the trainer in one batch (batch 3; the ledger marks them
 * possibly delivered). The only surviving runner holds task 4's outcome; those of 5–7 died with
 * the node.
 */
class LateAcknowledgementTest {
    private static final int BATCH = 4;
    private final ActorTestKit kit = ActorTestKit.create("late-ack", TestRollout.PEKKO);

    @AfterEach
    void shutdown() {
        kit.shutdownTestKit();
    }

    private record Successor(
            ActorRef<RolloutCoordinator.Command> coordinator,
            ActorRef<Collector.Command> collector,
            TestProbe<GroupRunner.Command> runner,
            DurableState state) {}

    /** The ledger as the predecessor left it, and a successor over it; the runner holds task 4's outcome. */
    private Successor takeOver(Duration ackTimeout) throws Exception {
        return takeOver(ackTimeout, List.of(4L));
    }

    /**
     * The ledger as the predecessor left it, and a successor coordinator and collector over it; the
     * surviving runner holds the accepted outcomes of {@code heldByRunner}.
     */
    private Successor takeOver(Duration ackTimeout, List<Long> heldByRunner) throws Exception {
        return takeOver(ackTimeout, heldByRunner, true);
    }

    /** @param handedOut whether the predecessor handed 4–7 out (its ledger marks them) */
    private Successor takeOver(Duration ackTimeout, List<Long> heldByRunner, boolean handedOut) throws Exception {
        DurableState state = DurableState.inMemory();
        List<DurableState.OpenTask> open = new ArrayList<>();
        for (long t = 4; t <= 7; t++) {
            open.add(new DurableState.OpenTask(t, 0, false, t, 1, true, handedOut));
        }
        state.writeLedger(open, List.of(), new DurableState.Cursor(8, 8, 8, 0))
                .toCompletableFuture()
                .get();
        state.writeVersion(new DurableState.VersionRecord(1, "w1"))
                .toCompletableFuture()
                .get();

        TestProbe<GroupRunner.Command> runner = kit.createTestProbe("runner");
        kit.system().receptionist().tell(Receptionist.register(GroupRunner.SERVICE_KEY, runner.getRef()));
        ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic =
                kit.spawn(Topic.create(WeightVersion.VersionChanged.class, "versions"), "versions");
        ActorRef<Collector.Command> collector =
                kit.spawn(TestCollectors.behavior(BATCH, ackTimeout, topic, null, true, RankShare.ALONE), "collector");
        StalenessBudget budget = new StalenessBudget(BATCH, BATCH, 1);
        // Eight prompts, all taken before the loss: nothing new is admitted.
        PromptSource prompts = index -> index < 8 ? Optional.of(Map.of("prompt", "p" + index)) : Optional.empty();
        ActorRef<RolloutCoordinator.Command> coordinator = kit.spawn(
                RolloutCoordinator.create(
                        budget,
                        prompts,
                        List.of(),
                        0,
                        1,
                        64,
                        collector,
                        state,
                        Duration.ofSeconds(10),
                        RankShare.ALONE),
                "coordinator");

        // The runner says what it is and what it holds (accepted outcomes), asked in either order.
        boolean told = false;
        boolean held = false;
        while (!told || !held) {
            GroupRunner.Command c = runner.receiveMessage(Duration.ofSeconds(10));
            if (c instanceof GroupRunner.GetInfo info) {
                info.replyTo().tell(new GroupRunner.Info(runner.getRef(), "node-2", BATCH, 0));
                told = true;
            } else if (c instanceof GroupRunner.GetHoldings get) {
                get.replyTo()
                        .tell(new GroupRunner.Holdings(
                                runner.getRef(),
                                "node-2",
                                heldByRunner.stream()
                                        .map(t -> new GroupRunner.Held(t, 0, true, true))
                                        .toList()));
                held = true;
            }
        }
        return new Successor(coordinator, collector, runner, state);
    }

    /** Task 4 is re-sent to the new collector; 5–7 run again (attempt 1), and their re-runs fail. */
    private void rerunsFail(Successor s) {
        List<Long> rerun = new ArrayList<>();
        boolean resent = false;
        while (!resent || rerun.size() < 3) {
            GroupRunner.Command c = s.runner().receiveMessage(Duration.ofSeconds(10));
            if (c instanceof GroupRunner.Resend r) {
                assertThat(r.taskIds()).containsExactly(4L);
                resent = true;
                r.collector().tell(accepted(4, 0));
            } else if (c instanceof GroupRunner.RunGroup g) {
                assertThat(g.attempt()).isEqualTo(1);
                rerun.add(g.taskId());
                g.collector()
                        .tell(new Collector.GroupFinished(
                                g.taskId(),
                                1,
                                false,
                                1,
                                1,
                                new Collector.Rejected(RejectReason.FAILED, "the model servers are failing"),
                                Map.of(),
                                ScalarStats.Totals.EMPTY,
                                0));
            }
        }
        assertThat(rerun).containsExactlyInAnyOrder(5L, 6L, 7L);
    }

    /** The runner delivers again what it holds (4–7, accepted) to the new collector; nothing runs again. */
    private void outcomesResent(Successor s) {
        GroupRunner.Resend resend = null;
        while (resend == null) {
            GroupRunner.Command c = s.runner().receiveMessage(Duration.ofSeconds(10));
            assertThat(c).as("nothing is run again").isNotInstanceOf(GroupRunner.RunGroup.class);
            if (c instanceof GroupRunner.Resend r) {
                resend = r;
            }
        }
        assertThat(resend.taskIds()).containsExactlyInAnyOrder(4L, 5L, 6L, 7L);
        for (long t : resend.taskIds()) {
            resend.collector().tell(accepted(t, 0));
        }
        TestRollout.await("the re-sent outcomes reached the collector", Duration.ofSeconds(10), () -> {
            Collector.Status c = collectorStatus(s);
            return c.heldOutcomes() + c.bufferedGroups() + c.unacknowledgedBatches() == 4;
        });
    }

    /** A trainer's pull, answered within {@code wait} (null when no batch came). */
    private org.rollout.api.TrainingBatch pull(Successor s, Duration wait) {
        TestProbe<Collector.PullReply> trainer = kit.createTestProbe();
        s.collector().tell(new Collector.PullBatch(wait, 1, trainer.getRef()));
        return ((Collector.BatchReply) trainer.receiveMessage(wait.plusSeconds(10))).batch();
    }

    private StalenessBudget.Snapshot budget(Successor s) {
        TestProbe<RolloutCoordinator.Status> status = kit.createTestProbe();
        s.coordinator().tell(new RolloutCoordinator.GetStatus(status.getRef()));
        return status.receiveMessage(Duration.ofSeconds(5)).budget();
    }

    private Collector.Status collectorStatus(Successor s) {
        TestProbe<Collector.Status> status = kit.createTestProbe();
        s.collector().tell(new Collector.GetStatus(status.getRef()));
        return status.receiveMessage(Duration.ofSeconds(5));
    }

    @Test
    void shouldCountTheTasksOfALateAcknowledgedBatchAsDeliveredWhenTheirRerunsFailedBeforeIt() throws Exception {
        Successor s = takeOver(Duration.ofMinutes(5));
        rerunsFail(s);
        // Before the acknowledgement: the three rejections are held, and so are the tasks.
        TestRollout.await("the re-runs' outcomes reached the collector", Duration.ofSeconds(10), () -> {
            StalenessBudget.Snapshot b = budget(s);
            return b.held() == 3 && b.running() == 0 && b.accepted() == 5;
        });

        TestProbe<Collector.AckReply> trainer = kit.createTestProbe();
        s.collector().tell(new Collector.Ack(3, List.of(4L, 5L, 6L, 7L), trainer.getRef()));
        assertThat(trainer.receiveMessage(Duration.ofSeconds(10)).batchId()).isEqualTo(3);

        StalenessBudget.Snapshot b = budget(s);
        assertThat(b.accepted()).isEqualTo(8);
        assertThat(b.running()).isZero();
        assertThat(b.rejected()).isZero();
        // (η + v + 1)·B − accepted − running, as before the loss: (1 + 1 + 1)·4 − 8 = 4.
        assertThat(b.capacity()).isEqualTo(4);
        Collector.Status c = collectorStatus(s);
        assertThat(c.rejectedByReason()).isEmpty();
        assertThat(c.bufferedGroups())
                .as("task 4, delivered already, is not handed out again")
                .isZero();
        DurableState.Ledger ledger =
                s.state().readLedger().toCompletableFuture().get();
        assertThat(ledger.open()).isEmpty();
        assertThat(ledger.cursor().accepted()).isEqualTo(8);
    }

    /**
     * The order the soak met (seed 20261203): the trainer's acknowledgement of batch 3 (tasks 4–7,
     * handed out by the predecessor) is in flight across the take-over, the runner re-sends the
     * four outcomes to the new collector, and the trainer pulls before the late acknowledgement
     * arrives. The re-sent outcomes must not be handed out in a new batch: that batch would deliver
     * 4–7 twice.
     */
    @Test
    void shouldNotHandOutReSentOutcomesOfAPredecessorsBatchBeforeItsLateAcknowledgement() throws Exception {
        Successor s = takeOver(Duration.ofMinutes(5), List.of(4L, 5L, 6L, 7L));
        outcomesResent(s);

        org.rollout.api.TrainingBatch early = pull(s, Duration.ofSeconds(1));
        assertThat(early)
                .as("a batch pulled before the late acknowledgement of batch 3 holds none of its tasks")
                .isNull();
        assertThat(collectorStatus(s).heldOutcomes()).isEqualTo(4);

        TestProbe<Collector.AckReply> trainer = kit.createTestProbe();
        s.collector().tell(new Collector.Ack(3, List.of(4L, 5L, 6L, 7L), trainer.getRef()));
        assertThat(trainer.receiveMessage(Duration.ofSeconds(10)).known()).isTrue();

        assertThat(pull(s, Duration.ofSeconds(1)))
                .as("the acknowledged tasks never come again")
                .isNull();
        Collector.Status c = collectorStatus(s);
        assertThat(c.heldOutcomes()).isZero();
        assertThat(c.bufferedGroups()).isZero();
        assertThat(c.rejectedByReason()).isEmpty();
        StalenessBudget.Snapshot b = budget(s);
        assertThat(b.accepted()).isEqualTo(8);
        assertThat(b.running()).isZero();
        assertThat(b.held()).isZero();
        assertThat(b.capacity()).isEqualTo(4);
        assertThat(s.state().readLedger().toCompletableFuture().get().open()).isEmpty();
    }

    /**
     * Accepted by the predecessor but never handed out (no mark in its ledger): no trainer can hold
     * them, so the re-sent outcomes go to the next pull at once.
     */
    @Test
    void shouldHandOutReSentOutcomesAtOnceWhenThePredecessorNeverHandedThemOut() throws Exception {
        Successor s = takeOver(Duration.ofMinutes(5), List.of(4L, 5L, 6L, 7L), false);
        outcomesResent(s);
        org.rollout.api.TrainingBatch batch = pull(s, Duration.ofSeconds(10));
        assertThat(batch).as("not held for batch_ack_timeout (5 minutes)").isNotNull();
        assertThat(batch.groups().stream().map(org.rollout.api.TrainingGroup::taskId))
                .containsExactlyInAnyOrder(4L, 5L, 6L, 7L);
        assertThat(collectorStatus(s).heldOutcomes()).isZero();
        // Handing them out marked them in the ledger first: a next successor would hold them.
        DurableState.Ledger ledger =
                s.state().readLedger().toCompletableFuture().get();
        for (long t = 4; t <= 7; t++) {
            assertThat(ledger.open().get(t).possiblyDelivered())
                    .as("task %d", t)
                    .isTrue();
        }
    }

    /** As above, but no acknowledgement comes: the held outcomes are handed out once the hold has passed. */
    @Test
    void shouldHandOutReSentOutcomesOnceNoAcknowledgementCameWithinTheAckTimeout() throws Exception {
        Successor s = takeOver(Duration.ofSeconds(1), List.of(4L, 5L, 6L, 7L));
        outcomesResent(s);
        org.rollout.api.TrainingBatch batch = pull(s, Duration.ofSeconds(10));
        assertThat(batch).as("delivered after batch_ack_timeout").isNotNull();
        assertThat(batch.groups().stream().map(org.rollout.api.TrainingGroup::taskId))
                .containsExactlyInAnyOrder(4L, 5L, 6L, 7L);
        StalenessBudget.Snapshot b = budget(s);
        assertThat(b.accepted()).isEqualTo(8);
        assertThat(b.held()).isZero();
    }

    /**
     * Row E: tasks 5–7 died with the node and their re-runs are accepted before the late
     * acknowledgement. The re-runs' groups are held, not handed out; meanwhile they no longer take
     * a concurrency place but keep their place in the staleness bound.
     */
    @Test
    void shouldHoldAcceptedRerunsOfAPredecessorsBatchOutOfTheConcurrencyCapButInsideTheStalenessBound()
            throws Exception {
        Successor s = takeOver(Duration.ofMinutes(5));
        List<Long> rerun = new ArrayList<>();
        while (rerun.size() < 3) {
            GroupRunner.Command c = s.runner().receiveMessage(Duration.ofSeconds(10));
            if (c instanceof GroupRunner.Resend r) {
                r.collector().tell(accepted(4, 0));
            } else if (c instanceof GroupRunner.RunGroup g) {
                rerun.add(g.taskId());
                g.collector().tell(accepted(g.taskId(), 1));
            }
        }
        TestRollout.await(
                "the re-runs' outcomes are held",
                Duration.ofSeconds(10),
                () -> budget(s).held() == 3);
        StalenessBudget.Snapshot before = budget(s);
        assertThat(before.running()).isZero();
        assertThat(before.accepted()).isEqualTo(5);
        // (η + v + 1)·B − (accepted + running + held) = 12 − 8; C − running = 4.
        assertThat(before.capacity()).isEqualTo(4);
        assertThat(pull(s, Duration.ofSeconds(1))).isNull();

        TestProbe<Collector.AckReply> trainer = kit.createTestProbe();
        s.collector().tell(new Collector.Ack(3, List.of(4L, 5L, 6L, 7L), trainer.getRef()));
        assertThat(trainer.receiveMessage(Duration.ofSeconds(10)).known()).isTrue();
        StalenessBudget.Snapshot after = budget(s);
        assertThat(after.accepted()).isEqualTo(8);
        assertThat(after.held()).isZero();
        assertThat(after.running()).isZero();
        assertThat(after.capacity()).isEqualTo(4);
        assertThat(pull(s, Duration.ofSeconds(1))).isNull();
        assertThat(collectorStatus(s).heldOutcomes()).isZero();
    }

    @Test
    void shouldTakeTheHeldRejectionsWhenNoAcknowledgementComesWithinTheAckTimeout() throws Exception {
        Successor s = takeOver(Duration.ofSeconds(1));
        rerunsFail(s);
        TestRollout.await("the held rejections were taken", Duration.ofSeconds(10), () -> {
            StalenessBudget.Snapshot b = budget(s);
            return b.running() == 0 && b.held() == 0 && b.rejected() == 3;
        });
        StalenessBudget.Snapshot b = budget(s);
        assertThat(b.accepted()).isEqualTo(5);
        assertThat(collectorStatus(s).rejectedByReason()).containsEntry("failed", 3L);
        // The runner is told to forget the rejected outcomes it holds.
        List<Long> forgotten = new ArrayList<>();
        TestRollout.await("the runner is told to forget 5-7", Duration.ofSeconds(10), () -> {
            GroupRunner.Command c = s.runner().receiveMessage(Duration.ofSeconds(5));
            if (c instanceof GroupRunner.Forget f) {
                forgotten.addAll(f.taskIds());
            }
            return forgotten.containsAll(List.of(5L, 6L, 7L));
        });
    }

    @Test
    void shouldWriteTheMarkOfAPossiblyDeliveredTaskWithItsRerunSoThatALaterSuccessorKnowsIt() throws Exception {
        Successor s = takeOver(Duration.ofMinutes(5));
        List<Long> rerun = new ArrayList<>();
        while (rerun.size() < 3) {
            if (s.runner().receiveMessage(Duration.ofSeconds(10)) instanceof GroupRunner.RunGroup g) {
                rerun.add(g.taskId());
            }
        }
        DurableState.Ledger ledger =
                s.state().readLedger().toCompletableFuture().get();
        for (long t = 5; t <= 7; t++) {
            DurableState.OpenTask open = ledger.open().get(t);
            assertThat(open.attempt()).isEqualTo(1);
            assertThat(open.accepted()).isFalse();
            assertThat(open.possiblyDelivered()).as("task %d", t).isTrue();
        }
        assertThat(ledger.open().get(4L).possiblyDelivered())
                .as("the predecessor's mark stays until the task ends")
                .isTrue();
    }

    @Test
    void shouldTakeAWeightUpdateThatEndsWhileItStillRecoversWithoutGoingBackToTheLedgersVersion() throws Exception {
        // The runner answers only after a weight update to version 2 ended: the successor must
        // not restore the budget to the ledger's version 1 over it (it used to fail and stop).
        DurableState state = DurableState.inMemory();
        state.writeLedger(
                        List.of(new DurableState.OpenTask(4, 0, false, 4, 1, false, false)),
                        List.of(),
                        new DurableState.Cursor(5, 5, 4, 0))
                .toCompletableFuture()
                .get();
        state.writeVersion(new DurableState.VersionRecord(1, "w1"))
                .toCompletableFuture()
                .get();
        TestProbe<GroupRunner.Command> runner = kit.createTestProbe("runner");
        kit.system().receptionist().tell(Receptionist.register(GroupRunner.SERVICE_KEY, runner.getRef()));
        TestProbe<Collector.Command> collector = kit.createTestProbe("collector");
        PromptSource prompts = index -> index < 5 ? Optional.of(Map.of("prompt", "p" + index)) : Optional.empty();
        ActorRef<RolloutCoordinator.Command> coordinator = kit.spawn(RolloutCoordinator.create(
                new StalenessBudget(BATCH, BATCH, 1),
                prompts,
                List.of(),
                0,
                1,
                64,
                collector.getRef(),
                state,
                Duration.ofSeconds(10),
                RankShare.ALONE));
        collector
                .expectMessageClass(Collector.Introduce.class, Duration.ofSeconds(10))
                .coordinator()
                .tell(new RolloutCoordinator.CollectorIs(collector.getRef()));
        GroupRunner.GetHoldings get = null;
        while (get == null) {
            GroupRunner.Command c = runner.receiveMessage(Duration.ofSeconds(10));
            if (c instanceof GroupRunner.GetInfo info) {
                info.replyTo().tell(new GroupRunner.Info(runner.getRef(), "node-2", BATCH, 0));
            } else if (c instanceof GroupRunner.GetHoldings h) {
                get = h;
            }
        }
        coordinator.tell(new RolloutCoordinator.PauseAdmission(9));
        coordinator.tell(new RolloutCoordinator.ResumeAdmission(9, 2));
        get.replyTo().tell(new GroupRunner.Holdings(runner.getRef(), "node-2", List.of()));

        // Task 4 died with the node: it runs again, and the coordinator is alive at version 2.
        // A loaded machine may make the coordinator ask again (a holdings query that timed out, a
        // second receptionist listing): the runner answers every question, as a real one does.
        GroupRunner.RunGroup again = null;
        while (again == null) {
            GroupRunner.Command c = runner.receiveMessage(Duration.ofSeconds(10));
            if (c instanceof GroupRunner.RunGroup g) {
                again = g;
            } else if (c instanceof GroupRunner.GetInfo info) {
                info.replyTo().tell(new GroupRunner.Info(runner.getRef(), "node-2", BATCH, 0));
            } else if (c instanceof GroupRunner.GetHoldings h) {
                h.replyTo().tell(new GroupRunner.Holdings(runner.getRef(), "node-2", List.of()));
            }
        }
        assertThat(again.taskId()).isEqualTo(4);
        TestProbe<RolloutCoordinator.Status> status = kit.createTestProbe();
        coordinator.tell(new RolloutCoordinator.GetStatus(status.getRef()));
        assertThat(status.receiveMessage(Duration.ofSeconds(5)).budget().version())
                .isEqualTo(2);
    }

    private static Collector.GroupFinished accepted(long taskId, int attempt) {
        return Payloads.oneRowAccepted(taskId, attempt, 1);
    }
}
