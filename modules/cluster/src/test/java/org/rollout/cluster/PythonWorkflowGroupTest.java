package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.cluster.TestRollout.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.GenerationConfig;
import org.rollout.config.StalenessPolicy;
import org.rollout.python.PythonWorkflow;
import org.rollout.python.PythonWorkflowPool;

/**
 * A Python workflow's group under the group runner's rules (real {@code /usr/bin/python3} workers):
 * a slot that raises cancels its siblings' Python tasks (their pending {@code agenerate} raises
 * {@code asyncio.CancelledError}) and aborts their generations; the staleness policy {@code cancel}
 * does the same to a group the version left behind.
 */
class PythonWorkflowGroupTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);
    private static final Path CLIENT = Path.of(System.getProperty("user.dir"), "..", "..", "clients", "python")
            .toAbsolutePath()
            .normalize();
    private static final Path TOYS =
            Path.of(System.getProperty("user.dir"), "src", "test", "python").toAbsolutePath();

    @TempDir
    Path dir;

    private PythonWorkflow workflow(TestRollout t, Map<String, Object> kwargs) throws Exception {
        GenerationConfig g = t.gconfig();
        return new PythonWorkflow(
                PythonWorkflowPool.start(
                        "cluster_toys:BlockOrRaise",
                        kwargs,
                        g,
                        null,
                        new PythonWorkflowPool.Settings(
                                "/usr/bin/python3", TOYS.toString(), CLIENT, 1, Duration.ofSeconds(60))),
                g);
    }

    private static List<String> cancelled(Path log) throws java.io.IOException {
        return Files.exists(log) ? Files.readAllLines(log) : List.of();
    }

    private static int cancelledCount(Path log) {
        try {
            return cancelled(log).size();
        } catch (java.io.IOException e) {
            return -1; // read again on the next poll
        }
    }

    @Test
    void aSlotThatRaisesCancelsItsSiblingsPythonTasksAndTheirGenerations() throws Exception {
        Path log = dir.resolve("cancelled");
        TestRollout t = new TestRollout();
        t.source = new GeneratedPromptSource(i -> Map.of("prompt", "\u0007 blocks"), 1);
        try (PythonWorkflow w = workflow(t, Map.of("log", log.toString(), "raise_slot", 0))) {
            t.workflow = w;
            try (LocalRollout rollout = t.start()) {
                var client = rollout.client();
                await(
                        "a failed group",
                        DEADLINE,
                        () -> LocalRolloutTest.status(client).rejectedByReason().getOrDefault("failed", 0L) == 1);
                await("the three siblings' generations aborted", DEADLINE, () -> t.engine.interrupted() == 3);
                await("the three siblings' Python tasks cancelled", DEADLINE, () -> cancelledCount(log) == 3);
                assertThat(cancelled(log)).containsExactlyInAnyOrder("1", "2", "3");
            }
        }
    }

    @Test
    void theCancelPolicyCancelsAStaleGroupsPythonTasks() throws Exception {
        Path log = dir.resolve("cancelled");
        TestRollout t = new TestRollout();
        t.policy = StalenessPolicy.CANCEL;
        t.eta = 0;
        t.source = new GeneratedPromptSource(i -> Map.of("prompt", "\u0007 blocks"), 1);
        try (PythonWorkflow w = workflow(t, Map.of("log", log.toString()))) {
            t.workflow = w;
            try (LocalRollout rollout = t.start()) {
                var client = rollout.client();
                await("all four slots generating", DEADLINE, () -> t.engine.blocking() == 4);
                client.publishWeights(1, Path.of("w1"));
                await(
                        "a stale rejection",
                        DEADLINE,
                        () -> LocalRolloutTest.status(client).rejectedByReason().getOrDefault("stale", 0L) == 1);
                await("every slot's generation aborted", DEADLINE, () -> t.engine.interrupted() == 4);
                await("every slot's Python task cancelled", DEADLINE, () -> cancelledCount(log) == 4);
            }
        }
    }
}
