package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.rollout.modelserver.FaultPlan;

/**
 * Everything at once: while a trainer trains (publishing a version after every batch, now and then
 * walking away from a pulled batch and reconnecting through another gateway), a chaos thread
 * injects one fault after another at random: SIGKILL of a rollout node (restarted after a while),
 * SIGKILL of the singletons' node, model servers crashed and restarted, hung (SIGSTOP) and resumed,
 * answering 5xx, answering malformed bodies of every kind, answering slowly, drained from the
 * run-time server list through a gateway and added back, and the link to a model server made
 * faulty (50-500 ms per chunk, connections reset) or stalled through its {@link FaultProxy} (every
 * node reaches the servers through proxies). Then the run is
 * drained and every task accounted for.
 *
 * <p>Its length is {@code -Drollout.soak.tasks} tasks delivered (default: the pom's, sized for CI), and
 * at least one fault injected per 100 of them (faults come at a pace in time, tasks as fast as the
 * engine goes, so the run goes on until both are reached);
 * the random choices follow {@code -Drollout.soak.seed} (printed). docs/reliability.md gives the
 * figures of a long run.
 */
class SoakTest {
    /** At most one fault at a time, so that a majority of nodes and servers is always there. */
    private static final List<String> FAULTS = List.of(
            "node_kill",
            "node_kill",
            "singleton_node_kill",
            "server_crash",
            "server_crash",
            "server_hang",
            "server_5xx",
            "server_5xx",
            "server_malformed",
            "server_malformed",
            "server_malformed",
            "server_slow",
            "server_drain",
            "server_drain",
            "server_link_faulty",
            "server_link_stall");

    /**
     * After a killed node is back, the next node fault waits this long: server faults go on, and
     * node faults (10-40 s of lower capacity or a fail-over each) do not take most of the run.
     */
    private static final Duration NODE_FAULT_GAP = Duration.ofSeconds(15);

    /**
     * Between two kills of the singletons' node: each stops pulls for about 30 s (the fail-over), so
     * that more of them would make the run mostly waiting.
     */
    private static final Duration SINGLETON_KILL_GAP = Duration.ofSeconds(90);

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    @Test
    // An outer bound only: the run's own bound, scaled with its length, is below.
    @Timeout(value = 3, unit = TimeUnit.HOURS)
    void shouldLoseNothingUnderRandomFaultsOfEveryKind() {
        int target = Integer.getInteger("rollout.soak.tasks", 1000);
        long seed = Long.getLong("rollout.soak.seed", System.nanoTime());
        // A hard bound on the whole run, scaled with its length (2 cores, shared).
        Duration budget = Duration.ofSeconds(300 + target / 4);
        assertTimeoutPreemptively(budget, () -> soak(target, seed, budget));
    }

    private void soak(int target, long seed, Duration budget) throws Exception {
        TestCluster.log("soak: " + target + " tasks, seed " + seed + " (-Drollout.soak.seed=" + seed + " repeats the"
                + " fault choices), at most " + budget);
        long started = System.nanoTime();
        long minFaults = Math.max(10, target / 100);
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(3)
                        .withModelServers(3)
                        .withServerProxies()
                        .withConfig(
                                "rollout.consumer_batch_size=16",
                                "rollout.max_concurrent_rollouts=48",
                                "rollout.batch_ack_timeout=10")
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false, 48, 16)) {
            t.startMonitor(Duration.ofMillis(500));
            SplittableRandom random = new SplittableRandom(seed);
            Chaos chaos = new Chaos(c, random.split());
            try (TrainingLoop loop = TrainingLoop.start(c, t, true, Duration.ZERO, 0.02, random.nextLong())) {
                try {
                    // Faults come at a pace in time, tasks as fast as the engine goes: the run lasts
                    // until both the tasks and the faults (one per 100 tasks) are reached.
                    Waits.untilTrue(target + " tasks delivered and " + minFaults + " faults injected", budget, () -> {
                        loop.check();
                        chaos.check();
                        Thread.sleep(500);
                        return t.consumedTasks().size() >= target && c.faults().total() >= minFaults;
                    });
                } finally {
                    // Also when the run failed: no process may be started after the test's end.
                    chaos.close();
                }
            }
            long chaosEnded = System.nanoTime();
            t.drain(Duration.ofSeconds(180));
            double seconds = (System.nanoTime() - started) / 1e9;
            RunReport report = RunReport.of(run.testName(), c, t, new Faults())
                    .with("soak length (-Drollout.soak.tasks) / seed (-Drollout.soak.seed)", target + " / " + seed)
                    .with(
                            "wall time: under faults / in all (s)",
                            String.format("%.0f / %.0f", (chaosEnded - started) / 1e9, seconds))
                    .with(
                            "trajectories checked (of them from two or more versions)",
                            t.trajectories() + " (" + t.mixedVersionTrajectories() + ")");
            report.printAndAssertClean();
            assertThat(t.consumedTasks().size()).isGreaterThanOrEqualTo(target);
            assertThat(c.faults().total()).as("faults injected").isGreaterThanOrEqualTo(minFaults);
        }
    }

    /** The chaos thread: one random fault after another, each undone before the next. */
    private static final class Chaos implements AutoCloseable {
        private final TestCluster c;
        private final SplittableRandom random;
        private final Thread thread;
        private volatile boolean running = true;
        private volatile Throwable failure;
        private volatile Thread restarting;
        /** When the last killed node was back; node faults wait {@link #NODE_FAULT_GAP} after it. */
        private volatile long nodeBackAt = System.nanoTime();
        /** When the singletons' node was last killed; the next such kill waits {@link #SINGLETON_KILL_GAP}. */
        private volatile long singletonKilledAt = System.nanoTime() - SINGLETON_KILL_GAP.toNanos() / 2;

        Chaos(TestCluster c, SplittableRandom random) {
            this.c = c;
            this.random = random;
            this.thread = Thread.ofPlatform().name("chaos").daemon().start(this::run);
        }

        private void run() {
            try {
                while (running) {
                    pause(200, 1200);
                    if (!running) {
                        return;
                    }
                    inject(FAULTS.get(random.nextInt(FAULTS.size())));
                }
            } catch (InterruptedException e) {
                // close()
            } catch (Throwable e) {
                failure = e;
            }
        }

        private void inject(String kind) throws Exception {
            int server = random.nextInt(c.serverCount());
            boolean nodeFault = kind.endsWith("node_kill");
            boolean nodeBusy = restarting != null && restarting.isAlive();
            boolean singletonTooSoon = kind.equals("singleton_node_kill")
                    && System.nanoTime() - singletonKilledAt < SINGLETON_KILL_GAP.toNanos();
            if (nodeFault
                    && (nodeBusy || singletonTooSoon || System.nanoTime() - nodeBackAt < NODE_FAULT_GAP.toNanos())) {
                kind = FAULTS.get(3 + random.nextInt(FAULTS.size() - 3)); // one node down at a time
            }
            switch (kind) {
                case "node_kill" -> {
                    int holder = c.singletonNode(Duration.ofSeconds(60));
                    int victim = 1 + random.nextInt(c.nodeCount() - 1);
                    if (victim >= holder) {
                        victim++; // any node but the singletons' one
                    }
                    c.killNode(victim);
                    restartLater(victim, 1000 + random.nextInt(3000));
                }
                case "singleton_node_kill" -> {
                    int holder = c.killSingletonNode();
                    singletonKilledAt = System.nanoTime();
                    // The successor takes over (about 7 s to notice, then the hand-over) before the
                    // killed node comes back as the youngest member.
                    restartLater(holder, 8000 + random.nextInt(4000));
                }
                case "server_crash" -> {
                    c.crashServer(server);
                    pause(500, 3000);
                    c.restartServer(server);
                }
                case "server_hang" -> {
                    c.hangServer(server);
                    // Longer than the request timeout (5 s): requests to it time out and go elsewhere.
                    pause(3000, 8000);
                    c.resumeServer(server);
                }
                case "server_5xx" -> episode(server, "server_5xx", "{\"error_rate\": 0.4, \"seed\": " + seed() + "}");
                case "server_malformed" -> {
                    FaultPlan.MalformedKind k =
                            FaultPlan.MalformedKind.values()[random.nextInt(FaultPlan.MalformedKind.values().length)];
                    episode(
                            server,
                            "server_malformed_" + k.wireName(),
                            "{\"malformed_rate\": 0.4, \"malformed_kind\": \"" + k.wireName() + "\", \"seed\": "
                                    + seed() + "}");
                }
                case "server_slow" ->
                    episode(server, "server_slow", "{\"slow_ms\": " + (500 + random.nextInt(3000)) + "}");
                case "server_drain" -> {
                    // Drained through a node's gateway (segments handed over after 0.5-3 s), gone from
                    // every live node, then added back: loaded with the current weights before it serves.
                    c.drainServer(server, Duration.ofMillis(500 + random.nextInt(2500)));
                    Waits.untilTrue(
                            "server-" + server + " drained from every live node",
                            Duration.ofSeconds(60),
                            () -> c.serverGoneFromLiveNodes(server));
                    pause(500, 3000);
                    c.addServer(server);
                    Waits.untilTrue(
                            "server-" + server + " back in rotation on every live node",
                            Duration.ofSeconds(60),
                            () -> c.serverListedOnLiveNodes(server, true));
                }
                case "server_link_faulty" -> {
                    // 50-500 ms per chunk each way, a tenth of the chunks resetting their connection.
                    c.serverProxy(server).hurt(Duration.ofMillis(50), Duration.ofMillis(450), 0.1);
                    c.linkFault(kind, "server-" + server + " link: 50-500 ms, resets 0.1/chunk");
                    pause(2000, 5000);
                    c.serverProxy(server).heal();
                }
                case "server_link_stall" -> {
                    c.serverProxy(server).stall(true);
                    c.linkFault(kind, "server-" + server + " link stalled");
                    // Longer than the request timeout (5 s) at times: requests to it time out and go elsewhere.
                    pause(2000, 8000);
                    c.serverProxy(server).heal();
                }
                default -> throw new IllegalArgumentException(kind);
            }
        }

        /**
         * Restarts node {@code index} after {@code delayMillis} on a thread of its own (a node takes
         * 10-20 s to come back), while server faults go on; no other node is killed meanwhile.
         */
        private void restartLater(int index, long delayMillis) {
            restarting = Thread.ofPlatform()
                    .name("restart-node-" + index)
                    .daemon()
                    .start(() -> {
                        try {
                            Thread.sleep(delayMillis);
                            c.restartNode(index);
                            nodeBackAt = System.nanoTime();
                        } catch (InterruptedException e) {
                            // close() gave up
                        } catch (Throwable e) {
                            failure = e;
                        }
                    });
        }

        private long seed() {
            return random.nextInt(1_000_000);
        }

        /** A fault plan on {@code server} for a few seconds, then none. */
        private void episode(int server, String kind, String plan) throws Exception {
            c.setServerFaults(server, kind, plan);
            pause(1500, 3500);
            c.setServerFaults(server, null, "{}");
        }

        private void pause(int minMillis, int maxMillis) throws InterruptedException {
            Thread.sleep(minMillis + random.nextInt(maxMillis - minMillis + 1));
        }

        void check() {
            Throwable f = failure;
            if (f != null) {
                throw new AssertionError("the chaos thread failed", f);
            }
        }

        /** Stops after the fault under way has been undone. */
        @Override
        public void close() throws InterruptedException {
            running = false;
            thread.join(Duration.ofSeconds(150));
            if (thread.isAlive()) {
                thread.interrupt();
                throw new AssertionError("the chaos thread did not stop within 150 s");
            }
            Thread r = restarting;
            if (r != null) {
                r.join(Duration.ofSeconds(150));
                if (r.isAlive()) {
                    r.interrupt();
                    throw new AssertionError("a node restart did not end within 150 s");
                }
            }
            check();
        }
    }
}
