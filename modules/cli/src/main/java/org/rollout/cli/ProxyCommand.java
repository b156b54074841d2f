package org.rollout.cli;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigParseOptions;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.rollout.agent.AgentOptions;
import org.rollout.agent.OnlineAgentWorkflow;
import org.rollout.agent.OpenAIProxy;
import org.rollout.api.EpisodeResult;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.TensorDict;
import org.rollout.api.Tokenizer;
import org.rollout.api.WorkflowContext;
import org.rollout.cluster.PromptSource;
import org.rollout.config.ConfigErrors;
import org.rollout.config.RolloutConfig;
import org.rollout.config.RolloutSettings;
import org.rollout.core.DumpResult;
import org.rollout.core.InteractionTensors;
import org.rollout.core.Tokenizers;
import org.rollout.core.TrajectoryDumper;
import org.rollout.inference.RemoteInferenceEngine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code rollout proxy}: the OpenAI-compatible agent proxy on its own, over the model servers of
 * {@code rollout.servers}, for online mode without a cluster or a trainer.
 *
 * <pre>
 *   --sessions N sessions wait at once ─► client: POST /online/claim (admin key) ─► chat … ─► POST …/reward
 *                                                                                            │
 *   run directory ◄── rows of each rewarded session (dump format, rollout/{version}/{task}.jsonl) ◄┘
 * </pre>
 *
 * <p>Each session is an online episode ({@link OnlineAgentWorkflow}): the same claim and reward
 * routes, export style, turn discount and timeouts as online mode inside a node. With {@code
 * rollout.dataset.train} set, session {@code n} carries data item {@code n} (cycling), which the
 * claim returns to the client. The rows are the engine's dumps, so they can be inspected and fed to
 * a trainer later. It runs until {@code --episodes} sessions were rewarded, or until Ctrl-C/SIGTERM
 * (waiting sessions are closed), and prints a summary. For online training against a trainer, run
 * nodes with {@code rollout.agent.mode = online} instead: each node's proxy serves the same routes.
 */
@Command(
        name = "proxy",
        mixinStandardHelpOptions = true,
        description = "Serve the OpenAI-compatible agent proxy on its own over rollout.servers: external clients claim"
                + " online sessions, chat, and post rewards; each rewarded session is written as training rows.")
final class ProxyCommand implements Callable<Integer> {
    private static final String PROFILE_ORIGIN = "rollout proxy's defaults";

    @Option(
            names = "--config",
            description = "A HOCON file with rollout/gconfig settings (rollout.agent.* for the proxy).")
    Path config;

    @Option(
            names = "--servers",
            split = ",",
            paramLabel = "HOST:PORT",
            description = "Model servers, comma-separated (instead of rollout.servers).")
    List<String> servers = new ArrayList<>();

    @Option(
            names = "--sessions",
            defaultValue = "8",
            description = "Online sessions waiting for clients at once (default: ${DEFAULT-VALUE}).")
    int sessions;

    @Option(
            names = "--episodes",
            defaultValue = "0",
            description = "Stop after this many rewarded sessions; 0 runs until Ctrl-C (default: ${DEFAULT-VALUE}).")
    long episodes;

    @Parameters(paramLabel = "key=value", description = "Configuration overrides, e.g. rollout.agent.proxy_port=8000.")
    List<String> overrides = new ArrayList<>();

    private final CountDownLatch done = new CountDownLatch(1);
    private final CountDownLatch finished = new CountDownLatch(1);
    private volatile boolean stopping;

    @Override
    public Integer call() {
        PrintStream out = System.out;
        RolloutSettings settings;
        try {
            if (sessions < 1) {
                throw new InvalidConfigException("--sessions", Integer.toString(sessions), "at least 1");
            }
            if (episodes < 0) {
                throw new InvalidConfigException("--episodes", Long.toString(episodes), "0 (no limit) or more");
            }
            List<String> all = new ArrayList<>(overrides);
            if (!servers.isEmpty()) {
                all.add("rollout.servers=" + quoted(servers));
            }
            settings = RolloutConfig.load(config, all, profile());
            if (settings.servers().isEmpty()) {
                throw new InvalidConfigException(
                        "rollout.servers", "[]", "at least one model server host:port (or --servers)");
            }
        } catch (InvalidConfigException | ConfigErrors e) {
            System.err.println("configuration error: " + e.getMessage());
            return 2;
        }
        Thread main = Thread.currentThread();
        Thread onSignal = new Thread(() -> stop(main), "proxy-stop");
        Runtime.getRuntime().addShutdownHook(onSignal);
        List<AutoCloseable> toClose = new ArrayList<>();
        try {
            return serve(settings, out, toClose);
        } catch (InvalidConfigException | ConfigErrors e) {
            System.err.println("configuration error: " + e.getMessage());
            return 2;
        } catch (Exception e) {
            if (stopping) {
                out.println();
                out.println("Interrupted before the proxy was up.");
                return 130;
            }
            System.err.println("the proxy failed: " + e);
            e.printStackTrace(System.err);
            return 1;
        } finally {
            closeAll(toClose);
            finished.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(onSignal);
            } catch (IllegalStateException e) {
                // The JVM is already shutting down (the signal came): the hook waits for this return.
            }
        }
    }

    private int serve(RolloutSettings settings, PrintStream out, List<AutoCloseable> toClose) throws Exception {
        RolloutSettings.Rollout r = settings.rollout();
        Path runDir = settings.runDirectory()
                .orElseThrow(() ->
                        new InvalidConfigException("rollout.trial_name", r.trialName(), "a non-blank directory name"));
        Tokenizer tokenizer = Tokenizers.load(r.tokenizerPath());
        PromptSource data = settings.dataset().train().isEmpty()
                ? index -> Optional.of(Map.of())
                : DatasetLines.read(
                        "rollout.dataset.train",
                        settings.dataset().train(),
                        true,
                        settings.dataset().shuffleSeed(),
                        settings.dataset().onMalformed());
        RunDirectory claimed = RunDirectory.claim(runDir, r.trialName(), false);
        toClose.add(claimed);
        RemoteInferenceEngine engine = new RemoteInferenceEngine(settings.inferenceConfig());
        toClose.add(engine);
        engine.initialize(message -> {
            out.println(message);
            out.flush();
        });
        AgentOptions options = AgentOptions.from(settings.agent());
        OpenAIProxy proxy = NodeAssembly.startProxy(settings, engine, tokenizer);
        toClose.add(proxy::close);
        TrajectoryDumper dumper = new TrajectoryDumper(r.fileroot(), r.experimentName(), r.trialName(), tokenizer);
        Sessions tally = new Sessions(new OnlineAgentWorkflow(proxy, options), engine, data, dumper, out);
        ExecutorService workers = Executors.newVirtualThreadPerTaskExecutor();
        toClose.add(workers::shutdownNow);

        out.println("proxy listening on " + proxy.baseUrl() + " over "
                + settings.servers().size() + " model server(s); " + sessions + " online session(s) wait at a time");
        out.println("  clients: POST " + proxy.baseUrl() + "/online/claim with 'Authorization: Bearer"
                + " <rollout.agent.admin_api_key>', then chat at the returned base_url and POST its /reward");
        out.println("  rows: " + runDir.resolve("rollout")
                + (episodes > 0 ? "; stops after " + episodes + " rewarded session(s)" : "; Ctrl-C stops"));
        out.flush();
        long started = System.nanoTime();
        for (int i = 0; i < sessions; i++) {
            workers.execute(tally::loop);
        }
        try {
            done.await();
        } catch (InterruptedException e) {
            // Ctrl-C or SIGTERM: close the waiting sessions and summarise.
        }
        tally.stop();
        proxy.close();
        workers.shutdownNow();
        workers.awaitTermination(30, TimeUnit.SECONDS);
        if (stopping) {
            out.println();
            out.println("Interrupted: closing the proxy.");
        }
        out.println(tally.summary(runDir, (System.nanoTime() - started) / 1e9));
        out.flush();
        return stopping ? 130 : 0;
    }

    private void stop(Thread main) {
        stopping = true;
        main.interrupt();
        try {
            if (!finished.await(30, TimeUnit.SECONDS)) {
                System.err.println("the proxy did not stop within 30 s of the signal; exiting anyway");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The sessions' loop and what came of them. */
    private final class Sessions {
        private final OnlineAgentWorkflow workflow;
        private final RemoteInferenceEngine engine;
        private final PromptSource data;
        private final TrajectoryDumper dumper;
        private final PrintStream out;
        private final AtomicLong nextTask = new AtomicLong();
        private final AtomicLong rewarded = new AtomicLong();
        private final AtomicLong rows = new AtomicLong();
        private final Map<String, Long> rejected = new TreeMap<>();
        private volatile boolean closed;

        Sessions(
                OnlineAgentWorkflow workflow,
                RemoteInferenceEngine engine,
                PromptSource data,
                TrajectoryDumper dumper,
                PrintStream out) {
            this.workflow = workflow;
            this.engine = engine;
            this.data = data;
            this.dumper = dumper;
            this.out = out;
        }

        void loop() {
            while (!closed && !Thread.currentThread().isInterrupted()) {
                long taskId = nextTask.getAndIncrement();
                Map<String, Object> item;
                synchronized (data) { // a prompt source need not be thread-safe
                    item = data.item(taskId).orElse(Map.of());
                }
                WorkflowContext ctx = WorkflowContext.builder()
                        .taskId(taskId)
                        .sampleIdx(0)
                        .groupSize(1)
                        .build();
                EpisodeResult result;
                try {
                    result = WorkflowContext.callWith(ctx, () -> workflow.runEpisode(engine, item));
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    if (closed) {
                        return;
                    }
                    // One session's failure (a bad reward, an export error) loses that session only.
                    note("failed", "session " + ctx.episodeKey() + " failed: " + e);
                    continue;
                }
                if (closed) {
                    return;
                }
                switch (result) {
                    case EpisodeResult.Rejected rej ->
                        note("rejected", "session " + ctx.episodeKey() + " rejected: " + rej.reason());
                    case EpisodeResult.Interactions i -> keep(taskId, InteractionTensors.toTensorDict(i, taskId, 0));
                    case EpisodeResult.Trajectory t -> keep(taskId, t.data());
                }
            }
        }

        private void keep(long taskId, TensorDict rowsOfSession) {
            if (dumper.dump(taskId, false, rowsOfSession, engine.version()) instanceof DumpResult.Skipped skipped) {
                note("not written", "session " + taskId + ":0 not written: " + skipped.reason());
                return;
            }
            rows.addAndGet(rowsOfSession.batchSize());
            long n = rewarded.incrementAndGet();
            synchronized (out) {
                out.println("session " + taskId + ":0 rewarded: " + rowsOfSession.batchSize() + " row(s)");
                out.flush();
            }
            if (episodes > 0 && n >= episodes) {
                done.countDown();
            }
        }

        private void note(String outcome, String line) {
            synchronized (out) {
                rejected.merge(outcome, 1L, Long::sum);
                out.println(line);
                out.flush();
            }
        }

        void stop() {
            closed = true;
        }

        String summary(Path runDir, double seconds) {
            synchronized (out) {
                long lost =
                        rejected.values().stream().mapToLong(Long::longValue).sum();
                return String.format(
                        Locale.ROOT,
                        "Done in %.1f s: %d session(s) rewarded, %d row(s) under %s; %d session(s) not kept%s",
                        seconds,
                        rewarded.get(),
                        rows.get(),
                        runDir.resolve("rollout"),
                        lost,
                        lost == 0 ? "" : " " + rejected);
            }
        }
    }

    /** The proxy's defaults under the user's file: experiment {@code proxy}, a trial per start, dumps on. */
    private static Config profile() {
        String trial = "proxy-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + "-"
                + ProcessHandle.current().pid();
        return ConfigFactory.parseString(
                """
                rollout {
                  experiment_name = "proxy"
                  trial_name = "%s"
                  dump_to_file = true
                }
                """.formatted(trial), ConfigParseOptions.defaults().setOriginDescription(PROFILE_ORIGIN));
    }

    private static String quoted(List<String> values) {
        StringBuilder b = new StringBuilder("[");
        for (String v : values) {
            if (b.length() > 1) {
                b.append(", ");
            }
            b.append('"').append(v.strip().replace("\"", "")).append('"');
        }
        return b.append(']').toString();
    }

    private static void closeAll(List<AutoCloseable> toClose) {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            try {
                toClose.get(i).close();
            } catch (Exception e) {
                System.err.println("while shutting down: " + e);
            }
        }
    }
}
