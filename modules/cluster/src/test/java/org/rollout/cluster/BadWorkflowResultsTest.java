package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.cluster.TestRollout.await;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.rollout.api.EpisodeResult;
import org.rollout.api.Float32Tensor;
import org.rollout.api.InferenceEngine;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Interaction;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.api.WorkflowContext;
import org.rollout.api.WorkflowContractException;
import org.rollout.core.TrajectoryFormatChecker;
import org.rollout.core.TrajectoryRows;
import org.rollout.trainer.RolloutStatus;

/**
 * Bad workflow results, end to end through a real engine in one actor system: each kind of bad
 * result rejects only its own group, with a reason that names the task (and the slot where there is
 * one) in the log, and every other group of the same run still lands in a batch, whole.
 *
 * <p>Every run has {@value #ITEMS} prompts; items {@link #BAD} are bad, the rest good. The good
 * groups are pulled in batches of two; the run then must have accepted exactly them and rejected
 * exactly the bad ones, with nothing left running.
 */
class BadWorkflowResultsTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);
    private static final int ITEMS = 6;
    private static final Set<Integer> BAD = Set.of(1, 4);
    private static final int GROUP = 4;

    /** What a bad item's slot does instead of the good episode. */
    @FunctionalInterface
    interface BadSlot {
        EpisodeResult run(InferenceEngine engine, int slot, TestRollout t) throws Exception;
    }

    /** What a run left behind: which task was which item, the groups delivered, the final status. */
    record Outcome(Map<Long, Integer> itemOfTask, List<TrainingGroup> delivered, RolloutStatus status) {
        Set<Long> tasks(boolean bad) {
            Set<Long> out = new TreeSet<>();
            itemOfTask.forEach((task, item) -> {
                if (BAD.contains(item) == bad) {
                    out.add(task);
                }
            });
            return out;
        }

        Set<Long> deliveredTasks() {
            Set<Long> out = new TreeSet<>();
            delivered.forEach(g -> out.add(g.taskId()));
            return out;
        }
    }

    private static EpisodeResult good(InferenceEngine engine, TestRollout t) throws Exception {
        ModelResponse r =
                engine.generate(ModelRequest.of(new int[] {1, 2}, t.gconfig().withNSamples(1)));
        return EpisodeResult.trajectory(TrajectoryRows.singleTurn(r, 1.0));
    }

    private static Outcome run(BadSlot bad, String rejectReason, Consumer<TestRollout> tweak) throws Exception {
        TestRollout t = new TestRollout();
        t.groupSize = GROUP;
        t.consumerBatchSize = 2;
        t.maxConcurrent = 4;
        t.eta = 100;
        t.source = new GeneratedPromptSource(i -> Map.of("prompt", "p", "i", i), ITEMS);
        Map<Long, Integer> itemOfTask = new ConcurrentHashMap<>();
        t.workflow = (engine, data) -> {
            WorkflowContext c = WorkflowContext.current();
            int item = ((Number) data.get("i")).intValue();
            itemOfTask.put(c.taskId().orElseThrow(), item);
            return BAD.contains(item) ? bad.run(engine, c.sampleIdx().orElseThrow(), t) : good(engine, t);
        };
        tweak.accept(t);
        int goodGroups = ITEMS - BAD.size();
        List<TrainingGroup> delivered = new ArrayList<>();
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            while (delivered.size() < goodGroups) {
                TrainingBatch b = client.nextBatch(DEADLINE).orElseThrow();
                delivered.addAll(b.groups());
                client.acknowledge(b);
            }
            await("the bad groups to be rejected and nothing to run", DEADLINE, () -> {
                RolloutStatus s = status(client);
                return s.rejectedByReason().getOrDefault(rejectReason, 0L) == BAD.size() && s.running() == 0;
            });
            Outcome o = new Outcome(Map.copyOf(itemOfTask), delivered, client.status());
            assertNothingElseLost(o, rejectReason);
            return o;
        }
    }

    private static void assertNothingElseLost(Outcome o, String rejectReason) {
        assertThat(o.itemOfTask()).hasSize(ITEMS);
        assertThat(o.deliveredTasks()).isEqualTo(o.tasks(false));
        assertThat(o.delivered()).allSatisfy(g -> {
            assertThat(g.rowCount()).isEqualTo(GROUP);
            assertThat(g.slotIndices()).containsExactly(0, 1, 2, 3);
            assertThat(g.rows().float32(TensorDict.REWARDS).toArray()).containsOnly(1f);
        });
        assertThat(o.status().accepted()).isEqualTo(ITEMS - BAD.size());
        assertThat(o.status().rejectedByReason()).isEqualTo(Map.of(rejectReason, (long) BAD.size()));
    }

    private static RolloutStatus status(LocalRolloutClient client) {
        try {
            return client.status();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** Asserts the log holds, for every bad task, exactly one line with the message {@code expected} makes. */
    private static void assertLoggedForEachBadTask(
            LogCapture log, Outcome o, boolean error, java.util.function.LongFunction<String> expected) {
        for (long task : o.tasks(true)) {
            String text = expected.apply(task);
            List<String> lines = error ? log.errorsContaining(text) : log.warningsContaining(text);
            assertThat(lines).as("log lines containing: " + text).hasSize(1);
        }
    }

    // ---- wrong shapes and missing keys ----

    @Test
    void aSlotWhoseTensorsDisagreeInWidthRejectsOnlyItsGroupNamingTaskSlotAndKeys() throws Exception {
        try (LogCapture log = new LogCapture()) {
            Outcome o = run(
                    (engine, slot, t) -> {
                        EpisodeResult.Trajectory r = (EpisodeResult.Trajectory) good(engine, t);
                        if (slot != 2) {
                            return r;
                        }
                        return EpisodeResult.trajectory(r.data()
                                .with(TensorDict.LOSS_MASK, Int32Tensor.of(new int[] {1, 1, 1}, 1, 3)));
                    },
                    "contract",
                    t -> {});
            assertLoggedForEachBadTask(
                    log,
                    o,
                    true,
                    task -> "task " + task + ": workflow contract broken: task " + task
                            + " slot 2: tensor 'loss_mask' is int32[1, 3] but 'input_ids' is int32[1, 7]"
                            + " (rank-2 tensors must share dim 1)");
        }
    }

    @Test
    void aSlotMissingAKeyItsSiblingsHaveRejectsOnlyItsGroupNamingTheSlots() throws Exception {
        try (LogCapture log = new LogCapture()) {
            Outcome o = run(
                    (engine, slot, t) -> {
                        EpisodeResult.Trajectory r = (EpisodeResult.Trajectory) good(engine, t);
                        return slot == 1 ? EpisodeResult.trajectory(r.data().without(TensorDict.VERSIONS)) : r;
                    },
                    "contract",
                    t -> {});
            assertLoggedForEachBadTask(
                    log,
                    o,
                    true,
                    task -> "task " + task + ": workflow contract broken: task " + task
                            + " slot 1 has different tensor keys from task " + task
                            + " slot 0: missing [versions], extra [] (all dicts must have identical key sets)");
        }
    }

    @Test
    void withTheFormatCheckOnATrajectoryWithoutAttentionMaskRejectsOnlyItsGroupNamingTheKey() throws Exception {
        try (LogCapture log = new LogCapture()) {
            Outcome o = run(
                    (engine, slot, t) -> {
                        EpisodeResult.Trajectory r = (EpisodeResult.Trajectory) good(engine, t);
                        return slot == 3 ? EpisodeResult.trajectory(r.data().without(TensorDict.ATTENTION_MASK)) : r;
                    },
                    "contract",
                    t -> t.formatChecker = new TrajectoryFormatChecker());
            assertLoggedForEachBadTask(
                    log,
                    o,
                    true,
                    task -> "task " + task + ": workflow contract broken: task " + task
                            + " slot 3: trajectory is missing required key(s) 'attention_mask' (keys: [input_ids,");
        }
    }

    // ---- NaN and infinite rewards ----

    @Test
    void aNanRowRewardRejectsOnlyItsGroupNamingTaskSlotAndRow() throws Exception {
        try (LogCapture log = new LogCapture()) {
            Outcome o = run(
                    (engine, slot, t) -> {
                        EpisodeResult.Trajectory r = (EpisodeResult.Trajectory) good(engine, t);
                        return slot == 0
                                ? EpisodeResult.trajectory(
                                        r.data().with(TensorDict.REWARDS, Float32Tensor.vector(Float.NaN)))
                                : r;
                    },
                    "contract",
                    t -> {});
            assertLoggedForEachBadTask(
                    log,
                    o,
                    true,
                    task -> "task " + task + ": workflow contract broken: task " + task
                            + " slot 0: tensor 'rewards' has a non-finite value NaN in row 0");
        }
    }

    @Test
    void anInfiniteInteractionRewardRejectsOnlyItsGroupNamingTaskSlotAndInteraction() throws Exception {
        try (LogCapture log = new LogCapture()) {
            Outcome o = run(
                    (engine, slot, t) -> {
                        ModelResponse r = engine.generate(
                                ModelRequest.of(new int[] {1, 2}, t.gconfig().withNSamples(1)));
                        double reward = slot == 3 ? Double.POSITIVE_INFINITY : 1.0;
                        Interaction it = Interaction.builder("c" + slot)
                                .modelResponse(r)
                                .reward(reward)
                                .build();
                        return EpisodeResult.interactions(Map.of(it.id(), it));
                    },
                    "contract",
                    t -> {});
            assertLoggedForEachBadTask(
                    log,
                    o,
                    true,
                    task -> "task " + task + ": workflow contract broken: task " + task
                            + " slot 3: interaction 'c3' has a non-finite reward: Infinity");
        }
    }

    // ---- duplicate completion ids, mixed kinds ----

    @Test
    void aCompletionIdRepeatedAcrossSlotsRejectsOnlyItsGroupNamingTheIdAndBothSlots() throws Exception {
        try (LogCapture log = new LogCapture()) {
            Outcome o = run(
                    (engine, slot, t) -> {
                        ModelResponse r = engine.generate(
                                ModelRequest.of(new int[] {1, 2}, t.gconfig().withNSamples(1)));
                        String id = slot == 2 ? "c0" : "c" + slot;
                        Interaction it = Interaction.builder(id)
                                .modelResponse(r)
                                .reward(1.0)
                                .build();
                        return EpisodeResult.interactions(Map.of(id, it));
                    },
                    "contract",
                    t -> {});
            assertLoggedForEachBadTask(
                    log,
                    o,
                    true,
                    task -> "task " + task + ": workflow contract broken: task " + task
                            + ": completion id 'c0' appears in slots 0 and 2 (completion ids must be unique within a"
                            + " group)");
        }
    }

    @Test
    void mixedResultKindsInAGroupRejectOnlyThatGroupNamingTheSlotsOfEach() throws Exception {
        try (LogCapture log = new LogCapture()) {
            Outcome o = run(
                    (engine, slot, t) -> {
                        if (slot != 1) {
                            return good(engine, t);
                        }
                        ModelResponse r = engine.generate(
                                ModelRequest.of(new int[] {1, 2}, t.gconfig().withNSamples(1)));
                        Interaction it = Interaction.builder("c1")
                                .modelResponse(r)
                                .reward(1.0)
                                .build();
                        return EpisodeResult.interactions(Map.of("c1", it));
                    },
                    "contract",
                    t -> {});
            assertLoggedForEachBadTask(
                    log,
                    o,
                    true,
                    task -> "task " + task + ": workflow contract broken: task " + task
                            + ": mixed result kinds in one group: slots [0, 2, 3] returned trajectories, slots [1]"
                            + " returned interactions");
        }
    }

    // ---- huge outputs ----

    @Test
    void aHugeTrajectoryLandsWholeBesideTheOtherGroups() throws Exception {
        int huge = 200_000;
        BadSlot big = (engine, slot, t) -> {
            int[] out = new int[huge];
            for (int i = 0; i < huge; i++) {
                out[i] = i % 251;
            }
            float[] lp = new float[huge];
            java.util.Arrays.fill(lp, -0.25f);
            ModelResponse r =
                    ModelResponse.of(new int[] {1, 2}, out, lp, new int[huge], StopReason.LENGTH, Duration.ZERO);
            return EpisodeResult.trajectory(TrajectoryRows.singleTurn(r, 1.0));
        };
        // Not bad input for the engine: the "bad" items deliver too, so every item must land.
        TestRollout t = new TestRollout();
        t.groupSize = GROUP;
        t.consumerBatchSize = 2;
        t.maxConcurrent = 4;
        t.eta = 100;
        t.source = new GeneratedPromptSource(i -> Map.of("prompt", "p", "i", i), ITEMS);
        t.workflow = (engine, data) -> {
            int item = ((Number) data.get("i")).intValue();
            int slot = WorkflowContext.current().sampleIdx().orElseThrow();
            return BAD.contains(item) && slot == 0 ? big.run(engine, slot, t) : good(engine, t);
        };
        List<TrainingGroup> delivered = new ArrayList<>();
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            while (delivered.size() < ITEMS) {
                TrainingBatch b = client.nextBatch(DEADLINE).orElseThrow();
                delivered.addAll(b.groups());
                client.acknowledge(b);
            }
            assertThat(client.status().rejected()).isZero();
        }
        List<TrainingGroup> wide = delivered.stream()
                .filter(g -> g.rows().tensor(TensorDict.INPUT_IDS).dim(1) == 2 + huge)
                .toList();
        assertThat(wide).hasSize(BAD.size());
        for (TrainingGroup g : wide) {
            Int32Tensor ids = g.rows().int32(TensorDict.INPUT_IDS);
            Int32Tensor loss = g.rows().int32(TensorDict.LOSS_MASK);
            long generated = 0;
            long checksum = 0;
            for (int k = 0; k < 2 + huge; k++) {
                generated += loss.get(0, k);
                checksum += loss.get(0, k) == 1 ? ids.get(0, k) : 0;
            }
            long expected = 0;
            for (int i = 0; i < huge; i++) {
                expected += i % 251;
            }
            assertThat(generated).isEqualTo(huge);
            assertThat(checksum).isEqualTo(expected);
        }
    }

    // ---- exceptions ----

    @Test
    void aSlotThrowingACheckedExceptionRejectsOnlyItsGroupAsFailedNamingTaskSlotAndCause() throws Exception {
        try (LogCapture log = new LogCapture()) {
            Outcome o = run(
                    (engine, slot, t) -> {
                        if (slot == 1) {
                            throw new IOException("reward service unreachable");
                        }
                        return good(engine, t);
                    },
                    "failed",
                    t -> {});
            assertLoggedForEachBadTask(
                    log,
                    o,
                    false,
                    task -> "task " + task + " slot 1 threw IOException: reward service unreachable; cancelling its");
        }
    }

    @Test
    void aSlotThrowingAnErrorRejectsOnlyItsGroupAsFailed() throws Exception {
        try (LogCapture log = new LogCapture()) {
            Outcome o = run(
                    (engine, slot, t) -> {
                        if (slot == 0) {
                            throw new StackOverflowError("recursion in the tool");
                        }
                        return good(engine, t);
                    },
                    "failed",
                    t -> {});
            assertLoggedForEachBadTask(
                    log,
                    o,
                    false,
                    task -> "task " + task + " slot 0 threw StackOverflowError: recursion in the tool; cancelling its");
        }
    }

    @Test
    void aSlotThrowingAContractExceptionRejectsOnlyItsGroupAsContract() throws Exception {
        try (LogCapture log = new LogCapture()) {
            Outcome o = run(
                    (engine, slot, t) -> {
                        if (slot == 3) {
                            throw new WorkflowContractException("the answer field is missing");
                        }
                        return good(engine, t);
                    },
                    "contract",
                    t -> {});
            assertLoggedForEachBadTask(
                    log,
                    o,
                    false,
                    task -> "task " + task + " slot 3 threw WorkflowContractException: the answer field is missing;");
        }
    }

    // ---- a workflow that never returns ----

    /** Spins, ignoring interruption, until released; the test releases it (every wait has a deadline). */
    private static final class Stubborn {
        final java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);

        EpisodeResult spin() {
            long end = System.nanoTime() + DEADLINE.toNanos();
            while (release.getCount() > 0 && System.nanoTime() < end) {
                Thread.onSpinWait();
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
                Thread.interrupted(); // ignores interruption on purpose
            }
            return EpisodeResult.rejected("released");
        }
    }

    @Test
    void aWorkflowThatNeverReturnsAndIgnoresInterruptionTimesOutOnlyItsGroup() throws Exception {
        Stubborn stubborn = new Stubborn();
        try {
            run((engine, slot, t) -> stubborn.spin(), "timeout", t -> t.episodeTimeout = Duration.ofSeconds(1));
        } finally {
            stubborn.release.countDown();
        }
    }

    @Test
    void aTimedOutGroupIsLoggedNamingItsTaskAndTheTimeout() throws Exception {
        Stubborn stubborn = new Stubborn();
        try (LogCapture log = new LogCapture()) {
            Outcome o =
                    run((engine, slot, t) -> stubborn.spin(), "timeout", t -> t.episodeTimeout = Duration.ofSeconds(1));
            Map<Long, List<String>> lines = new LinkedHashMap<>();
            for (long task : o.tasks(true)) {
                List<String> l = new ArrayList<>(log.warningsContaining("task " + task));
                l.addAll(log.errorsContaining("task " + task));
                lines.put(task, l);
            }
            assertThat(lines).allSatisfy((task, l) -> assertThat(l).anyMatch(s -> s.contains("episode_timeout")));
        } finally {
            stubborn.release.countDown();
        }
    }
}
