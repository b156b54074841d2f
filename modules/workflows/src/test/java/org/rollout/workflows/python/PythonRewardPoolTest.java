package org.rollout.workflows.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.InvalidConfigException;
import org.rollout.workflows.MultiTurnWorkflow;
import org.rollout.workflows.RLVRWorkflow;
import org.rollout.workflows.TimedRewardFunction;

/**
 * The Python reward pool with real {@code /usr/bin/python3} workers: values and errors across the
 * protocol, a worker killed with SIGKILL mid-call, a hanging function past its timeout, prints and
 * protocol garbage, import errors refused when the workflow is built, and concurrent callers.
 * Calls that must be in flight report so through a local socket; every wait has a deadline.
 */
class PythonRewardPoolTest {
    static final String PYTHON = "/usr/bin/python3";
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Map<String, Object> NO_DATA = Map.of();

    @TempDir
    Path dir;

    private PythonRewardPool.Settings settings;

    @BeforeEach
    void modules() throws IOException {
        write("rw_basic", """
                import os, sys
                print("printed while importing")
                def reward(prompt, completions, prompt_ids, completion_ids, **data):
                    print("printed in a call", prompt, completions)
                    os.write(1, b"written to fd 1 in a call\\n")
                    sys.stdout.flush()
                    return len(prompt) + 10 * len(completions) + sum(prompt_ids) + data.get("x", 0)
                def raises(*args, **data):
                    raise ValueError("no answer in %r" % args[1])
                def text(*args, **data):
                    return "one"
                def pid(*args, **data):
                    return os.getpid()
                def nan(*args, **data):
                    return float("nan")
                def yes(*args, **data):
                    return True
                def garbage(*args, **data):
                    import __main__
                    os.write(__main__.PROTOCOL_OUT_FD, b"this is not json\\n")
                    return 1.0
                def report_then_sleep(*args, port, **data):
                    import socket, time
                    with socket.create_connection(("127.0.0.1", port)) as s:
                        s.sendall(str(os.getpid()).encode())
                    time.sleep(600)
                    return 1.0
                NOT_CALLABLE = 3
                """);
        write("rw_import_error", """
                x = 1 / 0
                def reward(*args, **data):
                    return 1.0
                """);
        settings = new PythonRewardPool.Settings(PYTHON, dir.toString(), 2);
    }

    @AfterEach
    void closePools() {
        PythonRewardPool.closeAll();
        PythonRewardPool.configure(PythonRewardPool.Settings.defaults());
    }

    private void write(String module, String source) throws IOException {
        Files.writeString(dir.resolve(module + ".py"), source);
    }

    private PythonRewardFunction load(String function) throws Exception {
        return PythonRewardFunction.load("python:rw_basic:" + function, settings);
    }

    private static double call(org.rollout.api.RewardFunction f, Map<String, Object> data) throws Exception {
        return f.reward("abc", "xy", new int[] {1, 2}, new int[] {3}, data);
    }

    @Test
    void theFunctionGetsPromptCompletionIdsAndDataAsKeywordsAndPrintsDoNotDisturbTheProtocol() throws Exception {
        PythonRewardFunction f = load("reward");

        // 3 + 10·2 + (1 + 2) + 5: the prompt, the completion, the prompt ids and data["x"] all arrived.
        assertThat(call(f, Map.of("x", 5))).isEqualTo(31.0);
        assertThat(call(f, Map.of("x", 0.5))).isEqualTo(26.5);
        assertThat(f.toString()).isEqualTo("python:rw_basic:reward");
    }

    @Test
    void aFunctionThatRaisesGivesThePythonErrorsLastLineAndItsWorkerServesTheNextCall() throws Exception {
        PythonRewardFunction raises = load("raises");
        List<Long> before = raises.pool().workerPids();

        assertThatThrownBy(() -> call(raises, NO_DATA))
                .isInstanceOf(PythonRewardException.class)
                .hasMessage("python reward rw_basic:raises raised ValueError: no answer in 'xy'");

        assertThat(call(load("reward"), NO_DATA)).isEqualTo(26.0);
        assertThat(raises.pool().workerPids()).isEqualTo(before);
    }

    @Test
    void aNonNumberOrNonFiniteResultIsAnErrorAndABoolCountsAsANumber() throws Exception {
        assertThatThrownBy(() -> call(load("text"), NO_DATA))
                .isInstanceOf(PythonRewardException.class)
                .hasMessageContaining("TypeError: the reward function returned a str, not a number");
        assertThat(call(load("yes"), NO_DATA)).isEqualTo(1.0);
        assertThatThrownBy(() -> call(load("nan"), NO_DATA))
                .isInstanceOf(PythonRewardException.class)
                .hasMessageContaining("ValueError: the reward function returned nan, not a finite number");
    }

    @Test
    void aWorkerKilledMidCallFailsThatSampleAndTheNextCallRunsOnAFreshWorker() throws Exception {
        PythonRewardFunction sleeper = load("report_then_sleep");
        // No retry: the sample gets the last attempt's exception, as TimedRewardFunction gives it.
        TimedRewardFunction timed = new TimedRewardFunction(sleeper, WAIT, 0);
        try (ServerSocket server = listener()) {
            CompletableFuture<Double> sample = CompletableFuture.supplyAsync(
                    () -> {
                        try {
                            return call(timed, Map.of("port", server.getLocalPort()));
                        } catch (Exception e) {
                            throw new java.util.concurrent.CompletionException(e);
                        }
                    },
                    Executors.newVirtualThreadPerTaskExecutor());
            long pid = acceptPid(server);

            // kill -9 the worker while it is inside the call
            Process kill = new ProcessBuilder("kill", "-9", Long.toString(pid)).start();
            assertThat(kill.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            assertThat(kill.exitValue()).isZero();

            assertThatThrownBy(() -> sample.get(WAIT.toSeconds(), TimeUnit.SECONDS))
                    .cause()
                    .isInstanceOf(PythonRewardException.class)
                    .hasMessageContaining("python reward worker pid " + pid + " (rw_basic) exited during a call")
                    .hasMessageContaining("code 137");
            assertThat(sleeper.pool().workerPids()).doesNotContain(pid);
        }
        double next = call(load("pid"), NO_DATA);
        assertThat((long) next).isNotEqualTo(0L).isIn(sleeper.pool().workerPids());
    }

    @Test
    void aCallPastItsTimeoutGivesZeroKillsItsWorkerAndTheNextCallWorks() throws Exception {
        PythonRewardFunction sleeper = load("report_then_sleep");
        TimedRewardFunction timed = new TimedRewardFunction(sleeper, Duration.ofSeconds(2), 1);
        List<Long> hung = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (ServerSocket server = listener()) {
            // Every attempt that got into the function reports its worker; the first attempt runs on
            // the worker started by load(), the retry on a new one (which may time out while starting).
            Thread reports = Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        hung.add(acceptPid(server));
                    }
                } catch (IOException closedOrTimedOut) {
                    // the test closed the socket
                }
            });

            // Two attempts (one retry), each timing out: AReaL's 0.0 after the last timeout.
            assertThat(call(timed, Map.of("port", server.getLocalPort()))).isEqualTo(0.0);
            server.close();
            assertThat(reports.join(WAIT)).isTrue();
        }
        assertThat(hung).hasSizeBetween(1, 2).doesNotHaveDuplicates();
        for (long pid : hung) {
            ProcessHandle.of(pid)
                    .ifPresent(h -> h.onExit()
                            .orTimeout(WAIT.toSeconds(), TimeUnit.SECONDS)
                            .join());
            assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty();
        }
        assertThat(call(load("reward"), NO_DATA)).isEqualTo(26.0);
        assertThat(sleeper.pool().workerPids()).isNotEmpty().doesNotContainAnyElementsOf(hung);
    }

    @Test
    void anInterruptedEpisodeAbortsTheCallAtOnceAndItsWorkerIsNotReused() throws Exception {
        PythonRewardFunction sleeper = load("report_then_sleep");
        TimedRewardFunction timed = new TimedRewardFunction(sleeper, WAIT, 3);
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        try (ServerSocket server = listener()) {
            Thread episode = Thread.ofVirtual().start(() -> {
                try {
                    call(timed, Map.of("port", server.getLocalPort()));
                    outcome.complete(null);
                } catch (Throwable t) {
                    outcome.complete(t);
                }
            });
            long pid = acceptPid(server);

            episode.interrupt(); // the group was cancelled

            assertThat(outcome.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);
            ProcessHandle.of(pid)
                    .ifPresent(h -> h.onExit()
                            .orTimeout(WAIT.toSeconds(), TimeUnit.SECONDS)
                            .join());
            assertThat(sleeper.pool().workerPids()).doesNotContain(pid);
        }
        assertThat(call(load("reward"), NO_DATA)).isEqualTo(26.0);
    }

    @Test
    void aReplyThatIsNotTheProtocolsFailsTheCallClearlyAndReplacesTheWorker() throws Exception {
        PythonRewardFunction garbage = load("garbage");
        List<Long> before = garbage.pool().workerPids();

        assertThatThrownBy(() -> call(garbage, NO_DATA))
                .isInstanceOf(PythonRewardException.class)
                .hasMessageContaining("wrote a reply that is not the protocol's during a call: this is not json");

        assertThat(garbage.pool().workerPids()).doesNotContainAnyElementsOf(before);
        assertThat(call(load("reward"), NO_DATA)).isEqualTo(26.0);
    }

    @Test
    void aModuleThatFailsToImportOrAMissingFunctionIsRefusedWhenTheWorkflowIsBuilt() {
        PythonRewardPool.configure(settings);

        assertThatThrownBy(() -> new RLVRWorkflow(kwargs("python:rw_import_error:reward")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'reward_fn'")
                .hasMessageContaining("import rw_import_error failed: ZeroDivisionError: division by zero");
        assertThatThrownBy(() -> new MultiTurnWorkflow(multiTurnKwargs("python:rw_no_such_module:reward")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'reward_fn'")
                .hasMessageContaining("ModuleNotFoundError: No module named 'rw_no_such_module'");
        assertThatThrownBy(() -> new RLVRWorkflow(kwargs("python:rw_basic:missing")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'reward_fn'")
                .hasMessageContaining(
                        "python reward rw_basic:missing cannot be called: AttributeError: module 'rw_basic' has no"
                                + " attribute 'missing'");
        assertThatThrownBy(() -> new RLVRWorkflow(kwargs("python:rw_basic:NOT_CALLABLE")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("TypeError: rw_basic.NOT_CALLABLE is not callable (int)");
        assertThatThrownBy(() -> new RLVRWorkflow(kwargs("python:rw_basic")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'reward_fn'")
                .hasMessageContaining("python:module.path:function");
    }

    @Test
    void aMissingExecutableIsRefusedWhenTheWorkflowIsBuilt() {
        PythonRewardPool.configure(
                new PythonRewardPool.Settings(dir.resolve("no-python").toString(), "", 1));

        assertThatThrownBy(() -> new RLVRWorkflow(kwargs("python:rw_basic:reward")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'reward_fn'")
                .hasMessageContaining("cannot start python executable '" + dir.resolve("no-python") + "'");
    }

    @Test
    void aPythonNamedRewardInTheKwargsRunsThroughTheConfiguredPool() throws Exception {
        PythonRewardPool.configure(settings);

        RLVRWorkflow workflow = new RLVRWorkflow(kwargs("python:rw_basic:reward"));

        assertThat(workflow.rewardFunction().function()).isInstanceOf(PythonRewardFunction.class);
        assertThat(workflow.rewardFunction().timeout()).isEqualTo(TimedRewardFunction.DEFAULT_TIMEOUT);
        assertThat(workflow.rewardFunction().reward("abc", "xy", new int[] {1, 2}, new int[] {3}, Map.of("x", 1)))
                .isEqualTo(27.0);
    }

    @Test
    void callsFromManyVirtualThreadsShareThePoolsWorkers() throws Exception {
        PythonRewardFunction f = load("reward");
        PythonRewardFunction pid = load("pid");
        List<Future<double[]>> results = new ArrayList<>();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int t = 0; t < 16; t++) {
                int x = t;
                results.add(threads.submit(() -> {
                    double[] values = new double[6];
                    for (int i = 0; i < 5; i++) {
                        values[i] = call(f, Map.of("x", 100 * x + i));
                    }
                    values[5] = call(pid, NO_DATA);
                    return values;
                }));
            }
            Set<Long> pids = new HashSet<>();
            for (int t = 0; t < 16; t++) {
                double[] values = results.get(t).get(WAIT.toSeconds(), TimeUnit.SECONDS);
                for (int i = 0; i < 5; i++) {
                    assertThat(values[i]).isEqualTo(26.0 + 100 * t + i);
                }
                pids.add((long) values[5]);
            }
            // settings.workers() == 2: the 96 calls ran on at most two processes.
            assertThat(pids).hasSizeBetween(1, 2);
            assertThat(f.pool().workerPids()).hasSizeBetween(1, 2).containsAll(pids);
        }
    }

    @Test
    void closingThePoolKillsItsWorkers() throws Exception {
        PythonRewardFunction f = load("reward");
        List<Long> pids = f.pool().workerPids();
        assertThat(pids).isNotEmpty();

        PythonRewardPool.closeAll();

        for (long pid : pids) {
            ProcessHandle.of(pid)
                    .ifPresent(h -> h.onExit()
                            .orTimeout(WAIT.toSeconds(), TimeUnit.SECONDS)
                            .join());
        }
        assertThatThrownBy(() -> call(f, NO_DATA))
                .isInstanceOf(PythonRewardException.class)
                .hasMessageContaining("closed");
    }

    private static String workerScript() throws IOException {
        try (InputStream in = PythonRewardPool.class.getResourceAsStream("reward_worker.py")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test
    void aWorkerExitsWhenItsStdinCloses() throws Exception {
        ProcessBuilder pb = new ProcessBuilder(PYTHON, "-u", "-c", workerScript(), "rw_basic")
                .redirectError(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("PYTHONPATH", dir.toString());
        Process worker = pb.start();
        try {
            String ready = new java.io.BufferedReader(
                            new java.io.InputStreamReader(worker.getInputStream(), StandardCharsets.UTF_8))
                    .readLine();
            assertThat(ready).isEqualTo("{\"ready\": true, \"pid\": " + worker.pid() + "}");

            worker.getOutputStream().close(); // what the JVM's exit does to the pipe

            assertThat(worker.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            assertThat(worker.exitValue()).isZero();
        } finally {
            worker.destroyForcibly();
        }
    }

    @Test
    void aWorkerWhoseParentDiesExitsEvenInsideACall() throws Exception {
        String script = workerScript();
        try (ServerSocket server = listener()) {
            // A shell stands in for the JVM: the worker is its child (in the background, with the shell's
            // stdin, which stays open throughout).
            Process shell = new ProcessBuilder(
                            "/bin/sh",
                            "-c",
                            "exec 3<&0; PYTHONPATH=\"$3\" \"$0\" -u -c \"$1\" \"$2\" <&3 & wait",
                            PYTHON,
                            script,
                            "rw_basic",
                            dir.toString())
                    .redirectError(ProcessBuilder.Redirect.DISCARD)
                    .start();
            try {
                String ready = new java.io.BufferedReader(
                                new java.io.InputStreamReader(shell.getInputStream(), StandardCharsets.UTF_8))
                        .readLine();
                assertThat(ready).startsWith("{\"ready\": true");
                String call = "{\"id\": 1, \"fn\": \"report_then_sleep\", \"prompt\": \"\", \"completion\": \"\","
                        + " \"prompt_ids\": [], \"completion_ids\": [], \"data\": {\"port\": " + server.getLocalPort()
                        + "}}\n";
                shell.getOutputStream().write(call.getBytes(StandardCharsets.UTF_8));
                shell.getOutputStream().flush();
                long pid = acceptPid(server);
                ProcessHandle worker = ProcessHandle.of(pid).orElseThrow();
                assertThat(worker.parent().map(ProcessHandle::pid)).contains(shell.pid());

                shell.destroyForcibly(); // SIGKILL: the worker is orphaned inside a 600 s call

                assertThat(worker.onExit()
                                .orTimeout(WAIT.toSeconds(), TimeUnit.SECONDS)
                                .join()
                                .isAlive())
                        .isFalse();
            } finally {
                shell.destroyForcibly();
            }
        }
    }

    @Test
    void theWorkersParentIsThisJvm() throws Exception {
        List<Long> pids = load("reward").pool().workerPids();

        assertThat(pids).isNotEmpty();
        for (long pid : pids) {
            assertThat(ProcessHandle.of(pid).flatMap(ProcessHandle::parent).map(ProcessHandle::pid))
                    .contains(ProcessHandle.current().pid());
        }
    }

    private static ServerSocket listener() throws IOException {
        ServerSocket server = new ServerSocket(0, 4, java.net.InetAddress.getLoopbackAddress());
        server.setSoTimeout((int) WAIT.toMillis());
        return server;
    }

    /** The pid a worker inside {@code report_then_sleep} sends. */
    private static long acceptPid(ServerSocket server) throws IOException {
        try (Socket s = server.accept()) {
            s.setSoTimeout((int) WAIT.toMillis());
            InputStream in = s.getInputStream();
            return Long.parseLong(new String(in.readAllBytes(), StandardCharsets.US_ASCII).trim());
        }
    }

    static Map<String, Object> kwargs(String rewardFn) {
        return Map.of(
                "reward_fn",
                rewardFn,
                "gconfig",
                org.rollout.api.GenerationConfig.builder().build(),
                "tokenizer",
                org.rollout.core.ByteLevelTokenizer.INSTANCE);
    }

    private static Map<String, Object> multiTurnKwargs(String rewardFn) {
        Map<String, Object> k = new java.util.HashMap<>(kwargs(rewardFn));
        k.put("max_turns", 2);
        k.put("turn_discount", 0.9);
        return k;
    }
}
