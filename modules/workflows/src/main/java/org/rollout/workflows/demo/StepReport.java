package org.rollout.workflows.demo;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * What one {@link GrpoTrainer#step} did, for the demo's progress line and for tests.
 *
 * @param version the weight version the step produced (the trainer's step count)
 * @param batchId the batch trained on
 * @param groups the batch's groups (prompts)
 * @param rows the batch's trajectory rows
 * @param tokens the generated tokens trained on (loss_mask = 1 within the attention length)
 * @param meanReward the mean raw {@code rewards} over all rows
 * @param groupRewardStd per group, in batch order, the standard deviation of its rewards (0: the
 *     group taught nothing)
 * @param clipFraction the fraction of tokens whose PPO ratio was clipped
 * @param gradientNorm the L2 norm of the policy gradient before the optimizer step
 * @param weightsPath where the new weights were written
 * @param trainTime the wall time of the step, writing included
 */
public record StepReport(
        int version,
        long batchId,
        int groups,
        int rows,
        long tokens,
        double meanReward,
        List<Double> groupRewardStd,
        double clipFraction,
        double gradientNorm,
        Path weightsPath,
        Duration trainTime) {

    public StepReport {
        groupRewardStd = List.copyOf(groupRewardStd);
        Objects.requireNonNull(weightsPath, "weightsPath");
        Objects.requireNonNull(trainTime, "trainTime");
    }

    /** The mean of {@link #groupRewardStd()}, 0 without groups. */
    public double meanGroupRewardStd() {
        return groupRewardStd.stream()
                .mapToDouble(Double::doubleValue)
                .average()
                .orElse(0);
    }

    /** One line: {@code v12 reward 0.412 spread 0.183 tokens 512 clip 0.02 |g| 0.031 97 ms}. */
    public String summary() {
        return String.format(
                Locale.ROOT,
                "v%d reward %.3f spread %.3f tokens %d clip %.3f |g| %.4f %d ms",
                version,
                meanReward,
                meanGroupRewardStd(),
                tokens,
                clipFraction,
                gradientNorm,
                trainTime.toMillis());
    }
}
