package org.rollout.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.TensorDict;
import org.rollout.api.WorkflowContext;
import org.rollout.api.WorkflowContractException;
import org.rollout.config.InferenceConfig;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.core.TrajectoryFormatChecker;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.modelserver.LatencyModel;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;

/**
 * Python workflows ({@code modules/python/src/test/python/jvm_toys.py}) run by real worker
 * processes ({@code /usr/bin/python3}) through the real inference engine against real built-in
 * model servers: rows, rejections, errors, bad tensors, cancellation, hung and killed workers.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PythonWorkflowTest {
    static final String PYTHON = "/usr/bin/python3";
    static final Path CLIENT = Path.of(System.getProperty("user.dir"), "..", "..", "clients", "python")
            .toAbsolutePath()
            .normalize();
    static final Path TOYS =
            Path.of(System.getProperty("user.dir"), "src", "test", "python").toAbsolutePath();
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final GenerationConfig G =
            GenerationConfig.builder().maxNewTokens(8).build();

    private ModelServer server;
    private ModelServer slowServer;
    private RemoteInferenceEngine engine;
    private RemoteInferenceEngine slowEngine;
    private PythonWorkflow echo;

    static PythonWorkflowPool.Settings settings(int workers) {
        return new PythonWorkflowPool.Settings(PYTHON, TOYS.toString(), CLIENT, workers, Duration.ofSeconds(60));
    }

    @BeforeAll
    void start() throws Exception {
        server = ModelServer.start(ModelServerConfig.defaults());
        // 20 ms a token: a 2 000-token generation runs for 40 s unless it is aborted.
        slowServer = ModelServer.start(ModelServerConfig.defaults()
                .withLatency(new LatencyModel(Duration.ZERO, Duration.ofMillis(20), Duration.ZERO)));
        engine = engine(server);
        slowEngine = engine(slowServer);
        echo = new PythonWorkflow(
                PythonWorkflowPool.start("jvm_toys:Echo", Map.of(), G, ByteLevelTokenizer.INSTANCE, settings(2)), G);
    }

    private static RemoteInferenceEngine engine(ModelServer s) {
        return new RemoteInferenceEngine(InferenceConfig.builder()
                .addresses("127.0.0.1:" + s.port())
                .requestTimeout(Duration.ofSeconds(60))
                .build());
    }

    @AfterAll
    void stop() {
        if (echo != null) {
            echo.close();
        }
        for (AutoCloseable c : new AutoCloseable[] {engine, slowEngine, server, slowServer}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception ignored) {
                // closing anyway
            }
        }
    }

    private static Map<String, Object> item(String mode) {
        Map<String, Object> d = new HashMap<>();
        d.put("ids", List.of(72, 105, 10));
        d.put("mode", mode);
        d.put("id", 7);
        return d;
    }

    private static EpisodeResult run(
            PythonWorkflow w,
            RemoteInferenceEngine e,
            Map<String, Object> data,
            int slot,
            Map<String, List<Double>> stats)
            throws Exception {
        WorkflowContext ctx = WorkflowContext.builder()
                .taskId(41)
                .sampleIdx(slot)
                .groupSize(8)
                .stats((k, v) ->
                        stats.computeIfAbsent(k, x -> new ArrayList<>()).add(v))
                .build();
        return WorkflowContext.callWith(ctx, () -> w.runEpisode(e, data));
    }

    /** Polls {@code done} every 20 ms until it holds, failing after {@code within}. */
    static void until(String what, Duration within, java.util.concurrent.Callable<Boolean> done) throws Exception {
        long deadline = System.nanoTime() + within.toNanos();
        while (!done.call()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + within + ": " + what);
            }
            Thread.sleep(20);
        }
    }

    @Test
    void aGroupOfEpisodesGivesRowsOfRealGenerationsAndTheirStats() throws Exception {
        Map<String, List<Double>> stats = new ConcurrentHashMap<>();
        long before = server.stats().requestsFinished();
        List<Future<EpisodeResult>> slots = new ArrayList<>();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int slot = 0; slot < 8; slot++) {
                int s = slot;
                slots.add(threads.submit(() -> run(echo, engine, item(s % 2 == 0 ? "row" : "two"), s, stats)));
            }
            for (Future<EpisodeResult> f : slots) {
                EpisodeResult r = f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                assertThat(r).isInstanceOf(EpisodeResult.Trajectory.class);
                TensorDict row = ((EpisodeResult.Trajectory) r).data();
                long[] ids = row.int64("input_ids").toArray();
                int[] versions = row.int32("versions").toArray();
                assertThat(ids).startsWith(72, 105, 10);
                assertThat(ids.length).isBetween(4, 11);
                assertThat(versions).startsWith(-1, -1, -1);
                for (int i = 3; i < versions.length; i++) {
                    assertThat(versions[i])
                            .as("version of generated token %d", i)
                            .isEqualTo(0);
                }
                assertThat(row.bool("attention_mask").shape()).containsExactly(1, ids.length);
                assertThat(row.float32("rewards").shape()).containsExactly(1);
            }
        }
        // Four episodes generated once, four twice (asyncio.gather of two agenerate calls).
        assertThat(server.stats().requestsFinished() - before).isEqualTo(12);
        assertThat(stats.get("seen")).hasSize(8).containsOnly(1.0);
        assertThat(stats.get("reward")).hasSize(8).allSatisfy(v -> assertThat(v).isBetween(1.0, 8.0));
    }

    @Test
    void noneRejectsTheSlotAndARaiseFailsItNamingTheClass() throws Exception {
        Map<String, List<Double>> stats = new ConcurrentHashMap<>();
        assertThat(run(echo, engine, item("none"), 0, stats)).isEqualTo(EpisodeResult.rejected("returned_none"));
        assertThatThrownBy(() -> run(echo, engine, item("raise"), 1, stats))
                .isInstanceOf(PythonWorkflowException.class)
                .hasMessage("Echo.arun_episode: ValueError: no answer for item 7")
                .satisfies(e -> assertThat(((PythonWorkflowException) e).pythonTraceback())
                        .contains("Traceback", "raise ValueError"));
    }

    @Test
    void badTensorsAreRefusedNamingTheWorkflowAndTheTensor() throws Exception {
        Map<String, List<Double>> stats = new ConcurrentHashMap<>();
        assertThatThrownBy(() -> run(echo, engine, item("bad_dtype"), 0, stats))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessageContaining("jvm_toys:Echo.arun_episode returned tensor 'rewards': dtype complex128");
        assertThatThrownBy(() -> run(echo, engine, item("rank3"), 0, stats))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessageContaining("jvm_toys:Echo.arun_episode returned tensor 'rewards': it has shape [1, 1, 1]");
        assertThatThrownBy(() -> run(echo, engine, item("ragged"), 0, stats))
                .isInstanceOf(PythonWorkflowException.class)
                .hasMessageStartingWith("Echo.arun_episode: ValueError: tensor 'loss_mask' is not a rectangular array");
        // A missing key is the format checker's, as for a Java workflow.
        EpisodeResult missing = run(echo, engine, item("missing_key"), 0, stats);
        assertThatThrownBy(() -> new TrajectoryFormatChecker().check(41, 0, missing))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessageContaining("attention_mask");
    }

    @Test
    void aCancelledEpisodeEndsPromptlyAndAbortsItsGenerationOnTheServer() throws Exception {
        Map<String, Object> long_ = item("row");
        long_.put("gconfig", Map.of("max_new_tokens", 2000, "ignore_eos", true));
        long abortedBefore = slowServer.stats().requestsAborted();
        AtomicReference<Throwable> ended = new AtomicReference<>();
        Thread t = Thread.ofVirtual().start(() -> {
            try {
                run(echo, slowEngine, long_, 0, new ConcurrentHashMap<>());
            } catch (Throwable e) {
                ended.set(e);
            }
        });
        until(
                "the generation running on the slow server",
                WAIT,
                () -> slowServer.stats().running() > 0);
        long cancelled = System.nanoTime();
        t.interrupt();
        assertThat(t.join(Duration.ofSeconds(10)))
                .as("the episode ended within 10 s of its cancellation")
                .isTrue();
        assertThat(ended.get()).isInstanceOf(InterruptedException.class);
        until("the server aborted the request", WAIT, () -> slowServer.stats().requestsAborted() > abortedBefore);
        assertThat(Duration.ofNanos(System.nanoTime() - cancelled)).isLessThan(Duration.ofSeconds(20));

        // An episode awaiting something else (asyncio.sleep) is cancelled in its worker too, which lives on.
        List<Long> pids = echo.pool().workerPids();
        Path started = Files.createTempDirectory("sleep").resolve("started");
        Map<String, Object> sleeping = item("sleep");
        sleeping.put("started", started.toString());
        Thread s = Thread.ofVirtual().start(() -> {
            try {
                run(echo, engine, sleeping, 0, new ConcurrentHashMap<>());
            } catch (Throwable e) {
                ended.set(e);
            }
        });
        until("the episode's task running", WAIT, () -> Files.exists(started));
        s.interrupt();
        assertThat(s.join(Duration.ofSeconds(10))).isTrue();
        assertThat(ended.get()).isInstanceOf(InterruptedException.class);
        assertThat(echo.pool().workerPids()).containsAll(pids);
    }

    @Test
    void aHungWorkerIsKilledAtCancellationAndAKilledOneFailsOnlyItsEpisodes(@TempDir Path dir) throws Exception {
        try (PythonWorkflow w =
                new PythonWorkflow(PythonWorkflowPool.start("jvm_toys:Echo", Map.of(), G, null, settings(1)), G)) {
            // An episode that blocks the event loop (time.sleep) cannot be cancelled: its worker is killed.
            long hung = w.pool().workerPids().getFirst();
            AtomicReference<Throwable> ended = new AtomicReference<>();
            Path started = dir.resolve("started");
            Map<String, Object> blocking = item("block");
            blocking.put("started", started.toString());
            Thread t = Thread.ofVirtual().start(() -> {
                try {
                    run(w, engine, blocking, 0, new ConcurrentHashMap<>());
                } catch (Throwable e) {
                    ended.set(e);
                }
            });
            until("the blocking episode running", WAIT, () -> Files.exists(started));
            t.interrupt();
            assertThat(t.join(PythonEpisode.CANCEL_GRACE.plusSeconds(10))).isTrue();
            assertThat(ended.get()).isInstanceOf(InterruptedException.class);
            until(
                    "the hung worker gone",
                    WAIT,
                    () -> ProcessHandle.of(hung).isEmpty()
                            || !ProcessHandle.of(hung).get().isAlive());

            // The next episode gets a fresh worker.
            assertThat(run(w, engine, item("row"), 0, new ConcurrentHashMap<>()))
                    .isInstanceOf(EpisodeResult.Trajectory.class);
            assertThat(w.pool().workerPids()).doesNotContain(hung).hasSize(1);

            // A worker killed mid-episode fails that episode, naming the worker; the next one runs.
            Path pidFile = dir.resolve("pid");
            Map<String, Object> d = item("pid");
            d.put("pid_file", pidFile.toString());
            Future<EpisodeResult> f;
            try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
                f = threads.submit(() -> run(w, engine, d, 0, new ConcurrentHashMap<>()));
                until(
                        "the episode wrote its worker's pid",
                        WAIT,
                        () -> Files.exists(pidFile)
                                && !Files.readString(pidFile).isBlank());
                long pid = Long.parseLong(Files.readString(pidFile).strip());
                ProcessHandle.of(pid).orElseThrow().destroyForcibly();
                assertThatThrownBy(() -> f.get(WAIT.toSeconds(), TimeUnit.SECONDS))
                        .hasCauseInstanceOf(PythonWorkflowException.class)
                        .hasMessageContaining("python workflow worker pid " + pid + " (jvm_toys:Echo) died");
            }
            assertThat(run(w, engine, item("row"), 0, new ConcurrentHashMap<>()))
                    .isInstanceOf(EpisodeResult.Trajectory.class);
        }
    }

    @Test
    void aWorkflowThatCannotLoadIsRefusedNamingIt() {
        assertThatThrownBy(() -> PythonWorkflowPool.start("jvm_toys:Missing", Map.of(), G, null, settings(1)))
                .isInstanceOf(WorkflowRefusedException.class)
                .hasMessageContaining("jvm_toys:Missing")
                .hasMessageContaining("has no attribute 'Missing'");
        assertThatThrownBy(() -> PythonWorkflowPool.start("no_such_module:X", Map.of(), G, null, settings(1)))
                .isInstanceOf(WorkflowRefusedException.class)
                .hasMessageContaining("importing no_such_module failed");
        assertThatThrownBy(() -> PythonWorkflowPool.start("jvm_toys:NotAWorkflow", Map.of(), G, null, settings(1)))
                .isInstanceOf(WorkflowRefusedException.class)
                .hasMessageContaining("not a workflow class");
        assertThatThrownBy(
                        () -> PythonWorkflowPool.start("jvm_toys:NeedsKwarg", Map.of("other", 1), G, null, settings(1)))
                .isInstanceOf(WorkflowRefusedException.class)
                .hasMessageContaining("refused its arguments");
    }
}
