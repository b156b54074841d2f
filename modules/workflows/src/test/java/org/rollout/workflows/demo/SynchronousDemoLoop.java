package org.rollout.workflows.demo;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.config.InferenceConfig;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.core.TensorDicts;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLmWeights;
import org.rollout.workflows.RLVRWorkflow;

/**
 * The demo's RL loop without the actor runtime, for tests: an in-process model server, a {@link
 * RemoteInferenceEngine} on 127.0.0.1, groups generated directly with {@link RLVRWorkflow} (one
 * virtual thread per sample), batches built by hand, {@link GrpoTrainer#step}, and the new weights
 * loaded into the server through {@code engine.updateWeights}.
 *
 * <p>Deterministic: every sample gets its own sampling seed derived from (seed, step, group,
 * slot), the model server's sampling depends only on seed, prompt and weights, and the trainer is
 * single-threaded, so the same configuration gives the same learning curve.
 */
final class SynchronousDemoLoop implements AutoCloseable {
    private final DemoConfig config;
    private final ModelServer server;
    private final RemoteInferenceEngine engine;
    private final GrpoTrainer trainer;
    private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
    private long nextItem;
    private long nextTask;
    private int step;

    SynchronousDemoLoop(DemoConfig config, Path weightsDir) throws Exception {
        this.config = config;
        Path v0 = DemoTraining.initialWeights(config, weightsDir);
        this.server = ModelServer.start(ModelServerConfig.defaults().withWeightsPath(v0));
        this.engine = new RemoteInferenceEngine(InferenceConfig.builder()
                .addresses("127.0.0.1:" + server.port())
                .requestTimeout(Duration.ofSeconds(30))
                .controlTimeout(Duration.ofSeconds(30))
                .build());
        this.trainer = new GrpoTrainer(TinyLmWeights.read(v0), config.trainerConfig(weightsDir));
    }

    /** Generates one batch, trains on it and loads the new weights into the server. */
    StepReport step() throws Exception {
        int groupSize = config.gconfig().nSamples();
        List<TrainingGroup> groups = new ArrayList<>();
        List<List<Future<EpisodeResult>>> pending = new ArrayList<>();
        for (int g = 0; g < config.groupsPerStep(); g++) {
            Map<String, Object> item = LetterTask.item(config.promptSeed(), nextItem++);
            List<Future<EpisodeResult>> slots = new ArrayList<>();
            for (int s = 0; s < groupSize; s++) {
                // A distinct sampling seed per (run, step, group, slot): the group's samples differ,
                // and the same configuration replays the same samples.
                long seed = new SplittableRandom(config.weightsSeed()).split().nextLong()
                        ^ ((long) step << 32 | (long) g << 16 | s);
                GenerationConfig gconfig =
                        config.gconfig().toBuilder().seed(seed).build();
                RLVRWorkflow workflow =
                        new RLVRWorkflow(new LetterReward(), gconfig, ByteLevelTokenizer.INSTANCE, false);
                slots.add(threads.submit(() -> workflow.runEpisode(engine, item)));
            }
            pending.add(slots);
        }
        int dispatchVersion = engine.version();
        for (List<Future<EpisodeResult>> slots : pending) {
            List<TensorDict> rows = new ArrayList<>();
            for (Future<EpisodeResult> f : slots) {
                rows.add(((EpisodeResult.Trajectory) f.get()).data());
            }
            TensorDict merged = TensorDicts.concatPadded(rows);
            int[] slotIndices = new int[rows.size()];
            Arrays.setAll(slotIndices, i -> i);
            int[] counts = new int[rows.size()];
            Arrays.fill(counts, 1);
            groups.add(new TrainingGroup(
                    nextTask++,
                    0,
                    merged,
                    slotIndices,
                    counts,
                    dispatchVersion,
                    dispatchVersion,
                    dispatchVersion,
                    engine.version()));
        }
        StepReport report = trainer.step(new TrainingBatch(step, groups, engine.version()));
        engine.updateWeights(report.weightsPath(), report.version());
        step++;
        return report;
    }

    GrpoTrainer trainer() {
        return trainer;
    }

    RemoteInferenceEngine engine() {
        return engine;
    }

    ModelServer server() {
        return server;
    }

    @Override
    public void close() {
        threads.shutdownNow();
        engine.close();
        server.close();
    }
}
