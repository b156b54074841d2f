package org.rollout.workflows.python;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * No Python reward worker outlives its JVM: neither when the JVM exits with its pool still open,
 * nor when it is killed with SIGKILL (the workers see their stdin close).
 */
class PythonRewardJvmExitTest {
    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    /** A child JVM running {@link PythonRewardChildJvm}, and the worker pids it printed. */
    private record Child(Process process, List<Long> workers) {}

    private Child start() throws Exception {
        // "hold" keeps each call a moment so that the calls overlap and need more than one worker.
        Files.writeString(dir.resolve("rw_exit.py"), """
                import time
                def reward(prompt, completions, prompt_ids, completion_ids, hold=0.0, **data):
                    time.sleep(hold)
                    return 1.0
                """);
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process p = new ProcessBuilder(
                        java.toString(),
                        "-cp",
                        System.getProperty("java.class.path"),
                        PythonRewardChildJvm.class.getName(),
                        dir.toString(),
                        "rw_exit",
                        "reward")
                .redirectError(ProcessBuilder.Redirect.DISCARD)
                .start();
        CompletableFuture<List<Long>> pids = CompletableFuture.supplyAsync(() -> {
            try {
                BufferedReader out =
                        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
                String line;
                while ((line = out.readLine()) != null) {
                    if (line.startsWith("pids ")) {
                        List<Long> list = new ArrayList<>();
                        for (String pid : line.substring(5).trim().split(" ")) {
                            list.add(Long.parseLong(pid));
                        }
                        return list;
                    }
                }
                throw new IllegalStateException("the child JVM exited without printing its workers");
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        try {
            return new Child(p, pids.get(WAIT.toSeconds(), TimeUnit.SECONDS));
        } catch (Exception e) {
            p.destroyForcibly();
            throw e;
        }
    }

    private static void assertAllExit(List<Long> pids) {
        for (long pid : pids) {
            ProcessHandle.of(pid)
                    .ifPresent(h -> h.onExit()
                            .orTimeout(WAIT.toSeconds(), TimeUnit.SECONDS)
                            .join());
            assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive))
                    .as("worker %d", pid)
                    .isEmpty();
        }
    }

    @Test
    void theWorkersEndWhenTheJvmExitsWithItsPoolOpen() throws Exception {
        Child child = start();
        try {
            assertThat(child.workers()).isNotEmpty();

            child.process().getOutputStream().close(); // the child calls System.exit(0)

            assertThat(child.process().waitFor(WAIT.toSeconds(), TimeUnit.SECONDS))
                    .isTrue();
            assertThat(child.process().exitValue()).isZero();
            assertAllExit(child.workers());
        } finally {
            child.process().destroyForcibly();
        }
    }

    @Test
    void theWorkersEndWhenTheJvmIsKilled() throws Exception {
        Child child = start();
        try {
            assertThat(child.workers()).isNotEmpty();

            child.process().destroyForcibly(); // SIGKILL: no shutdown hook runs

            assertThat(child.process().waitFor(WAIT.toSeconds(), TimeUnit.SECONDS))
                    .isTrue();
            assertAllExit(child.workers());
        } finally {
            child.process().destroyForcibly();
        }
    }
}
