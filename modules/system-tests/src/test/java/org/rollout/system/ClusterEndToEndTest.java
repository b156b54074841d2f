package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Three node JVMs (nodes 1 and 2 may host the singletons, all three run groups and serve trainers),
 * two model-server JVMs, and the test JVM as the trainer over HTTP: a job runs end to end.
 */
@Timeout(300)
class ClusterEndToEndTest {
    private static final int STEPS = 40;

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    @Test
    void threeNodeJvmsAndAnHttpTrainerRunAJobEndToEnd() throws Exception {
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(3)
                        .withModelServers(2)
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false)) {
            t.startMonitor(Duration.ofMillis(500));
            Waits.untilTrue("" + STEPS + " training steps", Duration.ofSeconds(180), () -> {
                t.step(Duration.ofSeconds(2), true);
                return t.batchesAcknowledged() >= STEPS;
            });
            // Progress lines come every 10 s; groups must have started on at least two nodes.
            Map<String, Long> groups = Waits.until("groups started on two nodes", Duration.ofSeconds(30), () -> {
                t.step(Duration.ofMillis(500), false);
                Map<String, Long> g = c.groupsStartedByNode();
                return g.values().stream().filter(v -> v > 0).count() >= 2 ? Optional.of(g) : Optional.empty();
            });
            t.drain(Duration.ofSeconds(90));

            RunReport report = RunReport.of(run.testName(), c, t, new Faults())
                    .with("groups started per node (progress lines)", groups);
            assertThat(t.batchesAcknowledged()).isGreaterThanOrEqualTo(STEPS);
            assertThat(t.version()).isGreaterThanOrEqualTo(STEPS);
            assertThat(groups.values().stream().filter(v -> v > 0).count())
                    .as("nodes that started groups")
                    .isGreaterThanOrEqualTo(2);
            report.printAndAssertClean();
        }
    }
}
