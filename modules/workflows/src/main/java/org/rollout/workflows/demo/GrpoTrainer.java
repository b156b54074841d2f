package org.rollout.workflows.demo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.core.TensorDicts;
import org.rollout.modelserver.TinyLm;
import org.rollout.modelserver.TinyLmGradient;
import org.rollout.modelserver.TinyLmOptimizer;
import org.rollout.modelserver.TinyLmWeights;
import org.rollout.modelserver.WeightFileException;

/**
 * A small, real GRPO trainer for the built-in model: one policy-gradient step per batch, new
 * weights on disk every step.
 *
 * <pre>
 *   for each group g of the batch (its rows are one prompt's samples):
 *       A_i = (r_i − mean_g) / (std_g + 1e-6)          std_g unbiased; A = 0 when std_g ≈ 0 or |g| = 1
 *   for each generated token t of row i (loss_mask = 1 within the attention length):
 *       ratio_t = exp(log π_θ(x_t) − log π_behaviour(x_t))      (behaviour = the sampling logprobs)
 *       PPO-clip: maximise min(ratio_t · A_i, clip(ratio_t, 1 − ε, 1 + ε) · A_i)
 *       so ∂/∂θ = A_i · ratio_t · ∇ log π_θ(x_t), or 0 where the clip is active
 *   gradient /= generated tokens in the batch                  (token-level mean, as AReaL)
 *   θ ← Adam ascent step (the learning rate rises linearly over the first warmup_steps steps)
 *   version ← version + 1;  write {weights_dir}/v{version}.rlm
 * </pre>
 *
 * <p>Log-probabilities are computed by {@link TinyLm} at the sampling temperature, the same math
 * the server samples with, so on fresh data the ratio is 1 up to float rounding. Group boundaries
 * are the {@link TrainingGroup}s' (AReaL #1419): normalisation never crosses prompts.
 *
 * <p>Versions: each step's weights get the trainer's previous version + 1 (starting from the
 * initial weights' version), whatever the batches say, so published versions strictly increase as
 * the engine's fencing requires.
 *
 * <p>Not thread-safe: one trainer, one thread (the Adam moments live in it). A failed write throws
 * and leaves the trainer at its previous weights and version (the Adam moments have taken the step).
 */
public final class GrpoTrainer {
    /** Added to the group's standard deviation, as in the brief's A = (r − mean)/(std + 1e-6). */
    public static final double STD_EPSILON = 1e-6;

    /**
     * @param learningRate Adam's step size, &gt; 0
     * @param warmupSteps the learning rate rises linearly over this many first steps (step k of
     *     them uses {@code learningRate · k / warmupSteps}); 0 for none
     * @param clipEpsilon PPO's ε, &gt; 0
     * @param temperature the sampling temperature of the batches (0 = greedy, logprobs at T = 1)
     * @param weightsDir where {@code v{version}.rlm} files are written
     */
    public record Config(
            double learningRate, int warmupSteps, double clipEpsilon, double temperature, Path weightsDir) {
        public Config {
            if (!(learningRate > 0) || Double.isInfinite(learningRate)) {
                throw new IllegalArgumentException("learning_rate must be finite and > 0, got " + learningRate);
            }
            if (warmupSteps < 0) {
                throw new IllegalArgumentException("warmup_steps must be >= 0, got " + warmupSteps);
            }
            if (!(clipEpsilon > 0) || Double.isInfinite(clipEpsilon)) {
                throw new IllegalArgumentException("eps_clip must be finite and > 0, got " + clipEpsilon);
            }
            if (!(temperature >= 0) || Double.isInfinite(temperature)) {
                throw new IllegalArgumentException("temperature must be finite and >= 0, got " + temperature);
            }
            Objects.requireNonNull(weightsDir, "weightsDir");
        }
    }

    private final Config config;
    private final TinyLmOptimizer.Adam optimizer;
    private final TinyLmGradient gradient = new TinyLmGradient();
    private TinyLmWeights weights;
    private int steps;

    /** A trainer starting from {@code initial} (its version is the trainer's starting version). */
    public GrpoTrainer(TinyLmWeights initial, Config config) {
        this.weights = Objects.requireNonNull(initial, "initial weights");
        this.config = Objects.requireNonNull(config, "config");
        this.optimizer = TinyLmOptimizer.adam(config.learningRate());
    }

    /** The current weights. */
    public TinyLmWeights weights() {
        return weights;
    }

    /** The current version: the initial version plus the steps taken. */
    public int version() {
        return weights.version();
    }

    public Config config() {
        return config;
    }

    /** Where version {@code v} is (or will be) written. */
    public Path weightsPath(int v) {
        return config.weightsDir().resolve("v" + v + ".rlm");
    }

    /**
     * Trains on {@code batch}: one Adam step, the new weights written as the next version.
     *
     * <p>A row without generated tokens (loss_mask all 0) contributes its reward to the group's
     * statistics and nothing to the gradient.
     *
     * @throws IllegalArgumentException when a group has no {@code rewards} or a non-finite one, a
     *     row is trained from its first token (the model needs context), or a token lies outside
     *     the model's vocabulary; the message names the task and row
     * @throws WeightFileException when the weights cannot be written; the trainer keeps its weights
     *     and version
     */
    public StepReport step(TrainingBatch batch) throws WeightFileException {
        long start = System.nanoTime();
        gradient.clear();
        double temperature = config.temperature();
        double eps = config.clipEpsilon();

        // Pass 1: advantages per group, and how many tokens the batch trains on.
        List<RowData> rows = new ArrayList<>();
        List<Double> groupStd = new ArrayList<>();
        double rewardSum = 0;
        long tokens = 0;
        for (TrainingGroup group : batch.groups()) {
            TensorDict d = group.rows();
            int n = d.batchSize();
            double[] rewards = new double[n];
            for (int i = 0; i < n; i++) {
                rewards[i] = reward(d, group, i);
                rewardSum += rewards[i];
            }
            double mean = mean(rewards);
            double std = unbiasedStd(rewards, mean);
            groupStd.add(std);
            int[] lengths = TensorDicts.validLengths(d);
            for (int i = 0; i < n; i++) {
                double advantage = n < 2 || std < STD_EPSILON ? 0.0 : (rewards[i] - mean) / (std + STD_EPSILON);
                RowData row = RowData.of(d, lengths, i, advantage, group.taskId());
                tokens += row.generated;
                rows.add(row);
            }
        }

        // Pass 2: the PPO-clip policy gradient, token-level mean over the batch.
        long clipped = 0;
        if (tokens > 0) {
            for (RowData row : rows) {
                if (row.generated == 0 || row.advantage == 0.0) {
                    continue;
                }
                double[] current;
                try {
                    current = TinyLm.sequenceLogprobs(weights, row.tokens, row.first, temperature);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException(
                            "task " + row.taskId + " row " + row.index + ": " + e.getMessage(), e);
                }
                double[] scales = new double[current.length];
                for (int k = 0; k < current.length; k++) {
                    if (!row.trained[k]) {
                        continue;
                    }
                    double ratio = Math.exp(current[k] - row.behaviour[k]);
                    boolean clip = (row.advantage > 0 && ratio > 1 + eps) || (row.advantage < 0 && ratio < 1 - eps);
                    if (clip) {
                        clipped++;
                    } else {
                        scales[k] = row.advantage * ratio / tokens;
                    }
                }
                TinyLm.accumulateGradient(weights, row.tokens, row.first, scales, temperature, gradient);
            }
        }
        double norm = gradient.norm();

        int next = weights.version() + 1;
        TinyLmWeights stepped = warmedUp(weights, optimizer.step(weights, gradient), steps + 1);
        TinyLmWeights updated = stepped.withVersion(next);
        Path path = weightsPath(next);
        try {
            Files.createDirectories(config.weightsDir());
        } catch (IOException e) {
            throw new WeightFileException(path, "cannot create the weights directory: " + e, e);
        }
        updated.write(path);
        weights = updated;
        steps++;
        int rowCount = rows.size();
        return new StepReport(
                next,
                batch.batchId(),
                batch.size(),
                rowCount,
                tokens,
                rowCount == 0 ? 0.0 : rewardSum / rowCount,
                groupStd,
                tokens == 0 ? 0.0 : (double) clipped / tokens,
                norm,
                path,
                Duration.ofNanos(System.nanoTime() - start));
    }

    /**
     * Step {@code step} (1-based) of a linear warm-up: Adam's update {@code lr · m̂ / (√v̂ + ε)} is
     * linear in the learning rate and its moments do not depend on it, so moving {@code step /
     * warmup} of the way from the old weights to Adam's result is exactly an Adam step with the
     * learning rate scaled by that factor.
     */
    private TinyLmWeights warmedUp(TinyLmWeights before, TinyLmWeights after, int step) {
        int warmup = config.warmupSteps();
        if (step >= warmup) {
            return after;
        }
        double f = (double) step / warmup;
        return TinyLmWeights.of(
                after.version(),
                after.decay(),
                interpolate(before.biasArray(), after.biasArray(), f),
                interpolate(before.bigramArray(), after.bigramArray(), f),
                interpolate(before.contextArray(), after.contextArray(), f));
    }

    private static float[] interpolate(float[] from, float[] to, double f) {
        for (int i = 0; i < to.length; i++) {
            to[i] = (float) (from[i] + f * (to[i] - from[i]));
        }
        return to;
    }

    private static double reward(TensorDict d, TrainingGroup group, int i) {
        Tensor rewards = d.get(TensorDict.REWARDS);
        if (rewards == null || rewards.rank() != 1 || rewards.dim(0) != d.batchSize()) {
            throw new IllegalArgumentException("task " + group.taskId() + ": the group has no 'rewards' [B] tensor"
                    + " (got " + (rewards == null ? "none" : rewards.describe()) + ")");
        }
        double r = rewards.getDouble(i);
        if (!Double.isFinite(r)) {
            throw new IllegalArgumentException("task " + group.taskId() + " row " + i + ": reward is " + r);
        }
        return r;
    }

    static double mean(double[] xs) {
        double s = 0;
        for (double x : xs) {
            s += x;
        }
        return xs.length == 0 ? 0 : s / xs.length;
    }

    /** The unbiased standard deviation (divide by n − 1), as AReaL's default group normalisation; 0 for n &lt; 2. */
    static double unbiasedStd(double[] xs, double mean) {
        if (xs.length < 2) {
            return 0;
        }
        double sq = 0;
        for (double x : xs) {
            sq += (x - mean) * (x - mean);
        }
        return Math.sqrt(sq / (xs.length - 1));
    }

    /**
     * One row cut to its attention length: the tokens, the first generated position (the model's
     * "prompt length"), which later positions are trained on, and their behaviour logprobs.
     */
    private record RowData(
            long taskId,
            int index,
            int[] tokens,
            int first,
            boolean[] trained,
            double[] behaviour,
            int generated,
            double advantage) {

        static RowData of(TensorDict d, int[] lengths, int i, double advantage, long taskId) {
            Tensor ids = d.tensor(TensorDict.INPUT_IDS);
            Tensor lossMask = d.tensor(TensorDict.LOSS_MASK);
            Tensor logprobs = d.tensor(TensorDict.LOGPROBS);
            int width = ids.dim(1);
            int base = i * width;
            int length = lengths[i]; // right padding: the valid length is the row sum (semantics §3.2)
            int first = -1;
            for (int j = 0; j < length; j++) {
                if (lossMask.getLong(base + j) != 0) {
                    first = j;
                    break;
                }
            }
            if (first < 0) {
                return new RowData(taskId, i, new int[0], 0, new boolean[0], new double[0], 0, advantage);
            }
            if (first == 0) {
                throw new IllegalArgumentException("task " + taskId + " row " + i
                        + ": loss_mask is 1 at position 0; the model needs at least one prompt token");
            }
            int[] tokens = new int[length];
            for (int j = 0; j < length; j++) {
                tokens[j] = Math.toIntExact(ids.getLong(base + j));
            }
            boolean[] trained = new boolean[length - first];
            double[] behaviour = new double[length - first];
            int generated = 0;
            for (int j = first; j < length; j++) {
                trained[j - first] = lossMask.getLong(base + j) != 0;
                behaviour[j - first] = logprobs.getDouble(base + j);
                if (trained[j - first]) {
                    generated++;
                }
            }
            return new RowData(taskId, i, tokens, first, trained, behaviour, generated, advantage);
        }
    }

    @Override
    public String toString() {
        return "GrpoTrainer{version=" + weights.version() + ", " + config + ", " + optimizer + "}";
    }
}
