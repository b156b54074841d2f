package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.rollout.modelserver.FaultPlan;

/**
 * Model servers that fail every way the model server can be made to, one after another while a
 * trainer trains: SIGKILL and restart, SIGSTOP (a hang: connections open, nothing answers) and
 * SIGCONT, HTTP 500s, each kind of malformed body, slow answers, and every server failing at once
 * for a moment (groups then end rejected with a reason, or are retried; none is lost).
 */
@Timeout(300)
class ModelServerChaosTest {
    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    @Test
    void shouldLoseNothingWhenModelServersCrashHangFailAndAnswerGarbage() throws Exception {
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(3)
                        .withModelServers(3)
                        .withConfig("rollout.consumer_batch_size=8", "rollout.max_concurrent_rollouts=24")
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false, 24, 8)) {
            t.startMonitor(Duration.ofMillis(500));
            try (TrainingLoop loop = TrainingLoop.start(c, t, true, Duration.ZERO, 0, 1)) {
                progress(t, loop, 3);

                c.crashServer(0);
                progress(t, loop, 2);
                c.restartServer(0);

                String ejected = "ejected inference server 127.0.0.1:" + c.serverPort(1);
                long ejectionsBefore = linesContaining(c, ejected);
                c.hangServer(1);
                // Its requests time out (request timeout 5 s) or its health checks do, and a node
                // ejects it: its work goes elsewhere.
                Waits.untilTrue(
                        "a node to eject the hung server-1",
                        Duration.ofSeconds(90),
                        () -> linesContaining(c, ejected) > ejectionsBefore);
                c.resumeServer(1);
                progress(t, loop, 2);

                episode(c, t, loop, 2, "server_5xx", "{\"error_rate\": 0.5, \"seed\": 1}");
                int server = 0;
                for (FaultPlan.MalformedKind k : FaultPlan.MalformedKind.values()) {
                    episode(
                            c,
                            t,
                            loop,
                            server++ % c.serverCount(),
                            "server_malformed_" + k.wireName(),
                            "{\"malformed_rate\": 0.5, \"malformed_kind\": \"" + k.wireName() + "\", \"seed\": 2}");
                }
                episode(c, t, loop, 0, "server_slow", "{\"slow_ms\": 2000}");

                // Every server failing at once, for a moment.
                for (int i = 0; i < c.serverCount(); i++) {
                    c.setServerFaults(i, "server_5xx_all", "{\"error_rate\": 1.0}");
                }
                Thread.sleep(3000);
                for (int i = 0; i < c.serverCount(); i++) {
                    c.setServerFaults(i, null, "{}");
                }

                c.crashServer(2);
                c.restartServer(2);
                progress(t, loop, 5);
            }
            t.drain(Duration.ofSeconds(120));

            RunReport report = RunReport.of(run.testName(), c, t, new Faults());
            report.printAndAssertClean();
            assertThat(c.faults().total()).isGreaterThanOrEqualTo(13);
        }
    }

    /** A fault plan on {@code server} while the trainer gets two more batches, then none. */
    private static void episode(
            TestCluster c, CheckedTrainer t, TrainingLoop loop, int server, String kind, String plan) throws Exception {
        c.setServerFaults(server, kind, plan);
        progress(t, loop, 2);
        c.setServerFaults(server, null, "{}");
    }

    /** Waits until the trainer has acknowledged {@code more} batches more. */
    static void progress(CheckedTrainer t, TrainingLoop loop, int more) throws InterruptedException {
        int target = t.batchesAcknowledged() + more;
        Waits.untilTrue(more + " more batches", Duration.ofSeconds(120), () -> {
            loop.check();
            Thread.sleep(100);
            return t.batchesAcknowledged() >= target;
        });
    }

    /** Lines of every node process's log so far that contain {@code text}. */
    private static long linesContaining(TestCluster c, String text) throws java.io.IOException {
        long n = 0;
        for (ManagedProcess p : c.nodeProcesses()) {
            n += p.lines().stream().filter(l -> l.contains(text)).count();
        }
        return n;
    }
}
