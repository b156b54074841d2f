package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.config.ServerLaunch;
import org.rollout.modelserver.ModelServerMain;

/**
 * {@link ServerLauncher} with real processes: built-in model servers launched from a command
 * template, one killed with SIGKILL while generations are in flight, restarted by its supervisor,
 * and every generation completes.
 */
class ServerLauncherTest {
    private static final Duration DEADLINE = Duration.ofSeconds(90);

    @TempDir
    Path dir;

    private final List<AutoCloseable> closing = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (AutoCloseable c : closing.reversed()) {
            c.close();
        }
    }

    private ServerLaunch spec(int servers, List<String> command, int gpusPerServer) {
        return new ServerLaunch(
                servers,
                command,
                "127.0.0.1",
                0,
                List.of(),
                gpusPerServer,
                dir.resolve("model").toString(),
                dir.resolve("logs"),
                DEADLINE,
                Duration.ofMillis(100),
                Duration.ofSeconds(1),
                3);
    }

    private static List<String> builtInServer() {
        String java = ProcessHandle.current().info().command().orElse("java");
        return List.of(
                java,
                "-cp",
                System.getProperty("java.class.path"),
                ModelServerMain.class.getName(),
                "--host",
                "{host}",
                "--port",
                "{port}",
                "--seed",
                "4",
                "--decode-base-us",
                "3000");
    }

    @Test
    void aServerKilledMidRunIsRestartedAndTheRunLosesNothing() throws Exception {
        ServerLauncher launcher = ServerLauncher.start(spec(2, builtInServer(), 0));
        closing.add(launcher);
        launcher.awaitHealthy(DEADLINE);
        RemoteInferenceEngine engine = TestSupport.engine(
                TestSupport.config(launcher.addresses().toArray(new org.rollout.config.ServerAddress[0]))
                        .requestTimeout(Duration.ofSeconds(60))
                        .build());
        closing.add(engine);
        GenerationConfig g =
                GenerationConfig.builder().maxNewTokens(200).ignoreEos(true).build();
        int[] prompt = {257, 72, 105, 10};
        long killedPid = launcher.process(0).orElseThrow().pid();

        ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor();
        closing.add(pool::shutdownNow);
        List<Future<ModelResponse>> runs = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            runs.add(pool.submit(() -> engine.generate(ModelRequest.of(prompt, g))));
        }
        TestSupport.await(
                "a generation in flight on server 0",
                DEADLINE,
                () -> engine.serverStats().stream()
                        .anyMatch(s -> s.address().equals(launcher.addresses().get(0)) && s.outstanding() > 0));
        assertThat(launcher.process(0).orElseThrow().destroyForcibly()).isTrue(); // SIGKILL

        for (Future<ModelResponse> run : runs) {
            ModelResponse r = run.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            assertThat(r.outputLength()).isEqualTo(200);
        }
        TestSupport.await(
                "server 0 restarted",
                DEADLINE,
                () -> launcher.restarts(0) == 1 && launcher.process(0).isPresent());
        assertThat(launcher.process(0).orElseThrow().pid()).isNotEqualTo(killedPid);
        launcher.awaitHealthy(DEADLINE);
        assertThat(launcher.events())
                .anyMatch(e -> e.contains("server 0 at " + launcher.addresses().get(0) + " exited with code 137")
                        && e.contains("model server listening on")
                        && e.contains("restarting in"));
        TestSupport.await(
                "server 0 back in rotation",
                DEADLINE,
                () -> engine.serverStats().stream()
                        .anyMatch(s -> s.address().equals(launcher.addresses().get(0)) && s.inRotation()));
        assertThat(launcher.restarts(1)).isZero();
        assertThat(Files.readString(launcher.logFile(0)))
                .as("both lives of server 0 write to its log")
                .containsPattern("(?s)model server listening on .*model server listening on");

        launcher.close();
        assertThat(launcher.process(0)).isEmpty();
        assertThat(launcher.process(1)).isEmpty();
    }

    @Test
    void placeholdersAndCudaVisibleDevicesArePerServerAndTheCapStopsRestarts() throws Exception {
        ServerLaunch s = spec(
                2,
                List.of(
                        "sh",
                        "-c",
                        "echo index={index} port={port} host={host} gpu={gpu} model={model_path}"
                                + " cuda=$CUDA_VISIBLE_DEVICES; exit 3"),
                1);
        ServerLauncher launcher = ServerLauncher.start(s);
        closing.add(launcher);
        TestSupport.await(
                "both servers given up after 3 restarts",
                DEADLINE,
                () -> launcher.events().stream()
                                .filter(e -> e.contains("not restarted"))
                                .count()
                        == 2);
        assertThat(launcher.restarts(0)).isEqualTo(3);
        String log1 = Files.readString(launcher.logFile(1));
        assertThat(log1)
                .contains("index=1 port=" + launcher.addresses().get(1).port() + " host=127.0.0.1 gpu=1 model="
                        + dir.resolve("model") + " cuda=1");
        assertThat(log1.lines().count()).as("four lives").isEqualTo(4);
        assertThat(launcher.events())
                .anyMatch(e -> e.contains("server 0") && e.contains("exited with code 3") && e.contains("cuda=0"));
    }
}
