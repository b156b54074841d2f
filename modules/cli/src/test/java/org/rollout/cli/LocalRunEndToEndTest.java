package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.config.RolloutConfig;
import org.rollout.config.RolloutSettings;
import org.rollout.core.DumpRecord;
import org.rollout.core.InvariantChecker;
import org.rollout.core.TrajectoryDumpReader;
import org.rollout.modelserver.LatencyModel;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.RolloutStatus;

/**
 * The main job end to end in one JVM: built-in model servers with a latency model (so weight
 * updates land while generations are in flight), the actor runtime, the demo workflow and trainer.
 * Every delivered batch goes through the {@link InvariantChecker}; every dump line through the
 * strict dump reader.
 */
class LocalRunEndToEndTest {

    /** Passes everything through, showing each delivered batch and each published version to the checker. */
    private static final class Observed extends ForwardingRolloutClient {
        private final InvariantChecker checker;
        private final List<TrainingBatch> batches;
        private final RolloutSettings settings;

        Observed(RolloutClient inner, InvariantChecker checker, List<TrainingBatch> batches, RolloutSettings settings) {
            super(inner);
            this.checker = checker;
            this.batches = batches;
            this.settings = settings;
        }

        @Override
        public TrainingBatch nextBatch() throws InterruptedException {
            return seen(inner.nextBatch());
        }

        @Override
        public Optional<TrainingBatch> nextBatch(Duration timeout) throws InterruptedException {
            return inner.nextBatch(timeout).map(this::seen);
        }

        private TrainingBatch seen(TrainingBatch b) {
            checker.onBatch(b);
            batches.add(b);
            observeBudget();
            return b;
        }

        private void observeBudget() {
            try {
                RolloutStatus s = inner.status();
                checker.onBudget(
                        s.version(),
                        s.accepted(),
                        s.running(),
                        settings.rollout().maxConcurrentRollouts(),
                        settings.rollout().consumerBatchSize());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public PublishResult publishWeights(int version, Path weights) throws InterruptedException {
            PublishResult r = inner.publishWeights(version, weights);
            checker.onVersion(r.version());
            observeBudget();
            return r;
        }
    }

    @Test
    void aRunWithGenerationsInterruptedByWeightUpdatesKeepsEveryInvariantAndDumpsMatchTheFormat(@TempDir Path dir)
            throws Exception {
        RolloutSettings settings = RolloutConfig.load(
                null,
                List.of(
                        "rollout.fileroot=" + dir,
                        "rollout.trial_name=e2e",
                        "gconfig.n_samples=4",
                        "gconfig.max_new_tokens=24",
                        "rollout.consumer_batch_size=8",
                        "rollout.max_concurrent_rollouts=16"),
                LocalCommand.profile("demo"));
        // AReaL's admission policy: the budget holds at every admission; the hand-out bound is only
        // guaranteed under staleness_policy = cancel (see InvariantChecker).
        InvariantChecker checker = new InvariantChecker(settings.rollout().maxHeadOffpolicyness(), false);
        List<TrainingBatch> batches = new CopyOnWriteArrayList<>();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        new LocalRun(settings, true, false, 8, 2, false, new PrintStream(out, true, StandardCharsets.UTF_8))
                .withLatency(new LatencyModel(Duration.ZERO, Duration.ofMillis(5), Duration.ofMillis(1)))
                .withClientDecorator(c -> new Observed(c, checker, batches, settings))
                .execute();

        assertThat(checker.violations()).isEmpty();
        assertThat(checker.checks()).containsKeys("budget_bound", "task_once", "row_versions", "head_tail_versions");
        assertThat(batches).hasSizeGreaterThanOrEqualTo(8);
        assertThat(batches).allSatisfy(b -> assertThat(b.groups()).hasSize(8));
        assertThat(batches.stream().flatMap(b -> b.groups().stream()))
                .allSatisfy(g -> assertThat(g.rowCount()).isEqualTo(4));
        assertThat(rowsSpanningVersions(batches))
                .as("rows whose generation was interrupted by an update and resumed under the new version")
                .isPositive();

        Path run = dir.resolve("demo/e2e");
        for (TrainingBatch b : batches) {
            for (TrainingGroup g : b.groups()) {
                Path file = run.resolve("rollout/" + g.tailVersion() + "/" + g.taskId() + ".jsonl");
                List<DumpRecord> records = TrajectoryDumpReader.read(file);
                assertThat(records).hasSize(g.rowCount());
                assertThat(records).allSatisfy(r -> assertThat(r.tailVersion()).isLessThanOrEqualTo(g.tailVersion()));
            }
        }
        assertThat(Files.readAllLines(run.resolve("stats.jsonl"))).isNotEmpty();
        assertThat(Files.exists(run.resolve("weights/v8.rlm"))).isTrue();
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("Done in", "mean reward: first 4 steps");
    }

    private static long rowsSpanningVersions(List<TrainingBatch> batches) {
        long rows = 0;
        for (TrainingBatch b : batches) {
            for (TrainingGroup g : b.groups()) {
                TensorDict d = g.rows();
                Tensor versions = d.get(TensorDict.VERSIONS);
                Tensor mask = d.get(TensorDict.LOSS_MASK);
                int l = versions.dim(1);
                for (int i = 0; i < versions.dim(0); i++) {
                    int lo = Integer.MAX_VALUE;
                    int hi = Integer.MIN_VALUE;
                    for (int j = 0; j < l; j++) {
                        if (mask.getLong(i * l + j) == 1) {
                            int v = (int) versions.getLong(i * l + j);
                            lo = Math.min(lo, v);
                            hi = Math.max(hi, v);
                        }
                    }
                    if (lo < hi) {
                        rows++;
                    }
                }
            }
        }
        return rows;
    }
}
