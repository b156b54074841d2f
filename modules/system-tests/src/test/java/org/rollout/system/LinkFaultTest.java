package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Delayed, jittery, stalling and lossy links ({@link FaultProxy}: the kernel here has no netem),
 * while a checked trainer trains: between the nodes and the model servers (every node-to-server
 * exchange crosses a proxy), and between nodes (one node advertises a proxy's port as its Artery
 * canonical address, so every connection another node opens to it crosses the proxy). During the
 * faults the run must go on; after healing its throughput must come back to at least {@link
 * #RECOVERED_FRACTION} of what it was before, within {@link #RECOVERED_WITHIN}; a stall long enough
 * to down the node behind the proxy must get it downed and its groups generated again elsewhere;
 * and at the end every task is accounted for with no invariant broken (nothing delivered twice,
 * nothing lost, the version never backwards).
 */
@Timeout(600)
class LinkFaultTest {
    /** 50–500 ms per chunk and direction: 50 ms plus up to 450 ms of jitter. */
    private static final Duration DELAY = Duration.ofMillis(50);

    private static final Duration JITTER = Duration.ofMillis(450);
    /** How long a faulty period lasts while the trainer trains. */
    private static final Duration FAULTY_FOR = Duration.ofSeconds(20);
    /** Batches per throughput window. */
    private static final int WINDOW = 4;
    /**
     * After healing, a window of {@link #WINDOW} batches at no less than this fraction of the rate
     * before the faults must end within {@link #RECOVERED_WITHIN}. Measured (2 cores shared with
     * other builds, load 4 to 20): the first window after healing already ran at 0.86 to 2.5 times
     * the rate before, ending under 1.5 s after healing; asserted generously.
     */
    private static final double RECOVERED_FRACTION = 0.4;

    private static final Duration RECOVERED_WITHIN = Duration.ofSeconds(90);

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    @Test
    void shouldTrainOnOverDelayedStallingAndResetLinksToModelServers() throws Exception {
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(3)
                        .withModelServers(2)
                        .withServerProxies()
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false)) {
            t.startMonitor(Duration.ofMillis(500));
            List<String> figures = new ArrayList<>();
            try (TrainingLoop loop = TrainingLoop.start(c, t, true, Duration.ZERO, 0, 7)) {
                ModelServerChaosTest.progress(t, loop, 6);
                double before = Math.max(rate(t, loop, "before the faults"), rate(t, loop, "before the faults"));

                // ~30 % of node-to-server exchanges hurt: a reset chance of 0.12 per chunk each way
                // (an exchange is a request chunk and one or two answer chunks), 50–500 ms per chunk.
                for (int i = 0; i < c.serverCount(); i++) {
                    c.serverProxy(i).hurt(DELAY, JITTER, 0.12);
                    c.linkFault("server_link_delay_loss", "server-" + i + " link: 50-500 ms, resets 0.12/chunk");
                }
                int atStart = t.batchesAcknowledged();
                long resetsAtStart = resets(c);
                long started = System.nanoTime();
                boolean stalled = false;
                while (System.nanoTime() - started < FAULTY_FOR.toNanos()) {
                    long elapsed = Duration.ofNanos(System.nanoTime() - started).toSeconds();
                    // A stall of server-0's link longer than the request timeout (5 s), mid-way.
                    if (!stalled && elapsed >= 6) {
                        c.serverProxy(0).stall(true);
                        c.linkFault("server_link_stall", "server-0 link stalled for 8 s");
                        stalled = true;
                    }
                    if (stalled && elapsed >= 14) {
                        c.serverProxy(0).stall(false);
                    }
                    loop.check();
                    Thread.sleep(200); // the faulty period's length is the fault itself
                }
                c.serverProxy(0).stall(false);
                int during = t.batchesAcknowledged() - atStart;
                long resetsDuring = resets(c) - resetsAtStart;
                for (int i = 0; i < c.serverCount(); i++) {
                    c.serverProxy(i).heal();
                }
                figures.add(String.format(
                        "before %.2f batches/s; %d batches during %d s of faults (%d connection resets)",
                        before, during, FAULTY_FOR.toSeconds(), resetsDuring));
                assertThat(during)
                        .as("batches acknowledged during the faulty period")
                        .isPositive();
                assertThat(resetsDuring).as("connections the proxies reset").isPositive();
                figures.add(recovered(t, loop, before));
            }
            t.drain(Duration.ofSeconds(120));
            RunReport report = RunReport.of(run.testName(), c, t, new Faults())
                    .with("throughput", figures)
                    .with("proxies", proxies(c));
            report.printAndAssertClean();
        }
    }

    @Test
    void shouldTrainOnOverADelayedAndStallingLinkBetweenNodesAndLoseNothingWhenItsNodeIsDowned() throws Exception {
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(3)
                        .withNodeBehindProxy(3)
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false)) {
            t.startMonitor(Duration.ofMillis(500));
            List<String> figures = new ArrayList<>();
            FaultProxy link = c.nodeProxy(3);
            try (TrainingLoop loop = TrainingLoop.start(c, t, true, Duration.ZERO, 0, 11)) {
                ModelServerChaosTest.progress(t, loop, 6);
                double before = Math.max(rate(t, loop, "before the faults"), rate(t, loop, "before the faults"));

                // Every connection into node-3: 50–500 ms per chunk, a rare reset, and 2 s stalls
                // (under the 4 s acceptable heartbeat pause) every 8 s.
                link.hurt(DELAY, JITTER, 0.002);
                c.linkFault("node_link_delay_loss", "into node-3: 50-500 ms, resets 0.002/chunk");
                int atStart = t.batchesAcknowledged();
                long started = System.nanoTime();
                long nextStall = 5;
                while (System.nanoTime() - started < FAULTY_FOR.toNanos()) {
                    long elapsed = Duration.ofNanos(System.nanoTime() - started).toSeconds();
                    if (elapsed >= nextStall) {
                        link.stall(true);
                        c.linkFault("node_link_stall", "into node-3 stalled for 2 s");
                        Thread.sleep(2000); // the stall's length is the fault itself
                        link.stall(false);
                        nextStall = elapsed + 8;
                    }
                    loop.check();
                    Thread.sleep(200);
                }
                int during = t.batchesAcknowledged() - atStart;
                link.heal();
                figures.add(String.format(
                        "before %.2f batches/s; %d batches during %d s of faults into node-3 (%d resets)",
                        before, during, FAULTY_FOR.toSeconds(), link.resets()));
                assertThat(during)
                        .as("batches acknowledged during the faulty period")
                        .isPositive();
                figures.add(recovered(t, loop, before));
                assertThat(c.isAlive(3))
                        .as("node-3 after delays and stalls under the failure detector's pause")
                        .isTrue();

                // A stall nobody survives: node-3 hears no one (a one-way cut, inbound), is found
                // unreachable, and the majority downs it; it downs itself. Its groups run elsewhere.
                NodeLossTest.awaitInFlightOn(c, t, "node-3", 1);
                link.stall(true);
                c.linkFault("node_link_long_stall", "into node-3 stalled until it is downed");
                long stallStarted = System.nanoTime();
                Waits.untilTrue(
                        "node-3 downed and exited under a stalled inbound link", Duration.ofSeconds(120), () -> {
                            loop.check();
                            return !c.isAlive(3);
                        });
                figures.add("node-3 exited " + (System.nanoTime() - stallStarted) / 1_000_000
                        + " ms after its inbound link stalled");
                link.heal();
                ModelServerChaosTest.progress(t, loop, WINDOW);
                c.restartNode(3);
                NodeLossTest.awaitInFlightOn(c, t, "node-3", 1);
                ModelServerChaosTest.progress(t, loop, 2);
            }
            t.drain(Duration.ofSeconds(120));
            TaskAccounting journal = TaskAccounting.read(c.nodeProcesses());
            RunReport report = RunReport.of(run.testName(), c, t, new Faults())
                    .with("throughput", figures)
                    .with("proxies", proxies(c))
                    .with("groups dispatched again", journal.redispatches);
            // Clean means nothing lost and nothing delivered twice. Whether node-3 still held a group
            // when it was downed depends on timing: only its inbound link stalls, so it can finish and
            // report what it ran before it goes, and then there is nothing to dispatch again.
            report.printAndAssertClean();
        }
    }

    /** Batches per second over the next {@link #WINDOW} acknowledged batches. */
    private static double rate(CheckedTrainer t, TrainingLoop loop, String when) throws InterruptedException {
        long started = System.nanoTime();
        ModelServerChaosTest.progress(t, loop, WINDOW);
        double rate = WINDOW / ((System.nanoTime() - started) / 1e9);
        TestCluster.log(String.format("throughput %s: %.2f batches/s", when, rate));
        return rate;
    }

    /**
     * Waits for a window of {@link #WINDOW} batches at {@link #RECOVERED_FRACTION} of {@code
     * before} or better, ending within {@link #RECOVERED_WITHIN} of now (healing); says how long.
     */
    private static String recovered(CheckedTrainer t, TrainingLoop loop, double before) throws InterruptedException {
        long healed = System.nanoTime();
        while (true) {
            double now = rate(t, loop, "after healing");
            long since = System.nanoTime() - healed;
            assertThat(Duration.ofNanos(since))
                    .as("throughput back to %.0f %% of %.2f batches/s after healing", RECOVERED_FRACTION * 100, before)
                    .isLessThanOrEqualTo(RECOVERED_WITHIN);
            if (now >= RECOVERED_FRACTION * before) {
                String line = String.format(
                        "after healing: %.2f batches/s (%.0f %% of before) in a window ending %d ms after healing",
                        now, 100 * now / before, since / 1_000_000);
                TestCluster.log(line);
                return line;
            }
        }
    }

    private static long resets(TestCluster c) {
        long n = 0;
        for (int i = 0; i < c.serverCount(); i++) {
            n += c.serverProxy(i).resets();
        }
        return n;
    }

    private static List<String> proxies(TestCluster c) {
        List<String> all = new ArrayList<>();
        for (int i = 0; i < c.serverCount(); i++) {
            try {
                all.add(c.serverProxy(i).toString());
            } catch (IllegalStateException none) {
                // no server proxies in this cluster
            }
        }
        for (int i = 1; i <= c.nodeCount(); i++) {
            try {
                all.add(c.nodeProxy(i).toString());
            } catch (IllegalStateException none) {
                // not behind a proxy
            }
        }
        return all;
    }
}
