package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A node near its heap limit: the built-in RLVR workflow with a reward function ({@link
 * HeapHungryReward}, on the nodes' {@code rollout.classpath}) that exhausts a 256 MiB heap for
 * every fourth question. The episode's {@link OutOfMemoryError} fails its group, which is rejected
 * as {@code failed} with a reason naming the task; the node keeps running and serving, and every
 * admitted task ends (accepted and delivered, or rejected with its reason).
 */
@Timeout(420)
class HeapPressureTest {
    private static final Pattern OOM = Pattern.compile("task (\\d+) slot \\d+ threw .*OutOfMemoryError");
    private static final Pattern OUTCOME = Pattern.compile(
            "rollout\\.tasks - outcome task=(\\d+) attempt=\\d+ eval=\\w+ accepted=(\\w+) reason=(\\S+)");

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    private final Path repoRoot = Path.of(System.getProperty("rollout.repo.root", "../.."))
            .toAbsolutePath()
            .normalize();
    private final Path testClasses = Path.of(HeapHungryReward.class
            .getProtectionDomain()
            .getCodeSource()
            .getLocation()
            .getPath());

    @Test
    void episodesThatExhaustTheHeapAreRejectedNamingTheirTaskAndTheNodeGoesOn() throws Exception {
        Path data = repoRoot.resolve("examples/user-workflow/data");
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(2)
                        .withNodeHeap("256m")
                        .withConfig(
                                "rollout.classpath=\"" + testClasses + "\"",
                                "rollout.workflow=rlvr",
                                "rollout.workflow_kwargs.reward_fn=" + HeapHungryReward.class.getName(),
                                "rollout.workflow_kwargs.prompt_key=question",
                                "rollout.tokenizer_path=builtin",
                                "rollout.dataset.train=[\"" + data.resolve("train.jsonl") + "\"]",
                                "rollout.dataset.eval=[\"" + data.resolve("eval.jsonl") + "\"]",
                                "gconfig.n_samples=4")
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false)) {
            t.startMonitor(Duration.ofMillis(500));
            // Until both nodes ran hungry groups (a quarter of the 50 questions) and ran out of heap
            // in them, then two batches more: the nodes go on generating after the error.
            Waits.untilTrue("an episode out of heap on each node", Duration.ofSeconds(240), () -> {
                t.step(Duration.ofSeconds(2), true);
                return ranOutOfHeap(c, 1) && ranOutOfHeap(c, 2);
            });
            NodeLossTest.steps(t, t.batchesAcknowledged() + 2);
            t.drain(Duration.ofSeconds(120));

            Set<Long> outOfMemory = new TreeSet<>();
            Map<Long, String> outcomes = new HashMap<>();
            for (ManagedProcess p : c.nodeProcesses()) {
                for (String line : p.lines()) {
                    Matcher m = OOM.matcher(line);
                    if (m.find()) {
                        outOfMemory.add(Long.parseLong(m.group(1)));
                    }
                    m = OUTCOME.matcher(line);
                    if (m.find()) {
                        outcomes.put(Long.parseLong(m.group(1)), m.group(2) + " " + m.group(3));
                    }
                }
            }
            RunReport report = RunReport.of(run.testName(), c, t, new Faults())
                    .with("tasks whose episode ran out of heap", outOfMemory);
            assertThat(outOfMemory).as("episodes that ran out of heap").isNotEmpty();
            for (int i = 1; i <= 2; i++) {
                assertThat(ranOutOfHeap(c, i))
                        .as("an episode ran out of heap on node-" + i)
                        .isTrue();
            }
            for (long task : outOfMemory) {
                assertThat(outcomes.get(task))
                        .as("outcome of task %d, which ran out of heap", task)
                        .isEqualTo("false failed");
            }
            for (int i = 1; i <= 2; i++) {
                assertThat(c.isAlive(i)).as("node-" + i + " alive").isTrue();
            }
            assertThat(c.nodeProcesses()).as("no node restarted").hasSize(2);
            report.printAndAssertClean();
        }
    }

    /** Whether an episode on node {@code index} ran out of heap (its log names the task). */
    private static boolean ranOutOfHeap(TestCluster c, int index) throws java.io.IOException {
        return c.nodeLog(index).stream().anyMatch(l -> OOM.matcher(l).find());
    }
}
