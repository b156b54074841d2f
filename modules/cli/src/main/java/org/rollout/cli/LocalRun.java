package org.rollout.cli;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import org.rollout.api.InvalidConfigException;
import org.rollout.cluster.LocalRollout;
import org.rollout.cluster.LocalRolloutClient;
import org.rollout.config.RolloutSettings;
import org.rollout.config.ServerAddress;
import org.rollout.gateway.GatewayConfig;
import org.rollout.gateway.TrainerGateway;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.modelserver.LatencyModel;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.RolloutStatus;
import org.rollout.workflows.demo.DemoConfig;
import org.rollout.workflows.demo.DemoTraining;
import org.rollout.workflows.demo.GrpoTrainer;
import org.rollout.workflows.demo.StepReport;

/**
 * One {@code rollout local} run: everything it starts, in order, and the summary it prints.
 *
 * <pre>
 *   v0 weights ─► model servers (127.0.0.1, free ports) ─► RemoteInferenceEngine
 *   workflow (demo: RLVR + letter reward | agent: LetterAgent through the proxy)
 *   LocalRollout (coordinator, runner, groups, collector, weight version)
 *   GrpoTrainer ◄─ batches ── RolloutClient ── publish v+1 ─► servers load it
 * </pre>
 *
 * Everything started is closed in reverse order, also on failure.
 */
final class LocalRun {
    static final int DEFAULT_STEPS = 250;
    static final int DEMO_EVAL_EVERY = 10;
    /**
     * {@code --simulate-gpu}: decode steps of 5 ms plus 1 ms per running sequence, and 20 µs of
     * prefill per prompt token not in the server's prefix cache. 20 µs is about 50 000 prefill
     * tokens/s, the order of one data-centre GPU prefilling a 7B-class model: a 1 000-token prompt
     * costs 20 ms, four decode steps, so a cache hit saves time as it does on a real server.
     */
    static final LatencyModel SIMULATED_GPU =
            new LatencyModel(Duration.ofNanos(20_000), Duration.ofMillis(5), Duration.ofMillis(1));

    static final String LETTER_AGENT = "org.rollout.examples.agents.LetterAgent";

    private final RolloutSettings settings;
    private final boolean demo;
    private final boolean agent;
    private final int steps;
    private final int serverCount;
    private final boolean statusInPlace;
    private final PrintStream out;
    private final List<AutoCloseable> toClose = new ArrayList<>();
    /** Why the failure breaker stopped the run, or null ({@link FailureWatch}). */
    private volatile String breakerMessage;

    private LatencyModel latency = LatencyModel.NONE;
    private UnaryOperator<RolloutClient> clientDecorator = UnaryOperator.identity();
    private boolean pythonTrainer;
    private boolean reuseRunDir;
    /** Set by {@link #interrupt} (Ctrl-C, SIGTERM): the run ends early, in order, with a summary. */
    private volatile boolean stopping;
    /** The base URL of /metrics, /dashboard and /health once the engine runs (rollout.metrics.port). */
    private volatile URI metricsUri;

    private final CountDownLatch finished = new CountDownLatch(1);

    /**
     * @param demo the letters demo was asked for (its prompts, evaluation and tokenizer fallback)
     * @param agent the demo agent behind the OpenAI-compatible proxy instead of rollout.workflow
     */
    LocalRun(
            RolloutSettings settings,
            boolean demo,
            boolean agent,
            int steps,
            int serverCount,
            boolean statusInPlace,
            PrintStream out) {
        this.settings = settings;
        this.demo = demo;
        this.agent = agent;
        this.steps = steps;
        this.serverCount = serverCount;
        this.statusInPlace = statusInPlace;
        this.out = out;
    }

    /** Makes the model servers take the modelled time per step (a simulated GPU). */
    LocalRun withLatency(LatencyModel model) {
        this.latency = model;
        return this;
    }

    /**
     * Trains with the PyTorch trainer ({@link PythonTrainerProcess}) as its own process, through a
     * trainer gateway on a free loopback port, instead of the Java trainer in this process.
     */
    LocalRun withPythonTrainer() {
        this.pythonTrainer = true;
        return this;
    }

    /** Lets the run write into a run directory an earlier run left ({@link RunDirectory}). */
    LocalRun reusingRunDirectory() {
        this.reuseRunDir = true;
        return this;
    }

    /** Wraps the trainer's client, e.g. to observe every batch in a test. */
    LocalRun withClientDecorator(UnaryOperator<RolloutClient> decorator) {
        this.clientDecorator = decorator;
        return this;
    }

    /** Where /metrics, /dashboard and /health are served, once the engine runs; null before or without. */
    URI metricsUri() {
        return metricsUri;
    }

    /** The workflow's name as the banner and summary show it: the demo agent, or {@code rollout.workflow}. */
    String workflowName() {
        return agent ? "agent" : settings.workflow();
    }

    /**
     * Ends the run early from another thread (a shutdown hook on Ctrl-C or SIGTERM): interrupts
     * {@code runner}, the thread in {@link #execute}, then waits (at most 30 s) until it has closed
     * everything and printed its summary ({@link #finished}).
     */
    void interrupt(Thread runner) {
        stopping = true;
        runner.interrupt();
        try {
            if (!finished.await(30, TimeUnit.SECONDS)) {
                System.err.println("the run did not stop within 30 s of the signal; exiting anyway");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Why the failure breaker stopped the run ({@code rollout.failure_breaker}), or null when it did not. */
    String breakerMessage() {
        return breakerMessage;
    }

    /** True once {@link #interrupt} was called. */
    boolean stopping() {
        return stopping;
    }

    /** Called once the caller of {@link #execute} is done with the run (also after a failure). */
    void finished() {
        finished.countDown();
    }

    /**
     * Runs to {@code steps} and prints the summary.
     *
     * @return true after all the steps; false when {@link #interrupt} ended it early (the summary
     *     then covers the steps done)
     */
    boolean execute() throws Exception {
        long started = System.nanoTime();
        Path runDir = settings.runDirectory()
                .orElseThrow(() -> new InvalidConfigException(
                        "rollout.trial_name", settings.rollout().trialName(), "a non-blank directory name"));
        if (settings.rollout().trainDataParallelSize() != 1) {
            // The local trainer is one process pulling one stream of batches; a trainer of several
            // ranks, each pulling its own, connects to a node's gateway (docs/trainer.md).
            throw new InvalidConfigException(
                    "rollout.train_data_parallel_size",
                    settings.rollout().trainDataParallelSize(),
                    "1 for bin/rollout local, whose trainer is one process; a trainer whose ranks each pull"
                            + " their own batches connects to bin/rollout node's gateway");
        }
        // The classes, kwargs, dataset, evaluation set and tokenizer: refused before anything starts.
        NodeAssembly assembly = new NodeAssembly(settings, demo, agent, toClose).prepare();
        RunDirectory claimed = RunDirectory.claim(runDir, settings.rollout().trialName(), reuseRunDir);
        toClose.add(claimed);
        Path weightsDir = runDir.resolve("weights");
        WeightFiles weightFiles = new WeightFiles(weightsDir, settings.localKeepWeights());
        DemoConfig demo = DemoConfig.defaults().withGconfig(settings.gconfig());
        Path v0 = DemoTraining.initialWeights(demo, weightsDir);
        try {
            List<ServerAddress> addresses = startServers(v0);
            RemoteInferenceEngine engine = new RemoteInferenceEngine(settings.inferenceConfig(addresses));
            toClose.add(engine);
            engine.initialize();
            RolloutSettings.Rollout r = settings.rollout();
            LocalRollout.Spec spec = assembly.spec(engine, runDir.resolve("stats.jsonl"));
            printHeader(runDir, addresses);
            assembly.onlineProxyUrl()
                    .ifPresent(url -> out.println("  online sessions: clients claim them with POST " + url
                            + "/online/claim (Bearer rollout.agent.admin_api_key)"));
            LocalRollout rollout = LocalRollout.start(spec, pekkoConfig());
            toClose.add(rollout);
            Thread runner = Thread.currentThread();
            Optional<FailureWatch> watch =
                    FailureWatch.start(rollout.client(), settings.failureBreaker(), null, message -> {
                        breakerMessage = message;
                        stopping = true;
                        runner.interrupt();
                    });
            watch.ifPresent(toClose::add);
            NodeObservability observability = new NodeObservability("local", engine, rollout.stats(), rollout.client())
                    .withDumper(assembly.dumper());
            watch.ifPresent(observability::withFailureWatch);
            toClose.add(observability);
            RolloutSettings.Metrics metrics = settings.metrics();
            if (metrics.port() >= 0) {
                metricsUri = PortInUseException.binding(
                        "the metrics endpoint",
                        "rollout.metrics.port",
                        metrics.host(),
                        metrics.port(),
                        () -> observability.listen(metrics.host(), metrics.port()));
                out.println("  metrics: " + metricsUri + "/metrics   dashboard: " + metricsUri + "/dashboard");
            }
            GrpoTrainer trainer = new GrpoTrainer(
                    demo.initialWeights(),
                    new GrpoTrainer.Config(
                            demo.learningRate(),
                            demo.warmupSteps(),
                            demo.clipEpsilon(),
                            settings.gconfig().temperature(),
                            weightsDir));
            List<StepReport> reports = new CopyOnWriteArrayList<>();
            if (pythonTrainer) {
                PythonTrainerProcess.Interpreter python = PythonTrainerProcess.interpreter(
                        LocalCommand.configured(settings, "rollout.python.executable")
                                ? settings.python().executable()
                                : null);
                TrainerGateway gateway =
                        TrainerGateway.start(GatewayConfig.defaults(), rollout.client(), observability.gatewayExtras());
                toClose.add(gateway);
                out.println("  trainer: " + PythonTrainerProcess.SCRIPT + " (PyTorch) through the gateway at "
                        + gateway.uri());
                out.println("  python: " + python);
                try {
                    PythonTrainerProcess.run(
                            gateway.uri(),
                            v0,
                            weightsDir,
                            steps,
                            settings.gconfig().temperature(),
                            python,
                            out,
                            reports);
                } catch (Exception e) {
                    if (!stopping) {
                        throw e;
                    }
                }
            } else {
                train(rollout.client(), trainer, started, reports, weightFiles);
            }
            if (stopping) {
                // Ctrl-C: the interrupt is handled; closing and the summary must not see it again.
                Thread.interrupted();
                out.println();
                if (breakerMessage != null) {
                    out.println("Stopped after " + reports.size() + " of " + steps + " steps: " + breakerMessage);
                } else {
                    out.println(
                            "Interrupted after " + reports.size() + " of " + steps + " steps: stopping the engine.");
                }
                drain(rollout.client());
            }
            String finalEvaluation = stopping || reports.isEmpty()
                    ? null
                    : awaitFinalEvaluation(rollout, assembly, reports.getLast().version());
            if (!reports.isEmpty()) {
                pruneWeights(weightFiles, reports.getLast().version());
            }
            RolloutStatus finalStatus = rollout.client().status();
            rollout.close(); // writes the statistics still held, so the summary sees every version
            Summary.print(
                    out,
                    new Summary.Run(
                            Duration.ofNanos(System.nanoTime() - started),
                            reports,
                            finalStatus,
                            rollout.stats().history(),
                            runDir,
                            r.dumpToFile(),
                            workflowName(),
                            assembly.dumper()
                                    .filter(d -> d.writeFailures() > 0)
                                    .map(d -> d.writeFailures() + " write(s) failed, " + d.filesWritten()
                                            + " succeeded; the groups were trained on all the same (last: "
                                            + d.lastWriteFailure().orElse("?") + ")")
                                    .orElse(null),
                            finalEvaluation,
                            weightFiles.summaryLine()));
            return !stopping;
        } finally {
            Thread.interrupted();
            closeAll();
        }
    }

    private List<ServerAddress> startServers(Path v0) throws Exception {
        List<ServerAddress> addresses = new ArrayList<>();
        for (int i = 0; i < serverCount; i++) {
            ModelServer server = ModelServer.start(
                    ModelServerConfig.defaults().withPort(0).withWeightsPath(v0).withLatency(latency));
            toClose.add(server::close);
            addresses.add(new ServerAddress("127.0.0.1", server.port()));
        }
        return addresses;
    }

    /** Small thread pools for two cores; the runtime's blocking work runs on virtual threads. */
    private Config pekkoConfig() {
        return ConfigFactory.parseString("""
                        pekko.loglevel = WARNING
                        pekko.loggers = ["org.apache.pekko.event.slf4j.Slf4jLogger"]
                        pekko.logging-filter = "org.apache.pekko.event.slf4j.Slf4jLoggingFilter"
                        pekko.actor.default-dispatcher.fork-join-executor.parallelism-max = 4
                        pekko.coordinated-shutdown.exit-jvm = off
                        pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                        """).withFallback(settings.config()).withFallback(ConfigFactory.load());
    }

    /**
     * After a stop: lets the groups in flight finish (at most {@link #DRAIN_DEADLINE}) so that every
     * group whose trajectory was dumped is also counted in the statistics. No new training group is
     * admitted meanwhile: with the trainer stopped, the staleness budget runs out.
     */
    private void drain(LocalRolloutClient client) throws InterruptedException {
        long deadline = System.nanoTime() + DRAIN_DEADLINE.toNanos();
        RolloutStatus s = client.status();
        while (s.running() + s.evalRunning() > 0 && System.nanoTime() - deadline < 0) {
            Thread.sleep(DRAIN_POLL.toMillis());
            s = client.status();
        }
        if (s.running() + s.evalRunning() > 0) {
            out.println("  (" + (s.running() + s.evalRunning()) + " groups still running after "
                    + DRAIN_DEADLINE.toSeconds()
                    + " s are cancelled: their trajectories may be dumped without being counted)");
        }
    }

    private static final Duration DRAIN_DEADLINE = Duration.ofSeconds(15);

    /** The longest wait for the evaluation pass over the final weights. */
    static final Duration FINAL_EVALUATION_DEADLINE = Duration.ofMinutes(5);

    /** How long no evaluation group may run before the final pass is taken for skipped. */
    static final Duration FINAL_EVALUATION_IDLE = Duration.ofSeconds(10);

    /**
     * When an evaluation set is configured, waits (at most {@link #FINAL_EVALUATION_DEADLINE}) for
     * the pass over the final weights, which starts as the last version is published when {@code
     * eval_every} divides it and is asked for otherwise, so that the summary shows it.
     *
     * @return a note for the summary when the final weights are not evaluated, else null
     */
    private String awaitFinalEvaluation(LocalRollout rollout, NodeAssembly assembly, int version)
            throws InterruptedException {
        int every = assembly.evalEvery();
        if (assembly.evalItems().isEmpty() || every <= 0) {
            return null;
        }
        if (version % every != 0) {
            // Passes run at multiples of eval_every; the final weights are evaluated all the same.
            rollout.client().evaluateNow(version);
        }
        out.println("  evaluating the final weights v" + version + "...");
        long deadline = System.nanoTime() + FINAL_EVALUATION_DEADLINE.toNanos();
        long idleSince = System.nanoTime();
        while (!evaluated(rollout, version)) {
            long now = System.nanoTime();
            if (now - deadline > 0) {
                return "the evaluation of the final weights v" + version + " did not finish within "
                        + FINAL_EVALUATION_DEADLINE.toMinutes() + " min";
            }
            if (rollout.client().status().evalRunning() > 0) {
                idleSince = now;
            } else if (now - idleSince > FINAL_EVALUATION_IDLE.toNanos()) {
                // A pass due while the previous one still ran is skipped: none runs, none will.
                return "the final weights v" + version + " were not evaluated: no evaluation ran for "
                        + FINAL_EVALUATION_IDLE.toSeconds() + " s (a pass due while the previous one still runs"
                        + " is skipped)";
            }
            Thread.sleep(DRAIN_POLL.toMillis());
        }
        return null;
    }

    private static boolean evaluated(LocalRollout rollout, int version) {
        return rollout.stats().history().stream()
                .anyMatch(l -> l.scope().equals("eval-rollout") && l.version() == version);
    }

    /** Deletes the weight files beyond rollout.local.keep_weights; a failure to is noted, not fatal. */
    private void pruneWeights(WeightFiles files, int current) {
        try {
            files.prune(current);
        } catch (IOException e) {
            out.println("  (could not delete old weight files: " + e + ")");
        }
    }

    private static final Duration DRAIN_POLL = Duration.ofMillis(100);

    /** Trains into {@code reports}; returns normally when {@link #interrupt} ended it early. */
    private void train(
            LocalRolloutClient client,
            GrpoTrainer trainer,
            long started,
            List<StepReport> reports,
            WeightFiles weightFiles)
            throws Exception {
        RolloutClient trainerClient = clientDecorator.apply(client);
        AtomicReference<StepReport> last = new AtomicReference<>();
        StatusLine status = new StatusLine(steps, started);
        ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "status-line");
            t.setDaemon(true);
            return t;
        });
        if (statusInPlace) {
            ticker.scheduleAtFixedRate(
                    () -> {
                        try {
                            out.print("\r" + status.render(last.get(), client.status(), client.coordinatorStatus()));
                            out.flush();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        } catch (RuntimeException e) {
                            // The engine is shutting down; the next tick or the summary reports.
                        }
                    },
                    250,
                    500,
                    TimeUnit.MILLISECONDS);
        }
        try {
            DemoTraining.run(trainerClient, trainer, steps, report -> {
                reports.add(report);
                last.set(report);
                // Published to every server: older files beyond rollout.local.keep_weights are not needed.
                pruneWeights(weightFiles, report.version());
                if (!statusInPlace) {
                    try {
                        out.println(status.render(report, client.status(), client.coordinatorStatus()));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            });
        } catch (Exception e) {
            // An interrupt may surface as the trainer's weight file failing to write (its partial
            // temporary file is deleted): either way, a stop asked for is not a failure.
            if (!stopping) {
                throw e;
            }
        } finally {
            boolean interrupted = Thread.interrupted();
            ticker.shutdownNow();
            ticker.awaitTermination(5, TimeUnit.SECONDS);
            if (statusInPlace && last.get() != null && !stopping) {
                out.println("\r" + status.render(last.get(), client.status(), client.coordinatorStatus()));
            }
            if (interrupted && !stopping) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void printHeader(Path runDir, List<ServerAddress> addresses) {
        RolloutSettings.Dataset d = settings.dataset();
        // The letters task only where the demo's prompts are used; otherwise the configured reward and data.
        String task = demo && d.train().isEmpty() ? " (letters task)" : rewardName();
        out.println(
                "Rollout Engine: local run of the " + workflowName() + " workflow" + task + ", " + steps + " steps");
        if (!d.train().isEmpty()) {
            out.println("  dataset: " + d.train() + (d.eval().isEmpty() ? "" : "   eval: " + d.eval())
                    + "   tokenizer: " + settings.rollout().tokenizerPath());
        }
        if (settings.rollout().evalWorkflow() != null) {
            out.println("  evaluation workflow: " + settings.evalWorkflow()
                    + (settings.rollout().evalWorkflowKwargs() != null ? " " + settings.evalWorkflowKwargs() : ""));
        }
        out.println("  model servers: " + addresses + "   run directory: " + runDir);
        settings.warnings().forEach(w -> out.println("  note: " + w));
        if (!Files.isDirectory(runDir)) {
            out.println("  (the run directory is created as dumps arrive)");
        }
    }

    /** " with reward_fn NAME" when the workflow's kwargs name one by a string. */
    private String rewardName() {
        Object reward = settings.workflowKwargs().get("reward_fn");
        return reward instanceof String name ? " with reward_fn " + name : "";
    }

    private void closeAll() {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            try {
                toClose.get(i).close();
            } catch (Exception e) {
                System.err.println("while shutting down: " + e);
            }
        }
        toClose.clear();
    }
}
