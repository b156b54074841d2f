package org.rollout.cli;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.rollout.api.InvalidConfigException;
import org.rollout.config.ConfigErrors;
import org.rollout.config.RolloutConfig;
import org.rollout.config.RolloutSettings;
import org.rollout.examples.demo.DemoConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code rollout local}: a whole RL loop on this machine. It starts the built-in model servers on
 * free loopback ports, a one-node engine, the demo workflow (the letters task, or the same task
 * through an agent and the OpenAI-compatible proxy) and the demo GRPO trainer, runs for {@code
 * --steps} training steps with a status line, then prints a summary and exits 0.
 *
 * <p>Configuration: the demo's defaults (below), then {@code --config}'s file, then {@code
 * key=value} overrides, each over the last; every key and its default is in
 * docs/configuration.md. Dumps, statistics and weight files land under {@code
 * {fileroot}/{experiment_name}/{trial_name}/} ({@code runs/demo/local-<time>-<pid>/} by default),
 * which the run claims ({@link RunDirectory}): another run with the same trial name is refused.
 */
@Command(
        name = "local",
        mixinStandardHelpOptions = true,
        description = "Run a whole RL loop locally: built-in model servers, a one-node engine, the demo trainer.")
final class LocalCommand implements Callable<Integer> {

    @Option(
            names = "--steps",
            defaultValue = "" + LocalRun.DEFAULT_STEPS,
            description = "Training steps (weight versions) to run (default: ${DEFAULT-VALUE}).")
    int steps;

    @Option(
            names = "--servers",
            defaultValue = "2",
            description = "Built-in model servers to start (default: ${DEFAULT-VALUE}).")
    int servers;

    @Option(
            names = "--workflow",
            defaultValue = "demo",
            description = "demo (the letters task as a RolloutWorkflow) or agent (the same task as an agent "
                    + "behind the OpenAI-compatible proxy) (default: ${DEFAULT-VALUE}).")
    String workflow;

    @Option(
            names = "--trainer",
            defaultValue = "java",
            description =
                    "java (the demo GRPO trainer in this process) or python (the PyTorch GRPO trainer of "
                            + "clients/python/examples as its own process, through a trainer gateway) (default: ${DEFAULT-VALUE}).")
    String trainer;

    @Option(names = "--config", description = "A HOCON file with rollout/gconfig/eval_gconfig/actor settings.")
    Path config;

    @Option(
            names = "--reuse-run-dir",
            description =
                    "Write into the run directory of an earlier run with the same trial name (its stats.jsonl "
                            + "is appended to; dumps of the same version and task are replaced). Without it such a run is refused.")
    boolean reuseRunDir;

    @Option(names = "--no-status", description = "Print one line per step instead of a status line in place.")
    boolean noStatus;

    @Option(
            names = "--simulate-gpu",
            description = "Give the model servers a GPU-like latency: decode steps of 5 ms + 1 ms per running "
                    + "sequence, so weight updates interrupt generations in flight.")
    boolean simulateGpu;

    @Parameters(
            paramLabel = "key=value",
            description = "Configuration overrides, e.g. rollout.max_head_offpolicyness=2.")
    List<String> overrides = new ArrayList<>();

    @Override
    public Integer call() {
        PrintStream out = System.out;
        if (!workflow.equals("demo") && !workflow.equals("agent")) {
            System.err.println("invalid value for '--workflow': \"" + workflow + "\" (allowed: demo or agent)");
            return 2;
        }
        if (!trainer.equals("java") && !trainer.equals("python")) {
            System.err.println("invalid value for '--trainer': \"" + trainer + "\" (allowed: java or python)");
            return 2;
        }
        if (steps < 1 || servers < 1) {
            System.err.println("--steps and --servers must be at least 1");
            return 2;
        }
        RolloutSettings settings;
        try {
            settings = RolloutConfig.load(config, overrides, profile(workflow));
        } catch (InvalidConfigException | ConfigErrors e) {
            System.err.println("configuration error: " + e.getMessage());
            return 2;
        }
        LocalRun run = new LocalRun(settings, workflow, steps, servers, !noStatus && System.console() != null, out);
        if (simulateGpu) {
            run.withLatency(LocalRun.SIMULATED_GPU);
        }
        if (trainer.equals("python")) {
            run.withPythonTrainer();
        }
        if (reuseRunDir) {
            run.reusingRunDirectory();
        }
        try {
            run.execute();
            return 0;
        } catch (InvalidConfigException e) {
            System.err.println("configuration error: " + e.getMessage());
            return 2;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            System.err.println("interrupted");
            return 1;
        } catch (Exception e) {
            System.err.println("the run failed: " + e);
            e.printStackTrace(System.err);
            return 1;
        }
    }

    /**
     * The demo's defaults: the tuned letters task (docs/demo.md) with one step of staleness allowed
     * (η = 1), so generation for step n+1 overlaps training on step n; dumps on. (Without an eval
     * dataset the run evaluates the 26 letters every {@value LocalRun#DEMO_EVAL_EVERY} versions, or
     * every {@code rollout.eval_every} when that is set above 0.)
     */
    static Config profile(String workflow) {
        // The process id keeps two runs started in the same second apart.
        String trial = "local-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + "-"
                + ProcessHandle.current().pid();
        return ConfigFactory.parseString("""
                rollout {
                  workflow = "%s"
                  experiment_name = "demo"
                  trial_name = "%s"
                  consumer_batch_size = %d
                  max_concurrent_rollouts = %d
                  max_head_offpolicyness = 1
                  dump_to_file = true
                }
                gconfig {
                  n_samples = %d
                  max_new_tokens = %d
                  temperature = %s
                }
                """.formatted(
                        workflow,
                        trial,
                        DemoConfig.GROUPS_PER_STEP,
                        2 * DemoConfig.GROUPS_PER_STEP,
                        DemoConfig.GROUP_SIZE,
                        DemoConfig.MAX_NEW_TOKENS,
                        DemoConfig.TEMPERATURE));
    }
}
