package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.cluster.TestRollout.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.EpisodeResult;
import org.rollout.api.Float32Tensor;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.api.WorkflowContext;
import org.rollout.config.StalenessPolicy;
import org.rollout.core.DumpRecord;
import org.rollout.core.InvariantChecker;
import org.rollout.core.TrajectoryDumpReader;
import org.rollout.core.TrajectoryRows;
import org.rollout.testengine.ScriptedEngine;
import org.rollout.trainer.RolloutStatus;
import org.rollout.trainer.WeightPublishException;

class LocalRolloutTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);

    @Test
    void deliversBatchesOfConsumerBatchSizeGroupsThatKeepEveryInvariant() throws Exception {
        TestRollout t = new TestRollout();
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            InvariantChecker checker = new InvariantChecker(t.eta, false);
            for (int step = 0; step < 3; step++) {
                TrainingBatch batch = client.nextBatch(DEADLINE).orElseThrow();
                checker.onBatch(batch);
                RolloutStatus s = client.status();
                checker.onBudget(s.version(), s.accepted(), s.running(), t.maxConcurrent, t.consumerBatchSize);
                assertThat(batch.groups()).hasSize(t.consumerBatchSize);
                for (TrainingGroup g : batch.groups()) {
                    assertThat(g.rowCount()).isEqualTo(t.groupSize);
                    assertThat(g.slotIndices()).containsExactly(0, 1, 2, 3);
                    assertThat(g.headVersion()).isEqualTo(step);
                }
                client.acknowledge(batch);
                client.publishWeights(step + 1, Path.of("weights-v" + (step + 1)));
                checker.onVersion(step + 1);
            }
            assertThat(checker.violations()).isEmpty();
            assertThat(checker.tasksDelivered()).isEqualTo(6);
            assertThat(t.published).hasSize(3);
            assertThat(client.status().version()).isEqualTo(3);
        }
    }

    /**
     * The coordinator and the collector handle every message on the one thread of their own
     * dispatcher (docs/architecture.md): none on the default dispatcher's workers, none apart.
     */
    @Test
    void theCoordinatorAndTheCollectorRunOnOneThreadOfTheirOwn() throws Exception {
        Map<String, Set<String>> threads = new ConcurrentHashMap<>();
        Supervision.Wrapper recording = new Supervision.Wrapper() {
            @Override
            @SuppressWarnings("unchecked")
            public <T> Behavior<T> wrap(String actor, Behavior<T> behavior) {
                Set<String> names = threads.computeIfAbsent(actor, k -> ConcurrentHashMap.newKeySet());
                return Behaviors.intercept(
                        () -> new BehaviorInterceptor<T, T>((Class<T>) (Class<?>) Object.class) {
                            @Override
                            public Behavior<T> aroundReceive(TypedActorContext<T> ctx, T msg, ReceiveTarget<T> target) {
                                names.add(Thread.currentThread().getName());
                                return target.apply(ctx, msg);
                            }
                        },
                        behavior);
            }
        };
        TestRollout t = new TestRollout();
        try (LocalRollout rollout = LocalRollout.start(t.spec(), t.pekko, recording)) {
            var client = rollout.client();
            for (int step = 0; step < 3; step++) {
                client.acknowledge(client.nextBatch(DEADLINE).orElseThrow());
                client.publishWeights(step + 1, Path.of("weights-v" + (step + 1)));
            }
        }
        assertThat(threads.get("coordinator")).hasSize(1);
        assertThat(threads.get("coordinator"))
                .as("the coordinator's and the collector's threads")
                .isEqualTo(threads.get("collector"));
        assertThat(threads.get("coordinator").iterator().next()).contains("rollout-singleton-dispatcher");
        assertThat(threads.get("runner")).doesNotContainAnyElementsOf(threads.get("coordinator"));
    }

    @Test
    void admissionStopsAtTheStalenessBoundUntilTheTrainerPublishes() throws Exception {
        TestRollout t = new TestRollout();
        t.consumerBatchSize = 2;
        t.maxConcurrent = 8;
        t.eta = 0;
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            await(
                    "two accepted groups",
                    DEADLINE,
                    () -> status(client).accepted() == 2 && status(client).running() == 0);
            // The bound (eta + v + 1) * B = 2 holds on every observation, and nothing more is admitted.
            for (int i = 0; i < 50; i++) {
                RolloutStatus s = status(client);
                assertThat(s.accepted() + s.running()).isLessThanOrEqualTo(2);
                assertThat(s.capacity()).isLessThanOrEqualTo(0);
            }
            TrainingBatch b = client.nextBatch(DEADLINE).orElseThrow();
            client.acknowledge(b);
            client.publishWeights(1, Path.of("w1"));
            await(
                    "four accepted groups after the publish",
                    DEADLINE,
                    () -> status(client).accepted() == 4);
            assertThat(status(client).accepted() + status(client).running()).isLessThanOrEqualTo(4);
        }
    }

    @Test
    void queueSizeBoundsBufferedGroupsEvenWhenTheStalenessBudgetIsLarge() throws Exception {
        TestRollout t = new TestRollout();
        t.consumerBatchSize = 2;
        t.maxConcurrent = 8;
        t.eta = 100;
        t.queueSize = 4;
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            await(
                    "four buffered groups",
                    DEADLINE,
                    () -> status(client).accepted() == 4 && status(client).running() == 0);
            for (int i = 0; i < 50; i++) {
                RolloutStatus s = status(client);
                assertThat(s.bufferedGroups() + s.running()).isLessThanOrEqualTo(4);
                assertThat(s.capacity()).isPositive();
            }
            client.acknowledge(client.nextBatch(DEADLINE).orElseThrow());
            await(
                    "admission to refill the queue",
                    DEADLINE,
                    () -> status(client).accepted() == 6);
        }
    }

    @Test
    void aFailingSlotCancelsItsSiblingsAtOnceAndTheGroupIsRejectedAsFailed() throws Exception {
        TestRollout t = new TestRollout();
        t.source = new GeneratedPromptSource(i -> Map.of("prompt", "p"), 1);
        ScriptedEngine engine = t.engine;
        t.workflow = (e, data) -> {
            int slot = WorkflowContext.current().sampleIdx().orElseThrow();
            if (slot == 0) {
                await("the three siblings to block in generate", DEADLINE, () -> engine.blocking() == 3);
                throw new IllegalStateException("tool crashed");
            }
            e.generate(ModelRequest.of(
                    new int[] {ScriptedEngine.BLOCK}, t.gconfig().withNSamples(1)));
            throw new AssertionError("a blocked generation returned");
        };
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            await(
                    "the group to be rejected as failed",
                    DEADLINE,
                    () -> status(client).rejectedByReason().getOrDefault("failed", 0L) == 1);
            await("the three siblings' generations to be aborted", DEADLINE, () -> engine.interrupted() == 3);
            assertThat(status(client).rejected()).isEqualTo(1);
            assertThat(status(client).running()).isZero();
        }
    }

    @Test
    void aWorkflowReturningGarbageRejectsOnlyItsOwnGroup() throws Exception {
        TestRollout t = new TestRollout();
        t.source = new GeneratedPromptSource(i -> Map.of("prompt", i % 2 == 0 ? "bad" : "good"), -1);
        t.workflow = (engine, data) -> {
            ModelResponse r = engine.generate(
                    ModelRequest.of(new int[] {1, 2}, t.gconfig().withNSamples(1)));
            TensorDict row = TrajectoryRows.singleTurn(r, 1.0);
            if (data.get("prompt").equals("bad")) {
                row = row.with(TensorDict.REWARDS, Float32Tensor.vector(Float.NaN));
            }
            return EpisodeResult.trajectory(row);
        };
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            TrainingBatch b = client.nextBatch(DEADLINE).orElseThrow();
            assertThat(b.groups()).hasSize(2);
            await(
                    "a contract rejection",
                    DEADLINE,
                    () -> status(client).rejectedByReason().getOrDefault("contract", 0L) >= 1);
        }
    }

    @Test
    void aGroupThatNeverFinishesTimesOutAndItsGenerationsAreAborted() throws Exception {
        TestRollout t = new TestRollout();
        t.episodeTimeout = Duration.ofSeconds(1);
        t.source = new GeneratedPromptSource(i -> Map.of("prompt", "p"), 1);
        t.workflow = (e, data) -> {
            e.generate(ModelRequest.of(
                    new int[] {ScriptedEngine.BLOCK}, t.gconfig().withNSamples(1)));
            return EpisodeResult.rejected("unreachable");
        };
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            await(
                    "a timeout rejection",
                    DEADLINE,
                    () -> status(client).rejectedByReason().getOrDefault("timeout", 0L) == 1);
            await("every slot's generation to be aborted", DEADLINE, () -> t.engine.interrupted() == 4);
        }
    }

    @Test
    void theCancelPolicyRejectsAGroupTheVersionLeftBehind() throws Exception {
        TestRollout t = new TestRollout();
        t.policy = StalenessPolicy.CANCEL;
        t.eta = 0;
        t.source = new GeneratedPromptSource(i -> Map.of("prompt", "p"), 1);
        t.workflow = (e, data) -> {
            e.generate(ModelRequest.of(
                    new int[] {ScriptedEngine.BLOCK}, t.gconfig().withNSamples(1)));
            return EpisodeResult.rejected("unreachable");
        };
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            await("all four slots to be generating", DEADLINE, () -> t.engine.blocking() == 4);
            client.publishWeights(1, Path.of("w1"));
            await(
                    "a stale rejection",
                    DEADLINE,
                    () -> status(client).rejectedByReason().getOrDefault("stale", 0L) == 1);
            await("every slot's generation to be aborted", DEADLINE, () -> t.engine.interrupted() == 4);
        }
    }

    @Test
    void theCancelPolicyDropsABufferedGroupThatBecameTooStaleBeforeHandOut() throws Exception {
        TestRollout t = new TestRollout();
        t.policy = StalenessPolicy.CANCEL;
        t.eta = 1;
        t.consumerBatchSize = 2;
        t.maxConcurrent = 4;
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            await(
                    "four groups accepted at version 0",
                    DEADLINE,
                    () -> status(client).accepted() == 4);
            client.acknowledge(client.nextBatch(DEADLINE).orElseThrow());
            client.publishWeights(1, Path.of("w1"));
            client.publishWeights(2, Path.of("w2"));
            TrainingBatch b = client.nextBatch(DEADLINE).orElseThrow();
            InvariantChecker strict = new InvariantChecker(1, true);
            strict.onBatch(b);
            assertThat(strict.violations()).isEmpty();
            assertThat(b.groups())
                    .allSatisfy(g -> assertThat(g.dispatchVersion()).isGreaterThanOrEqualTo(1));
            assertThat(client.status().rejectedByReason()).containsEntry("stale", 2L);
        }
    }

    @Test
    void aPublishThatDoesNotIncreaseTheVersionIsRefusedWithTheReason() throws Exception {
        TestRollout t = new TestRollout();
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            client.publishWeights(1, Path.of("w1"));
            assertThatThrownBy(() -> client.publishWeights(1, Path.of("again")))
                    .isInstanceOf(WeightPublishException.class)
                    .hasMessage(
                            "version 1 is not newer than the current version 1; a publish must increase the version");
            assertThatThrownBy(() -> client.publishWeights(0, Path.of("older")))
                    .isInstanceOf(WeightPublishException.class)
                    .hasMessageContaining("version 0 is not newer than the current version 1");
            assertThat(client.status().version()).isEqualTo(1);
            assertThat(t.published).containsExactly(Path.of("w1"));
        }
    }

    @Test
    void anUnacknowledgedBatchIsDeliveredAgainWithTheSameIdAndGroups() throws Exception {
        TestRollout t = new TestRollout();
        t.ackTimeout = Duration.ofSeconds(1);
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            TrainingBatch first = client.nextBatch(DEADLINE).orElseThrow();
            TrainingBatch again = client.nextBatch(DEADLINE).orElseThrow();
            assertThat(again.batchId()).isEqualTo(first.batchId());
            assertThat(again.groups()).isEqualTo(first.groups());
            client.acknowledge(again);
            client.publishWeights(1, Path.of("w1"));
            TrainingBatch next = client.nextBatch(DEADLINE).orElseThrow();
            assertThat(next.batchId()).isEqualTo(first.batchId() + 1);
        }
    }

    @Test
    void anEvaluationPassRunsAtStartUnderTheEvalScopeWithoutTouchingTheBudget() throws Exception {
        TestRollout t = new TestRollout();
        t.evalItems = List.of(Map.of("prompt", "e1"), Map.of("prompt", "e2"), Map.of("prompt", "e3"));
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            await("three eval groups in the statistics", DEADLINE, () -> {
                Map<String, Double> eval = rollout.stats().latestMeans().get("eval-rollout");
                return eval != null && eval.get("groups") == 3.0;
            });
            Map<String, Double> eval = rollout.stats().latestMeans().get("eval-rollout");
            assertThat(eval.get("accepted")).isEqualTo(3.0);
            assertThat(eval).containsKeys("reward", "target_slot_count", "pre_filter_usable_slot_yield");
            RolloutStatus s = client.status();
            assertThat(s.accepted() + s.rejected()).isLessThanOrEqualTo(2 + 4);
        }
    }

    @Test
    void anEvaluationPassThatNeverFinishesDoesNotHoldUpTraining() throws Exception {
        TestRollout t = new TestRollout();
        t.maxConcurrent = 2;
        t.consumerBatchSize = 2;
        t.evalItems = List.of(Map.of("prompt", "eval"), Map.of("prompt", "eval"), Map.of("prompt", "eval"));
        t.workflow = (e, data) -> {
            if (WorkflowContext.current().isEval()) {
                e.generate(ModelRequest.of(
                        new int[] {ScriptedEngine.BLOCK}, t.gconfig().withNSamples(1)));
            }
            ModelResponse r =
                    e.generate(ModelRequest.of(new int[] {1, 2}, t.gconfig().withNSamples(1)));
            return EpisodeResult.trajectory(TrajectoryRows.singleTurn(r, 1.0));
        };
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            TrainingBatch b = client.nextBatch(DEADLINE).orElseThrow();
            assertThat(b.groups()).hasSize(2);
            assertThat(client.status().evalRunning()).isEqualTo(2);
        }
    }

    @Test
    void withDumpToFileEveryDeliveredRowIsDumpedAndEveryLineMatchesTheFormat(@TempDir Path dir) throws Exception {
        TestRollout t = new TestRollout();
        t.dumpRoot = dir;
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            TrainingBatch b = client.nextBatch(DEADLINE).orElseThrow();
            Map<Long, Integer> expectedRows = new HashMap<>();
            for (TrainingGroup g : b.groups()) {
                expectedRows.put(g.taskId(), g.rowCount());
            }
            for (var e : expectedRows.entrySet()) {
                Path file = dir.resolve("exp/trial/rollout/0/" + e.getKey() + ".jsonl");
                await("dump of task " + e.getKey(), DEADLINE, () -> Files.exists(file));
                List<DumpRecord> records = TrajectoryDumpReader.read(file);
                assertThat(records).hasSize(e.getValue());
                assertThat(records).allSatisfy(r -> assertThat(r.taskId()).isEqualTo(e.getKey()));
            }
            try (Stream<Path> files = Files.walk(dir)) {
                List<Path> jsonl = new ArrayList<>(
                        files.filter(p -> p.toString().endsWith(".jsonl")).toList());
                assertThat(jsonl).isNotEmpty();
                for (Path f : jsonl) {
                    TrajectoryDumpReader.read(f);
                }
            }
        }
    }

    @Test
    void statisticsOfAVersionAreWrittenWhenTheVersionMovesOn(@TempDir Path dir) throws Exception {
        TestRollout t = new TestRollout();
        t.statsFile = dir.resolve("stats.jsonl");
        try (LocalRollout rollout = t.start()) {
            var client = rollout.client();
            TrainingBatch b = client.nextBatch(DEADLINE).orElseThrow();
            client.acknowledge(b);
            client.publishWeights(1, Path.of("w1"));
            await(
                    "version 0 statistics to be written",
                    DEADLINE,
                    () -> !rollout.stats().history().isEmpty());
            StatsBook.Line line = rollout.stats().history().getFirst();
            assertThat(line.version()).isZero();
            assertThat(line.scope()).isEqualTo("rollout");
            assertThat(line.values())
                    .containsKeys(
                            "groups",
                            "accepted",
                            "rejected",
                            "tokens",
                            "reward",
                            "reward__count",
                            "usable_slot_count",
                            "staleness_mean");
            assertThat((double) line.values().get("reward")).isCloseTo(0.15, org.assertj.core.data.Offset.offset(1e-9));
            assertThat(rollout.stats().awaitWritten(DEADLINE)).isTrue();
            assertThat(Files.readAllLines(t.statsFile)).hasSizeGreaterThanOrEqualTo(1);
        }
    }

    static RolloutStatus status(LocalRolloutClient client) {
        try {
            return client.status();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
