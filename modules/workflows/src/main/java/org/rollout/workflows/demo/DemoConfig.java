package org.rollout.workflows.demo;

import java.nio.file.Path;
import java.util.Objects;
import org.rollout.api.GenerationConfig;
import org.rollout.modelserver.TinyLmWeights;

/**
 * The letters demo's knobs. The defaults are tuned (see {@code docs/demo.md} for the measurements)
 * so that {@link #steps()} steps lift the mean reward from about 0.07 to about 0.8, well within a
 * minute on a two-core machine.
 *
 * @param weightsSeed the seed of the initial weights
 * @param initStd the standard deviation of the initial weights
 * @param decay the model's context decay λ (not trained); 1 makes the context bag the plain token
 *     counts, so the eight copies of the letter in the prompt weigh the same at every position
 * @param gconfig sampling parameters; {@code n_samples} is the group size
 * @param groupsPerStep prompts (groups) per training batch: the engine's {@code consumer_batch_size}
 * @param learningRate Adam's step size
 * @param warmupSteps steps over which the learning rate rises linearly to {@code learningRate}
 * @param clipEpsilon PPO's ε
 * @param steps training steps of a demo run
 * @param promptSeed the seed of {@link LetterTask#item(long, long)}
 */
public record DemoConfig(
        long weightsSeed,
        double initStd,
        float decay,
        GenerationConfig gconfig,
        int groupsPerStep,
        double learningRate,
        int warmupSteps,
        double clipEpsilon,
        int steps,
        long promptSeed) {

    // The tuned defaults, also for the CLI's configuration defaults (measurements: docs/demo.md).
    public static final int GROUP_SIZE = 8;
    public static final int MAX_NEW_TOKENS = 8;
    public static final double TEMPERATURE = 1.0;
    public static final int GROUPS_PER_STEP = 26;
    public static final double LEARNING_RATE = 0.5;
    public static final int WARMUP_STEPS = 20;
    public static final double CLIP_EPSILON = 0.2;
    public static final int STEPS = 40;
    public static final float DECAY = 1.0f;
    public static final long WEIGHTS_SEED = 1L;

    public DemoConfig {
        Objects.requireNonNull(gconfig, "gconfig");
        if (groupsPerStep < 1) {
            throw new IllegalArgumentException("groups per step must be >= 1, got " + groupsPerStep);
        }
        if (steps < 0) {
            throw new IllegalArgumentException("steps must be >= 0, got " + steps);
        }
    }

    /** The tuned defaults. */
    public static DemoConfig defaults() {
        return new DemoConfig(
                WEIGHTS_SEED,
                TinyLmWeights.DEFAULT_INIT_STD,
                DECAY,
                GenerationConfig.builder()
                        .nSamples(GROUP_SIZE)
                        .maxNewTokens(MAX_NEW_TOKENS)
                        .temperature(TEMPERATURE)
                        .build(),
                GROUPS_PER_STEP,
                LEARNING_RATE,
                WARMUP_STEPS,
                CLIP_EPSILON,
                STEPS,
                LetterTask.DEFAULT_SEED);
    }

    /** The initial weights (version 0). */
    public TinyLmWeights initialWeights() {
        return TinyLmWeights.seeded(weightsSeed, initStd, decay);
    }

    /** The trainer's configuration, writing weights under {@code weightsDir}. */
    public GrpoTrainer.Config trainerConfig(Path weightsDir) {
        return new GrpoTrainer.Config(
                learningRate, warmupSteps, clipEpsilon, gconfig.effectiveTemperature(), weightsDir);
    }

    public DemoConfig withGconfig(GenerationConfig g) {
        return new DemoConfig(
                weightsSeed,
                initStd,
                decay,
                g,
                groupsPerStep,
                learningRate,
                warmupSteps,
                clipEpsilon,
                steps,
                promptSeed);
    }

    public DemoConfig withGroupsPerStep(int n) {
        return new DemoConfig(
                weightsSeed, initStd, decay, gconfig, n, learningRate, warmupSteps, clipEpsilon, steps, promptSeed);
    }

    public DemoConfig withLearningRate(double lr, int warmup) {
        return new DemoConfig(
                weightsSeed, initStd, decay, gconfig, groupsPerStep, lr, warmup, clipEpsilon, steps, promptSeed);
    }

    public DemoConfig withSteps(int n) {
        return new DemoConfig(
                weightsSeed,
                initStd,
                decay,
                gconfig,
                groupsPerStep,
                learningRate,
                warmupSteps,
                clipEpsilon,
                n,
                promptSeed);
    }

    public DemoConfig withSeeds(long weights, long prompts) {
        return new DemoConfig(
                weights,
                initStd,
                decay,
                gconfig,
                groupsPerStep,
                learningRate,
                warmupSteps,
                clipEpsilon,
                steps,
                prompts);
    }

    public DemoConfig withDecay(float d) {
        return new DemoConfig(
                weightsSeed,
                initStd,
                d,
                gconfig,
                groupsPerStep,
                learningRate,
                warmupSteps,
                clipEpsilon,
                steps,
                promptSeed);
    }
}
