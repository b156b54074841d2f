package org.rollout.workflows.demo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.rollout.api.TrainingBatch;
import org.rollout.modelserver.TinyLmWeights;
import org.rollout.modelserver.WeightFileException;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.WeightPublishException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The demo's training loop against a running engine: the trainer side of {@code rollout local}.
 *
 * <pre>
 *   repeat steps times:
 *       batch   = client.nextBatch()               blocks until consumer_batch_size groups are ready
 *       report  = trainer.step(batch)              GRPO step; writes v{n}.rlm
 *       client.acknowledge(batch)                  the engine may forget it
 *       client.publishWeights(n, v{n}.rlm)         servers load it; new tokens carry version n
 *       listener.onStep(report)
 * </pre>
 *
 * <p>A batch id seen before is a redelivery (the engine did not hear the acknowledgement): it is
 * acknowledged again and not trained on twice, and does not count as a step.
 *
 * <p>Interruption: every blocking call honours it; {@link #run} throws {@link
 * InterruptedException} and the steps done so far stay published. Errors (a weight file that cannot
 * be written, a refused publish) propagate and end the run.
 */
public final class DemoTraining {
    private static final Logger log = LoggerFactory.getLogger(DemoTraining.class);

    /** Hears about each finished step, on the training thread. */
    @FunctionalInterface
    public interface StepListener {
        void onStep(StepReport report);
    }

    private DemoTraining() {}

    /**
     * Writes seeded initial weights (version 0, the demo's default std and decay) to {@code
     * {weightsDir}/v0.rlm}, creating the directory.
     *
     * @return the file written
     */
    public static Path initialWeights(long seed, Path weightsDir) throws WeightFileException {
        DemoConfig d = DemoConfig.defaults();
        return writeV0(TinyLmWeights.seeded(seed, d.initStd(), d.decay()), weightsDir);
    }

    /** Writes {@code config}'s initial weights to {@code {weightsDir}/v0.rlm}. */
    public static Path initialWeights(DemoConfig config, Path weightsDir) throws WeightFileException {
        return writeV0(config.initialWeights(), weightsDir);
    }

    private static Path writeV0(TinyLmWeights weights, Path weightsDir) throws WeightFileException {
        Path path = weightsDir.resolve("v0.rlm");
        try {
            Files.createDirectories(weightsDir);
        } catch (IOException e) {
            throw new WeightFileException(path, "cannot create the weights directory: " + e.getMessage(), e);
        }
        weights.withVersion(0).write(path);
        return path;
    }

    /**
     * Runs {@code steps} training steps.
     *
     * @return the reports, one per step, in order
     * @throws InterruptedException when interrupted; steps already done stay done
     * @throws WeightFileException when new weights cannot be written
     * @throws WeightPublishException when the engine refuses a version or no server loads it
     */
    public static List<StepReport> run(RolloutClient client, GrpoTrainer trainer, int steps, StepListener listener)
            throws InterruptedException, WeightFileException {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(trainer, "trainer");
        Objects.requireNonNull(listener, "listener");
        List<StepReport> reports = new ArrayList<>(steps);
        Set<Long> trained = new HashSet<>();
        while (reports.size() < steps) {
            if (Thread.interrupted()) {
                throw new InterruptedException("demo training interrupted after " + reports.size() + " steps");
            }
            TrainingBatch batch = client.nextBatch();
            if (!trained.add(batch.batchId())) {
                log.info("batch {} delivered again; acknowledging it without training twice", batch.batchId());
                client.acknowledge(batch);
                continue;
            }
            StepReport report = trainer.step(batch);
            client.acknowledge(batch);
            PublishResult published = client.publishWeights(report.version(), report.weightsPath());
            if (!published.complete()) {
                log.warn(
                        "version {} loaded on {} server(s); failed on {}",
                        report.version(),
                        published.serversUpdated(),
                        published.serverFailures());
            }
            reports.add(report);
            listener.onStep(report);
        }
        return reports;
    }
}
