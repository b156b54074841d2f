package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.rollout.modelserver.FaultPlan;

/**
 * Everything at once. While a trainer trains (publishing a version after every batch, now and then
 * walking away from a pulled batch and reconnecting through another gateway, now and then
 * publishing a corrupt weight file that must be refused), three lanes of chaos inject one fault
 * after another at random, side by side:
 *
 * <ul>
 *   <li>the nodes' lane: SIGKILL of a rollout node (restarted after a while), SIGKILL of the
 *       singletons' node, and, with every node in a network namespace of its own ({@link
 *       NetworkNamespaces}), partitions that heal before the Split Brain Resolver decides, one-way
 *       cuts, flapping links, packet loss on all of a node's links, and a node cut from the
 *       majority until it downs itself (then healed and restarted);
 *   <li>two servers' lanes, each on a model server the other leaves alone: crashed and restarted,
 *       hung (SIGSTOP) and resumed, answering 5xx, answering malformed bodies of every kind,
 *       answering slowly, drained from the run-time server list through a gateway and added back,
 *       and its link made faulty (50-500 ms per chunk, connections reset) or stalled through its
 *       {@link FaultProxy} (every node reaches the servers through proxies).
 * </ul>
 *
 * Then the run is drained and every task accounted for.
 *
 * <p>Its length is {@code -Drollout.soak.tasks} tasks delivered (default: the pom's, sized for CI),
 * and at least one fault injected per 100 of them (faults come at a pace in time, tasks as fast as
 * the engine goes, so the run goes on until both are reached); the random choices follow {@code
 * -Drollout.soak.seed} (printed). Where the machine cannot make network namespaces the nodes run on
 * 127.0.0.1 and the nodes' lane only kills (the report says so). docs/reliability.md gives the
 * figures of a long run.
 */
class SoakTest {
    /** The nodes' lane, where namespaces can be made: one fault at a time, so a majority is always there. */
    private static final List<String> NODE_FAULTS = List.of(
            "node_kill",
            "node_kill",
            "singleton_node_kill",
            "partition_healed",
            "partition_healed",
            "partition_healed",
            "one_way_cut_healed",
            "one_way_cut_healed",
            "flapping_link",
            "packet_loss",
            "packet_loss",
            "partition_minority");

    /** The nodes' lane on 127.0.0.1: kills only. */
    private static final List<String> NODE_KILLS = List.of("node_kill", "node_kill", "singleton_node_kill");

    /** The servers' lanes. */
    private static final List<String> SERVER_FAULTS = List.of(
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
     * After a node that left is back, the next kill or minority partition waits this long: the
     * other faults go on, and node losses (10-40 s of lower capacity or a fail-over each) do not
     * take most of the run.
     */
    private static final Duration NODE_FAULT_GAP = Duration.ofSeconds(15);

    /**
     * Between two kills of the singletons' node: each stops pulls for about 30 s (the fail-over), so
     * that more of them would make the run mostly waiting.
     */
    private static final Duration SINGLETON_KILL_GAP = Duration.ofSeconds(90);

    /**
     * The longest cut that must heal before the resolver decides: past failure detection (4 s,
     * fast-failure-detection.conf), well under stable-after (20 s, partition-detection.conf).
     */
    private static final int LONGEST_HEALED_CUT_MS = 6000;

    /** failure detection 4 s + stable-after 20 s, gossip and shutdown (as PartitionTest). */
    private static final Duration DOWNED_WITHIN = Duration.ofSeconds(90);

    /** A step of the trainer publishes a corrupt weight file first with this probability. */
    private static final double CORRUPT_WEIGHTS_CHANCE = 0.01;

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    @Test
    // An outer bound only: the run's own bound, scaled with its length, is below.
    @Timeout(value = 8, unit = TimeUnit.HOURS)
    void shouldLoseNothingUnderRandomFaultsOfEveryKind() {
        int target = Integer.getInteger("rollout.soak.tasks", 1000);
        long seed = Long.getLong("rollout.soak.seed", System.nanoTime());
        // A hard bound on the whole run, scaled with its length (2 cores, shared).
        Duration budget = Duration.ofSeconds(300 + target / 4);
        assertTimeoutPreemptively(budget, () -> soak(target, seed, budget));
    }

    private void soak(int target, long seed, Duration budget) throws Exception {
        Optional<String> noNamespaces = NetworkNamespaces.unavailable(run.dir());
        boolean namespaces = noNamespaces.isEmpty();
        TestCluster.log("soak: " + target + " tasks, seed " + seed + " (-Drollout.soak.seed=" + seed + " repeats the"
                + " fault choices), at most " + budget + "; "
                + (namespaces ? "nodes in network namespaces" : "no partitions: " + noNamespaces.get()));
        long started = System.nanoTime();
        long minFaults = Math.max(10, target / 100);
        TestCluster.Builder spec = TestCluster.aCluster(run)
                .withNodes(3)
                .withModelServers(3)
                .withServerProxies()
                .withConfig(
                        "rollout.consumer_batch_size=16",
                        "rollout.max_concurrent_rollouts=48",
                        "rollout.batch_ack_timeout=10");
        if (namespaces) {
            // Partitions need the resolver's longer stable-after (see partition-detection.conf).
            spec.withNetworkNamespaces().withNodeProfile("partition-detection.conf");
        }
        try (TestCluster c = spec.start();
                CheckedTrainer t = c.checkedTrainer(1, false, 48, 16)) {
            t.startMonitor(Duration.ofMillis(500));
            Path corrupt = truncatedCopy(c.weights(), run.dir().resolve("corrupt-weights.rlm"));
            SplittableRandom random = new SplittableRandom(seed);
            Chaos chaos = new Chaos(c, random.split(), namespaces);
            try (TrainingLoop loop = TrainingLoop.start(c, t, true, Duration.ZERO, 0.02, random.nextLong())
                    .withCorruptWeights(corrupt, CORRUPT_WEIGHTS_CHANCE)) {
                try {
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
                    .with("nodes", namespaces ? "in network namespaces" : "on 127.0.0.1, no partitions")
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

    /** The first half of {@code weights}: a file every server must refuse. */
    private static Path truncatedCopy(Path weights, Path to) throws java.io.IOException {
        byte[] all = Files.readAllBytes(weights);
        return Files.write(to, Arrays.copyOf(all, all.length / 2));
    }

    /** The lanes of chaos: the nodes' one and two on the servers, each undoing its fault before the next. */
    private static final class Chaos implements AutoCloseable {
        private final TestCluster c;
        private final boolean namespaces;
        private final List<Thread> lanes = new ArrayList<>();
        private final Set<Integer> busyServers = new HashSet<>();
        private volatile boolean running = true;
        private volatile Throwable failure;
        /** When the last node that left was back; kills and minority partitions wait {@link #NODE_FAULT_GAP} after it. */
        private long nodeBackAt = System.nanoTime();
        /** When the singletons' node was last killed; the next such kill waits {@link #SINGLETON_KILL_GAP}. */
        private long singletonKilledAt = System.nanoTime() - SINGLETON_KILL_GAP.toNanos() / 2;

        Chaos(TestCluster c, SplittableRandom random, boolean namespaces) {
            this.c = c;
            this.namespaces = namespaces;
            SplittableRandom nodes = random.split();
            lanes.add(lane("chaos-nodes", () -> nodeFault(nodes)));
            for (int i = 0; i < 2; i++) {
                SplittableRandom servers = random.split();
                lanes.add(lane("chaos-servers-" + i, () -> serverFault(servers)));
            }
        }

        private interface Step {
            void run() throws Exception;
        }

        private Thread lane(String name, Step step) {
            return Thread.ofPlatform().name(name).daemon().start(() -> {
                try {
                    while (running) {
                        step.run();
                    }
                } catch (InterruptedException e) {
                    // close()
                } catch (Throwable e) {
                    failure = e;
                }
            });
        }

        // ---- the nodes' lane ----

        private void nodeFault(SplittableRandom random) throws Exception {
            pause(random, 1000, 3000);
            if (!running) {
                return;
            }
            List<String> kinds = namespaces ? NODE_FAULTS : NODE_KILLS;
            String kind = kinds.get(random.nextInt(kinds.size()));
            boolean leaves = kind.endsWith("node_kill") || kind.equals("partition_minority");
            boolean tooSoon = System.nanoTime() - nodeBackAt < NODE_FAULT_GAP.toNanos()
                    || (kind.equals("singleton_node_kill")
                            && System.nanoTime() - singletonKilledAt < SINGLETON_KILL_GAP.toNanos());
            if (leaves && tooSoon) {
                if (!namespaces) {
                    return; // nothing else to do on 127.0.0.1: wait for the gap
                }
                kind = "partition_healed";
            }
            int n = c.nodeCount();
            switch (kind) {
                case "node_kill" -> {
                    int victim = notTheSingletons(random);
                    c.killNode(victim);
                    Thread.sleep(1000 + random.nextInt(3000));
                    c.restartNode(victim);
                    nodeBackAt = System.nanoTime();
                }
                case "singleton_node_kill" -> {
                    int holder = c.killSingletonNode();
                    singletonKilledAt = System.nanoTime();
                    // The successor takes over (failure detection, then the hand-over) before the
                    // killed node comes back as the youngest member.
                    Thread.sleep(8000 + random.nextInt(4000));
                    c.restartNode(holder);
                    nodeBackAt = System.nanoTime();
                }
                case "partition_healed" -> {
                    int victim = 1 + random.nextInt(n);
                    c.partition(kind, victim, others(victim, n));
                    Thread.sleep(500 + random.nextInt(LONGEST_HEALED_CUT_MS - 500)); // the cut is the fault
                    c.heal(victim);
                }
                case "one_way_cut_healed" -> {
                    int victim = 1 + random.nextInt(n);
                    int peer = 1 + (victim - 1 + 1 + random.nextInt(n - 1)) % n;
                    c.cutOneWay(victim, peer);
                    Thread.sleep(500 + random.nextInt(LONGEST_HEALED_CUT_MS - 500)); // the cut is the fault
                    c.heal(victim);
                }
                case "flapping_link" -> {
                    int victim = 1 + random.nextInt(n);
                    c.flap(victim, 5, Duration.ofMillis(300 + random.nextInt(700)), others(victim, n));
                }
                case "packet_loss" -> {
                    int victim = 1 + random.nextInt(n);
                    c.packetLoss(victim, 0.05 + random.nextInt(26) / 100.0);
                    Thread.sleep(3000 + random.nextInt(7000)); // the loss is the fault
                    c.heal(victim);
                }
                case "partition_minority" -> {
                    // A rollout node cut from the other two until it downs itself; its groups run elsewhere.
                    int victim = notTheSingletons(random);
                    c.partition(kind, victim, others(victim, n));
                    Waits.untilTrue("node-" + victim + " downed and exited", DOWNED_WITHIN, () -> !c.isAlive(victim));
                    c.heal(victim);
                    c.restartNode(victim);
                    nodeBackAt = System.nanoTime();
                }
                default -> throw new IllegalArgumentException(kind);
            }
        }

        /** Any node but the one that holds the singletons now. */
        private int notTheSingletons(SplittableRandom random) throws InterruptedException {
            int holder = c.singletonNode(Duration.ofSeconds(60));
            int victim = 1 + random.nextInt(c.nodeCount() - 1);
            return victim >= holder ? victim + 1 : victim;
        }

        private static int[] others(int node, int n) {
            int[] o = new int[n - 1];
            for (int i = 1, k = 0; i <= n; i++) {
                if (i != node) {
                    o[k++] = i;
                }
            }
            return o;
        }

        // ---- the servers' lanes ----

        private void serverFault(SplittableRandom random) throws Exception {
            pause(random, 200, 1200);
            if (!running) {
                return;
            }
            int server = claimServer(random);
            try {
                serverFault(random, server, SERVER_FAULTS.get(random.nextInt(SERVER_FAULTS.size())));
            } finally {
                synchronized (busyServers) {
                    busyServers.remove(server);
                }
            }
        }

        /** A server no other lane has a fault on (there are more servers than servers' lanes). */
        private int claimServer(SplittableRandom random) {
            synchronized (busyServers) {
                int server;
                do {
                    server = random.nextInt(c.serverCount());
                } while (busyServers.contains(server));
                busyServers.add(server);
                return server;
            }
        }

        private void serverFault(SplittableRandom random, int server, String kind) throws Exception {
            switch (kind) {
                case "server_crash" -> {
                    c.crashServer(server);
                    pause(random, 500, 3000);
                    c.restartServer(server);
                }
                case "server_hang" -> {
                    c.hangServer(server);
                    // Longer than the request timeout (5 s): requests to it time out and go elsewhere.
                    pause(random, 3000, 8000);
                    c.resumeServer(server);
                }
                case "server_5xx" ->
                    episode(random, server, "server_5xx", "{\"error_rate\": 0.4, \"seed\": " + seed(random) + "}");
                case "server_malformed" -> {
                    FaultPlan.MalformedKind k =
                            FaultPlan.MalformedKind.values()[random.nextInt(FaultPlan.MalformedKind.values().length)];
                    episode(
                            random,
                            server,
                            "server_malformed_" + k.wireName(),
                            "{\"malformed_rate\": 0.4, \"malformed_kind\": \"" + k.wireName() + "\", \"seed\": "
                                    + seed(random) + "}");
                }
                case "server_slow" ->
                    episode(random, server, "server_slow", "{\"slow_ms\": " + (500 + random.nextInt(3000)) + "}");
                case "server_drain" -> {
                    // Drained through a node's gateway (segments handed over after 0.5-3 s), gone from
                    // every live node, then added back: loaded with the current weights before it serves.
                    c.drainServer(server, Duration.ofMillis(500 + random.nextInt(2500)));
                    Waits.untilTrue(
                            "server-" + server + " drained from every live node",
                            Duration.ofSeconds(60),
                            () -> c.serverGoneFromLiveNodes(server));
                    pause(random, 500, 3000);
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
                    pause(random, 2000, 5000);
                    c.serverProxy(server).heal();
                }
                case "server_link_stall" -> {
                    c.serverProxy(server).stall(true);
                    c.linkFault(kind, "server-" + server + " link stalled");
                    // Longer than the request timeout (5 s) at times: requests to it time out and go elsewhere.
                    pause(random, 2000, 8000);
                    c.serverProxy(server).heal();
                }
                default -> throw new IllegalArgumentException(kind);
            }
        }

        private static long seed(SplittableRandom random) {
            return random.nextInt(1_000_000);
        }

        /** A fault plan on {@code server} for a few seconds, then none. */
        private void episode(SplittableRandom random, int server, String kind, String plan) throws Exception {
            c.setServerFaults(server, kind, plan);
            pause(random, 1500, 3500);
            c.setServerFaults(server, null, "{}");
        }

        private static void pause(SplittableRandom random, int minMillis, int maxMillis) throws InterruptedException {
            Thread.sleep(minMillis + random.nextInt(maxMillis - minMillis + 1));
        }

        void check() {
            Throwable f = failure;
            if (f != null) {
                throw new AssertionError("a chaos lane failed", f);
            }
        }

        /** Stops after the faults under way have been undone. */
        @Override
        public void close() throws InterruptedException {
            running = false;
            for (Thread lane : lanes) {
                lane.join(Duration.ofSeconds(150));
                if (lane.isAlive()) {
                    lane.interrupt();
                    throw new AssertionError("chaos lane " + lane.getName() + " did not stop within 150 s");
                }
            }
            check();
        }
    }
}
