package org.rollout.cli;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigOrigin;
import com.typesafe.config.ConfigParseOptions;
import com.typesafe.config.ConfigValueFactory;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.rollout.api.InvalidConfigException;
import org.rollout.config.ConfigErrors;
import org.rollout.config.RolloutConfig;
import org.rollout.config.RolloutSettings;
import org.rollout.workflows.demo.DemoConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code rollout local}: a whole RL loop on this machine. It starts the built-in model servers on
 * free loopback ports, a one-node engine, the configured workflow ({@code rollout.workflow}, with
 * the user's classes from {@code --classpath}/{@code rollout.classpath}) or the demo (the letters
 * task, or the same task through an agent and the OpenAI-compatible proxy) and the demo GRPO
 * trainer, runs for {@code --steps} training steps with a status line, then prints a summary and
 * exits 0.
 *
 * <p>The demo runs only when asked: {@code --demo}, {@code --workflow demo|agent}, {@code
 * rollout.workflow = demo}, or no {@code rollout.workflow} in the file or overrides at all, which
 * the first output line then says. A configured run must name its dataset, evaluation set (when
 * {@code eval_every} > 0) and tokenizer ({@link NodeAssembly#check}), checked with its classes
 * before any server starts.
 *
 * <p>Configuration: the local defaults (below), then {@code --config}'s file, then {@code
 * key=value} overrides, each over the last; every key and its default is in
 * docs/configuration.md. Dumps, statistics and weight files land under {@code
 * {fileroot}/{experiment_name}/{trial_name}/} ({@code runs/demo/local-<time>-<pid>/} for the demo,
 * {@code runs/local/…} otherwise), which the run claims ({@link RunDirectory}): another run with
 * the same trial name is refused.
 *
 * <p>Ctrl-C (SIGINT) or SIGTERM ends the run early but in order: the status line is ended, the
 * engine closed (its statistics written), a summary of the steps trained so far printed; exit 130.
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

    static final String NO_WORKFLOW = "no workflow configured: running the built-in demo (--demo)";

    @Option(
            names = "--workflow",
            description = "demo (the letters task as a RolloutWorkflow) or agent (the same task as an agent "
                    + "behind the OpenAI-compatible proxy); implies --demo. Your own workflow is rollout.workflow.")
    String workflow;

    @Option(
            names = "--demo",
            description = "Run the built-in letters demo (its prompts, evaluation and tokenizer); implied when no"
                    + " rollout.workflow is configured.")
    boolean demo;

    @Option(
            names = UserClassPath.FLAG,
            paramLabel = "PATH[:PATH...]",
            description = "The user's jars and class directories (dir/* for every jar in dir), for the classes the"
                    + " configuration names (rollout.workflow, reward_fn, rollout.accept); before rollout.classpath.")
    String classpath;

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

    @Option(names = "--debug", description = "On a failure, print its stack trace too.")
    boolean debug;

    @Option(names = "--no-status", description = "Print one line per step instead of a status line in place.")
    boolean noStatus;

    @Option(
            names = "--simulate-gpu",
            description = "Give the model servers a GPU-like latency: decode steps of 5 ms + 1 ms per running "
                    + "sequence and 20 us of prefill per prompt token not in the prefix cache, so weight updates "
                    + "interrupt generations in flight.")
    boolean simulateGpu;

    @Parameters(
            paramLabel = "key=value",
            description = "Configuration overrides, e.g. rollout.max_head_offpolicyness=2.")
    List<String> overrides = new ArrayList<>();

    @Override
    public Integer call() {
        PrintStream out = System.out;
        if (workflow != null && !workflow.equals("demo") && !workflow.equals("agent")) {
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
        boolean agent = "agent".equals(workflow);
        boolean demoRun = demo || workflow != null;
        RolloutSettings settings;
        ClassLoader userClasses;
        try {
            settings =
                    RolloutConfig.load(config, overrides, demoRun ? profile(agent ? "agent" : "demo") : profile(null));
            if (!demoRun && !configured(settings, "rollout.workflow")) {
                out.println(NO_WORKFLOW);
                demoRun = true;
                settings = RolloutConfig.load(config, overrides, profile("demo"));
            }
            demoRun = demoRun || NodeAssembly.isDemoWorkflow(settings);
            userClasses = UserClassPath.of(classpath, settings.config()).loader(LocalCommand.class.getClassLoader());
        } catch (InvalidConfigException | ConfigErrors e) {
            System.err.println("configuration error: " + e.getMessage());
            return 2;
        }
        if (checkOnly != null) {
            return checkOnly.local(settings, demoRun, agent, userClasses);
        }
        // Every class the configuration names is loaded through the user's class path (semantics §8).
        ClassLoader previous = Thread.currentThread().getContextClassLoader();
        Thread.currentThread().setContextClassLoader(userClasses);
        LocalRun run =
                new LocalRun(settings, demoRun, agent, steps, servers, !noStatus && System.console() != null, out);
        if (simulateGpu) {
            run.withLatency(LocalRun.SIMULATED_GPU);
        }
        if (trainer.equals("python")) {
            run.withPythonTrainer();
        }
        if (reuseRunDir) {
            run.reusingRunDirectory();
        }
        Thread main = Thread.currentThread();
        Thread onSignal = new Thread(() -> run.interrupt(main), "local-run-stop");
        Runtime.getRuntime().addShutdownHook(onSignal);
        try {
            boolean completed = run.execute();
            if (run.breakerMessage() != null) {
                String first = run.breakerMessage().lines().findFirst().orElse("");
                System.err.println("rollout local: stopped (exit 3): " + first + "; the message above says more");
                return 3;
            }
            return completed ? 0 : 130;
        } catch (InvalidConfigException | ConfigErrors e) {
            System.err.println("configuration error: " + e.getMessage());
            return 2;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            System.err.println("interrupted");
            return 1;
        } catch (Exception e) {
            if (run.stopping()) {
                // Ctrl-C before training started: whatever was starting failed of the interrupt.
                out.println();
                out.println("Interrupted before training started.");
                return 130;
            }
            Optional<PortInUseException> portInUse = PortInUseException.in(e);
            if (portInUse.isPresent()) {
                System.err.println(portInUse.get().getMessage());
                if (debug) {
                    e.printStackTrace(System.err);
                }
                return 1;
            }
            System.err.println("the run failed: " + e);
            e.printStackTrace(System.err);
            return 1;
        } finally {
            Thread.currentThread().setContextClassLoader(previous);
            run.finished();
            try {
                Runtime.getRuntime().removeShutdownHook(onSignal);
            } catch (IllegalStateException e) {
                // The JVM is already shutting down (the signal came): the hook is waiting for this return.
            }
        }
    }

    /** Set by {@code rollout check-config}: validate as a run would, then stop before anything starts. */
    CheckConfigCommand.Check checkOnly;

    /**
     * True when {@code key} was set by the user (file or override), not only by a default: the
     * merged value's origin is not {@code reference.conf} and not a launcher profile.
     */
    static boolean configured(RolloutSettings settings, String key) {
        if (!settings.config().hasPath(key)) {
            return false;
        }
        ConfigOrigin origin = settings.config().getValue(key).origin();
        return !"reference.conf".equals(origin.resource())
                && !origin.description().contains(PROFILE_ORIGIN);
    }

    private static final String PROFILE_ORIGIN = "rollout local defaults";

    /**
     * The local defaults: the demo's tuned batch and sampling (docs/demo.md), which suit the
     * built-in model a local run always serves, with one step of staleness allowed (η = 1), so
     * generation for step n+1 overlaps training on step n; dumps on. With {@code workflow} ({@code
     * demo} or {@code agent}) it is the demo's profile (experiment {@code demo}; without an eval
     * dataset the run evaluates the 26 letters every {@value LocalRun#DEMO_EVAL_EVERY} versions,
     * or every {@code rollout.eval_every} when that is set above 0); with null, the workflow is
     * the user's and the experiment is {@code local}.
     */
    static Config profile(String workflow) {
        // The process id keeps two runs started in the same second apart.
        String trial = "local-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + "-"
                + ProcessHandle.current().pid();
        Config p = ConfigFactory.parseString(
                """
                rollout {
                  experiment_name = "%s"
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
                                workflow == null ? "local" : "demo",
                                trial,
                                DemoConfig.GROUPS_PER_STEP,
                                2 * DemoConfig.GROUPS_PER_STEP,
                                DemoConfig.GROUP_SIZE,
                                DemoConfig.MAX_NEW_TOKENS,
                                DemoConfig.TEMPERATURE),
                ConfigParseOptions.defaults().setOriginDescription(PROFILE_ORIGIN));
        return workflow == null
                ? p
                : p.withValue("rollout.workflow", ConfigValueFactory.fromAnyRef(workflow, PROFILE_ORIGIN));
    }
}
