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
import java.util.Map;
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
 *       cuts, flapping links, packet loss on all of a node's links, a node's link throttled (its
 *       packets delayed in a bounded queue), and a node cut from the majority until it downs
 *       itself (then healed and restarted);
 *   <li>two servers' lanes, each on a model server the other leaves alone: crashed and restarted,
 *       hung (SIGSTOP) and resumed, answering 5xx, answering malformed bodies of every kind,
 *       answering slowly, drained from the run-time server list through a gateway and added back,
 *       and its link made faulty (50-500 ms per chunk, connections reset) or stalled through its
 *       {@link FaultProxy} (every node reaches the servers through proxies);
 *   <li>the resources' lane: the disk of every node's dumps and statistics (a {@code tmpfs} where
 *       the test can mount one) filled to the last byte for a few seconds, hundreds of idle
 *       connections opened to a gateway, and hundreds of batch pulls sent to a gateway and never
 *       read. A full disk must be counted in {@code rollout_dump_writes_failed_total}; pulls past
 *       {@code gateway.max_waiting_pulls} must be refused and counted.
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
            "throttled_link",
            "throttled_link",
            "fd_exhaustion",
            "partition_minority");

    /** The nodes' lane on 127.0.0.1: kills, and descriptors exhausted. */
    private static final List<String> NODE_KILLS =
            List.of("node_kill", "node_kill", "singleton_node_kill", "fd_exhaustion");

    /**
     * Every node's {@code ulimit -n}: several times what a node uses (170-400 descriptors in a
     * soak), so that only the {@code fd_exhaustion} fault reaches it.
     */
    private static final int NODE_FILE_LIMIT = 2048;

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

    /** The resources' lane. */
    private static final List<String> RESOURCE_FAULTS =
            // A pull flood is rarer: the batches handed to its unread pulls come again only after
            // batch_ack_timeout, and publishing (so admission) waits for them meanwhile.
            List.of(
                    "dump_disk_full",
                    "dump_disk_full",
                    "connection_flood",
                    "connection_flood",
                    "pull_flood",
                    "heap_pressure",
                    "heap_pressure");

    /**
     * A reward that exhausted the heap, as its node logs it: an attempt to be retried, or the last
     * one (the task is then rejected as failed).
     */
    private static final java.util.regex.Pattern TASK_OUT_OF_HEAP = java.util.regex.Pattern.compile(
            "(reward function failed \\(attempt \\d+/\\d+, episode \\d+:\\d+\\)|task \\d+ slot \\d+ threw)"
                    + ".*OutOfMemoryError");

    /** How long after the heap-pressure cue is removed the rewards it started are counted. */
    private static final Duration HEAP_EXHAUSTED_WITHIN = Duration.ofSeconds(10);

    /** The longest a full-disk episode waits for the nodes to try a dump write. */
    private static final Duration DISK_FULL_LONGEST = Duration.ofSeconds(30);

    /** The dumps' disk: small enough to fill at once, large enough for a long run's dumps between cleanings. */
    private static final String DUMP_DISK_SIZE = "64m";

    /** The gateway's default bound on pulls under way ({@code gateway.max_waiting_pulls}). */
    private static final int MAX_WAITING_PULLS = 256;

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

    /** Every member Up and reachable from every node before a node fault. */
    private static final Duration SETTLED_WITHIN = Duration.ofSeconds(60);

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
                .withNodeFileLimit(NODE_FILE_LIMIT)
                .withModelServers(3)
                .withServerProxies()
                .withConfig(
                        "rollout.consumer_batch_size=16",
                        "rollout.max_concurrent_rollouts=48",
                        "rollout.batch_ack_timeout=10",
                        // The built-in RLVR workflow over the template's questions, with a reward
                        // function that exhausts a node's heap on cue (the resources' lane).
                        "rollout.classpath=\"" + testClasses() + "\"",
                        "rollout.workflow=rlvr",
                        "rollout.workflow_kwargs.reward_fn=" + HeapOnCueReward.class.getName(),
                        "rollout.workflow_kwargs.prompt_key=question",
                        "rollout.tokenizer_path=builtin",
                        "rollout.dataset.train=[\"" + questions("train.jsonl") + "\"]",
                        "rollout.dataset.eval=[\"" + questions("eval.jsonl") + "\"]");
        if (namespaces) {
            // Partitions need the resolver's longer stable-after (see partition-detection.conf).
            spec.withNetworkNamespaces()
                    .withNodeProfile("partition-detection.conf")
                    .withManagement();
        }
        // Every node's dumps and statistics on one small tmpfs, mounted before the nodes start (a
        // node in a network namespace gets a copy of the mounts of its start).
        Path dumps = run.dir().resolve("dumps");
        Files.createDirectories(dumps);
        String mounted = ManagedProcess.run(
                List.of(
                        "/bin/sh",
                        "-c",
                        "mount -t tmpfs -o size=" + DUMP_DISK_SIZE + " tmpfs '" + dumps
                                + "' 2>&1 && echo mounted; true"),
                java.util.Map.of(),
                run.dir(),
                Duration.ofSeconds(20));
        boolean dumpDisk = mounted.contains("mounted");
        TestCluster.log(
                dumpDisk
                        ? "dumps on a " + DUMP_DISK_SIZE + " tmpfs at " + dumps
                        : "no full-disk faults: cannot mount a tmpfs here (needs root): " + mounted.strip());
        if (dumpDisk) {
            spec.withConfig("rollout.dump_to_file=true", "rollout.fileroot=" + dumps);
        }
        try {
            soak(target, seed, budget, spec, namespaces, dumpDisk ? dumps : null, started, minFaults);
        } finally {
            if (dumpDisk) {
                ManagedProcess.run(
                        List.of("umount", "-l", dumps.toString()),
                        java.util.Map.of(),
                        run.dir(),
                        Duration.ofSeconds(20));
            }
        }
    }

    private void soak(
            int target,
            long seed,
            Duration budget,
            TestCluster.Builder spec,
            boolean namespaces,
            Path dumpDisk,
            long started,
            long minFaults)
            throws Exception {
        try (TestCluster c = spec.start();
                CheckedTrainer t = c.checkedTrainer(1, false, 48, 16)) {
            t.startMonitor(Duration.ofMillis(500));
            Path corrupt = truncatedCopy(c.weights(), run.dir().resolve("corrupt-weights.rlm"));
            SplittableRandom random = new SplittableRandom(seed);
            Chaos chaos = new Chaos(c, random.split(), namespaces, dumpDisk);
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
                    .with("resources' lane", chaos.resourceFigures())
                    .with("throttled links", chaos.throttleFigures())
                    .with("descriptors exhausted", chaos.descriptorFigures())
                    .with(
                            "heap pressure: episodes / rewards that ran out of heap (retried, or the task failed)",
                            chaos.heapEpisodes() + " / " + chaos.tasksOutOfHeap())
                    .with("node faults started on a cluster not settled within " + SETTLED_WITHIN, chaos.unsettled())
                    .with("nodes that exited on their own (downed by the cluster), restarted", chaos.nodesThatLeft())
                    .with(
                            "wall time: under faults / in all (s)",
                            String.format("%.0f / %.0f", (chaosEnded - started) / 1e9, seconds))
                    .with(
                            "trajectories checked (of them from two or more versions)",
                            t.trajectories() + " (" + t.mixedVersionTrajectories() + ")");
            report.printAndAssertClean();
            assertThat(t.consumedTasks().size()).isGreaterThanOrEqualTo(target);
            assertThat(c.faults().total()).as("faults injected").isGreaterThanOrEqualTo(minFaults);
            if (chaos.heapEpisodes() >= 3) {
                // Else the nodes never read the cue: the fault would test nothing.
                assertThat(chaos.tasksOutOfHeap())
                        .as("rewards that ran out of heap in %d heap-pressure episodes", chaos.heapEpisodes())
                        .isPositive();
            }
            if (chaos.diskFullWithWrites() > 0) {
                // The nodes wrote on a full disk past their files' slack: those writes must have been counted.
                assertThat(chaos.dumpWritesFailed())
                        .as(
                                "dump writes failed during %d full-disk episodes in which the nodes wrote",
                                chaos.diskFullWithWrites())
                        .isPositive();
            }
        }
    }

    /** Where this module's test classes are (the nodes' {@code rollout.classpath}). */
    private static Path testClasses() {
        return Path.of(HeapOnCueReward.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation()
                .getPath());
    }

    /** A question file of the user-workflow template ({@code examples/user-workflow/data}). */
    private static Path questions(String file) {
        return Path.of(System.getProperty("rollout.repo.root", "../.."))
                .toAbsolutePath()
                .normalize()
                .resolve("examples/user-workflow/data")
                .resolve(file);
    }

    /** The version a dump directory is named after ({@code rollout/<version>}), or 0. */
    private static long versionOf(Path dir) {
        try {
            return Long.parseLong(dir.getFileName().toString());
        } catch (NumberFormatException e) {
            return 0;
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

        /** Node faults that started on a cluster not settled within {@link #SETTLED_WITHIN}. */
        private final java.util.concurrent.atomic.AtomicLong unsettled = new java.util.concurrent.atomic.AtomicLong();
        /** The tmpfs of the dumps, or null when none could be mounted. */
        private final Path dumpDisk;
        /** Dump writes that failed and that succeeded on the nodes during full-disk episodes. */
        private final java.util.concurrent.atomic.AtomicLong dumpWritesFailed =
                new java.util.concurrent.atomic.AtomicLong();

        private final java.util.concurrent.atomic.AtomicLong dumpWritesWritten =
                new java.util.concurrent.atomic.AtomicLong();
        /** Full-disk episodes in which some node failed a dump write or wrote past its files' slack. */
        private final java.util.concurrent.atomic.AtomicLong diskFullWithWrites =
                new java.util.concurrent.atomic.AtomicLong();
        /** Descriptor exhaustion: the most a victim held, episodes that reached the limit, nodes downed. */
        private final java.util.concurrent.atomic.AtomicLong fdPeak = new java.util.concurrent.atomic.AtomicLong();

        private final java.util.concurrent.atomic.AtomicLong fdExhausted = new java.util.concurrent.atomic.AtomicLong();
        private final java.util.concurrent.atomic.AtomicLong fdDowned = new java.util.concurrent.atomic.AtomicLong();
        private final java.util.concurrent.atomic.AtomicLong nodesThatLeft =
                new java.util.concurrent.atomic.AtomicLong();

        /** Heap-pressure episodes, and the rewards that ran out of heap in them. */
        private final java.util.concurrent.atomic.AtomicLong heapEpisodes =
                new java.util.concurrent.atomic.AtomicLong();

        private final java.util.concurrent.atomic.AtomicLong tasksOutOfHeap =
                new java.util.concurrent.atomic.AtomicLong();

        /** Packets the throttled links queued past their rate, and dropped past their queue's bound. */
        private final java.util.concurrent.atomic.AtomicLong throttledPackets =
                new java.util.concurrent.atomic.AtomicLong();

        private final java.util.concurrent.atomic.AtomicLong throttleDrops =
                new java.util.concurrent.atomic.AtomicLong();

        /** Idle connections and pulls opened by floods, and pulls the gateways counted as refused. */
        private final java.util.concurrent.atomic.AtomicLong flooded = new java.util.concurrent.atomic.AtomicLong();

        private final java.util.concurrent.atomic.AtomicLong pullsRefused =
                new java.util.concurrent.atomic.AtomicLong();

        Chaos(TestCluster c, SplittableRandom random, boolean namespaces, Path dumpDisk) {
            this.c = c;
            this.namespaces = namespaces;
            this.dumpDisk = dumpDisk;
            SplittableRandom nodes = random.split();
            lanes.add(lane("chaos-nodes", () -> nodeFault(nodes)));
            for (int i = 0; i < 2; i++) {
                SplittableRandom servers = random.split();
                lanes.add(lane("chaos-servers-" + i, () -> serverFault(servers)));
            }
            SplittableRandom resources = random.split();
            lanes.add(lane("chaos-resources", () -> resourceFault(resources)));
        }

        long dumpWritesFailed() {
            return dumpWritesFailed.get();
        }

        long diskFullWithWrites() {
            return diskFullWithWrites.get();
        }

        long unsettled() {
            return unsettled.get();
        }

        long nodesThatLeft() {
            return nodesThatLeft.get();
        }

        long heapEpisodes() {
            return heapEpisodes.get();
        }

        long tasksOutOfHeap() {
            return tasksOutOfHeap.get();
        }

        String descriptorFigures() {
            return String.format(
                    "%d episodes at the limit of %d, at most %d in use; %d victims left the cluster (restarted)",
                    fdExhausted.get(), NODE_FILE_LIMIT, fdPeak.get(), fdDowned.get());
        }

        String throttleFigures() {
            return String.format(
                    "%d packets held past the rate, %d dropped past the queue's bound",
                    throttledPackets.get(), throttleDrops.get());
        }

        String resourceFigures() {
            return String.format(
                    "dump writes during full-disk episodes: %d failed, %d written (%d episodes that wrote);"
                            + " %d connections and pulls opened by floods; %d pulls refused by the gateways",
                    dumpWritesFailed.get(),
                    dumpWritesWritten.get(),
                    diskFullWithWrites.get(),
                    flooded.get(),
                    pullsRefused.get());
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

        /**
         * Restarts, as a node's supervisor would, every node that exited without this lane stopping
         * it: the cluster downed it (on a busy machine the resolver has downed a node that was still
         * reachable from one side, beside a killed one), which the run reports as it counts.
         */
        private void restartNodesThatLeft() throws Exception {
            for (int i = 1; i <= c.nodeCount(); i++) {
                if (!c.isAlive(i)) {
                    nodesThatLeft.incrementAndGet();
                    TestCluster.log("node-" + i + " exited on its own (downed by the cluster); restarting it");
                    c.restartNode(i);
                    nodeBackAt = System.nanoTime();
                }
            }
        }

        private void nodeFault(SplittableRandom random) throws Exception {
            pause(random, 1000, 3000);
            if (!running) {
                return;
            }
            restartNodesThatLeft();
            if (namespaces) {
                // A fault starts on a settled cluster: a partition while the last fault's link is still
                // recovering makes the resolver down every node (docs/reliability.md, "Partitions").
                try {
                    c.awaitSettled(SETTLED_WITHIN);
                } catch (AssertionError e) {
                    unsettled.incrementAndGet();
                    TestCluster.log("not settled within " + SETTLED_WITHIN + "; the next fault comes anyway: "
                            + e.getMessage());
                }
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
                case "throttled_link" -> {
                    // 128 kbit/s-2 Mbit/s with a queue of 50-500 ms: delay and jitter that grow with the load.
                    int victim = 1 + random.nextInt(n);
                    c.throttle(victim, 128 + random.nextInt(1921), 50 + random.nextInt(451));
                    Thread.sleep(3000 + random.nextInt(7000)); // the throttle is the fault
                    long[] held = c.throttled(victim);
                    c.heal(victim);
                    throttledPackets.addAndGet(held[0]);
                    throttleDrops.addAndGet(held[1]);
                }
                case "fd_exhaustion" -> {
                    int victim = 1 + random.nextInt(n);
                    exhaustDescriptors(random, victim);
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

        /**
         * Holds more idle connections to node {@code victim}'s gateway than it has descriptors
         * ({@link #NODE_FILE_LIMIT}) for 3-6 s: the node can open no file or socket meanwhile (no
         * accept, no dump, no new connection to a server or a peer). Then they close; the node
         * must serve its gateway again within {@link #SETTLED_WITHIN}, or, if the cluster downed it
         * meanwhile, is restarted like a killed one.
         */
        private void exhaustDescriptors(SplittableRandom random, int victim) throws Exception {
            if (!c.isAlive(victim)) {
                return;
            }
            long pid = c.pidOf(victim);
            java.net.InetSocketAddress address = c.gatewayAddress(victim);
            int count = NODE_FILE_LIMIT + 200 + random.nextInt(300);
            List<java.net.Socket> open = java.util.Collections.synchronizedList(new ArrayList<>());
            long inUse = 0;
            try {
                // In waves (a burst larger than the accept queue has its SYNs dropped and retried), until
                // the node holds its limit.
                for (int wave = 0; wave < count && descriptors(pid) < NODE_FILE_LIMIT - 8; wave += 200) {
                    try (var connecting = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
                        for (int i = wave; i < Math.min(count, wave + 200); i++) {
                            connecting.submit(() -> {
                                java.net.Socket s = new java.net.Socket();
                                try {
                                    s.connect(address, 5000);
                                    open.add(s);
                                } catch (java.io.IOException e) {
                                    s.close();
                                }
                                return null;
                            });
                        }
                    }
                }
                inUse = descriptors(pid);
                fdPeak.accumulateAndGet(inUse, Math::max);
                c.fault(
                        "fd_exhaustion",
                        open.size() + " of " + count + " idle connections open to node-" + victim + "'s gateway; "
                                + inUse + " of its " + NODE_FILE_LIMIT + " descriptors in use");
                pause(random, 3000, 6000);
            } finally {
                synchronized (open) {
                    for (java.net.Socket s : open) {
                        s.close();
                    }
                }
            }
            if (inUse >= NODE_FILE_LIMIT - 8) {
                fdExhausted.incrementAndGet();
            }
            long deadline = System.nanoTime() + SETTLED_WITHIN.toNanos();
            while (c.isAlive(victim) && c.metrics(victim).isEmpty()) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("node-" + victim + " still not serving its gateway " + SETTLED_WITHIN
                            + " after its descriptors were freed");
                }
                Thread.sleep(500);
            }
            if (!c.isAlive(victim)) {
                fdDowned.incrementAndGet();
                TestCluster.log("node-" + victim + " left the cluster while out of descriptors; restarting it");
                c.restartNode(victim);
                nodeBackAt = System.nanoTime();
            }
        }

        /** The descriptors process {@code pid} holds ({@code /proc/<pid>/fd}), or -1 when it is gone. */
        private static long descriptors(long pid) {
            java.io.File[] fds = new java.io.File("/proc/" + pid + "/fd").listFiles();
            return fds == null ? -1 : fds.length;
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

        // ---- the resources' lane ----

        private void resourceFault(SplittableRandom random) throws Exception {
            pause(random, 5000, 15000);
            if (!running) {
                return;
            }
            String kind = RESOURCE_FAULTS.get(random.nextInt(RESOURCE_FAULTS.size()));
            if (kind.equals("dump_disk_full") && dumpDisk == null) {
                kind = "connection_flood";
            }
            int node = 1 + random.nextInt(c.nodeCount());
            switch (kind) {
                case "dump_disk_full" -> diskFull(random);
                case "connection_flood" -> flood(random, node, false);
                case "pull_flood" -> flood(random, node, true);
                case "heap_pressure" -> heapPressure(random, node);
                default -> throw new IllegalArgumentException(kind);
            }
        }

        /**
         * Fills the dumps' disk to the last byte for 2-6 s, then frees it; dump writes meanwhile
         * must fail and be counted (a node that wrote a dump in that time and counted no failure
         * breaks the promise that a full disk is loud). Old dumps are removed when the disk is
         * over half full, as an operator's clean-up would.
         */
        private void diskFull(SplittableRandom random) throws Exception {
            makeRoom();
            Path filler = dumpDisk.resolve("filler");
            fill(filler);
            c.fault("dump_disk_full", "the dumps' disk filled to the last byte");
            Map<Integer, double[]> before = dumpCounts();
            pause(random, 2000, 6000);
            Map<Integer, double[]> after = dumpCounts();
            // A stalled moment of the run (a node fault, the trainer between pulls) writes no dump, and a few
            // appends fit in their files' last pages: the episode lasts until some node failed a write or
            // wrote past that slack, or gives up after DISK_FULL_LONGEST.
            long giveUp = System.nanoTime() + DISK_FULL_LONGEST.toNanos();
            while (running && !conclusive(before, after) && System.nanoTime() < giveUp) {
                Thread.sleep(500);
                after = dumpCounts();
            }
            Files.deleteIfExists(filler);
            if (conclusive(before, after)) {
                diskFullWithWrites.incrementAndGet();
            }
            for (var e : after.entrySet()) {
                double[] b = before.get(e.getKey());
                double[] a = e.getValue();
                if (b == null || a[0] < b[0] || a[1] < b[1]) {
                    continue; // not answering before, or restarted since (its counters began again)
                }
                long failed = (long) (a[1] - b[1]);
                long written = (long) (a[0] - b[0]);
                dumpWritesFailed.addAndGet(failed);
                dumpWritesWritten.addAndGet(written);
                // A write that appends to an existing file can fit in the slack of its last page.
                if (written > 2 && failed == 0) {
                    throw new AssertionError("node-" + e.getKey() + " wrote " + written
                            + " dumps on a full disk and counted no failed write");
                }
            }
        }

        /**
         * Whether a node that answered both times (and did not restart in between) failed a dump write
         * or wrote more than fits in the slack of its files' last pages.
         */
        private static boolean conclusive(Map<Integer, double[]> before, Map<Integer, double[]> after) {
            for (var e : after.entrySet()) {
                double[] b = before.get(e.getKey());
                double[] a = e.getValue();
                if (b != null && a[0] >= b[0] && a[1] >= b[1] && (a[1] > b[1] || a[0] - b[0] > 2)) {
                    return true;
                }
            }
            return false;
        }

        /**
         * Puts node {@code node} under heap pressure for 5-10 s: its reward function ({@link
         * HeapOnCueReward}) exhausts the heap on every fourth question while the cue names the
         * node's process. Each such reward fails and is retried (after the cue, it succeeds), or
         * its task is rejected as {@code failed}, naming it; the node must not die of it (an
         * {@link OutOfMemoryError} outside a reward fails the soak), and the rest of the run
         * carries on.
         */
        private void heapPressure(SplittableRandom random, int node) throws Exception {
            if (!c.isAlive(node)) {
                return;
            }
            ManagedProcess victim = c.nodeProcess(node);
            long before = tasksOutOfHeap(victim);
            Path cue = c.dir().resolve(HeapOnCueReward.CUE);
            Path next = c.dir().resolve(HeapOnCueReward.CUE + ".next");
            Files.writeString(next, Long.toString(victim.pid()));
            Files.move(next, cue, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            c.fault("heap_pressure", "node-" + node + " exhausts its heap on every fourth question");
            try {
                pause(random, 5000, 10000);
            } finally {
                Files.deleteIfExists(cue);
            }
            // A reward that began under the cue fails only when the collector gives up on the heap, after
            // seconds of full collections.
            Thread.sleep(HEAP_EXHAUSTED_WITHIN.toMillis());
            heapEpisodes.incrementAndGet();
            tasksOutOfHeap.addAndGet(Math.max(0, tasksOutOfHeap(victim) - before));
            if (!victim.isAlive() && victim.exitValue() != 137) {
                // Not the nodes' lane's SIGKILL (137): did the heap take the node down?
                Optional<String> fatal = victim.lines().stream()
                        .filter(l -> l.contains("OutOfMemoryError")
                                && !TASK_OUT_OF_HEAP.matcher(l).find())
                        .findFirst();
                if (fatal.isPresent()) {
                    throw new AssertionError("node-" + node + " exited (status " + victim.exitValue()
                            + ") under heap pressure: " + fatal.get());
                }
            }
        }

        /** The rewards that ran out of heap on {@code node}, from its log. */
        private static long tasksOutOfHeap(ManagedProcess node) throws java.io.IOException {
            return node.lines().stream()
                    .filter(l -> TASK_OUT_OF_HEAP.matcher(l).find())
                    .count();
        }

        /** Writes {@code filler} until the disk says no space is left. */
        private static void fill(Path filler) throws java.io.IOException {
            byte[] block = new byte[1 << 16];
            try (var out = Files.newOutputStream(filler)) {
                while (true) {
                    out.write(block);
                }
            } catch (java.io.IOException e) {
                if (!String.valueOf(e.getMessage()).contains("No space left")) {
                    throw e;
                }
            }
            // Then the last bytes, in smaller writes.
            for (int size = 1 << 12; size > 0; size >>= 2) {
                try (var out = Files.newOutputStream(filler, java.nio.file.StandardOpenOption.APPEND)) {
                    byte[] small = new byte[size];
                    while (true) {
                        out.write(small);
                    }
                } catch (java.io.IOException e) {
                    if (!String.valueOf(e.getMessage()).contains("No space left")) {
                        throw e;
                    }
                }
            }
        }

        /** Removes the oldest dump directories while the dumps' disk is over half full. */
        private void makeRoom() throws java.io.IOException {
            java.nio.file.FileStore store = Files.getFileStore(dumpDisk);
            if (store.getUsableSpace() > store.getTotalSpace() / 2) {
                return;
            }
            List<Path> versions;
            try (var walk = Files.walk(dumpDisk, 5)) {
                versions = walk.filter(p -> p.getParent() != null
                                && (p.getParent().getFileName().toString().equals("rollout")
                                        || p.getParent()
                                                .getFileName()
                                                .toString()
                                                .equals("eval-rollout"))
                                && Files.isDirectory(p))
                        .sorted(java.util.Comparator.comparingLong(SoakTest::versionOf))
                        .toList();
            } catch (java.io.UncheckedIOException e) {
                return; // a node removed a file it could not write while we walked: clean up next time
            }
            for (Path v : versions.subList(0, versions.size() / 2 + 1)) {
                try (var walk = Files.walk(v)) {
                    for (Path p :
                            walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                        Files.deleteIfExists(p);
                    }
                } catch (java.io.IOException | java.io.UncheckedIOException e) {
                    // A node writing into it right now: the next clean-up takes it.
                }
            }
            TestCluster.log("dumps' disk over half full: removed the oldest " + (versions.size() / 2 + 1) + " of "
                    + versions.size() + " version directories");
        }

        /** Per live node: {files written, writes failed} from its /metrics. */
        private Map<Integer, double[]> dumpCounts() throws InterruptedException {
            Map<Integer, double[]> out = new java.util.HashMap<>();
            for (int i = 1; i <= c.nodeCount(); i++) {
                Optional<String> text = c.metrics(i);
                if (text.isPresent()) {
                    out.put(i, new double[] {
                        TestCluster.metricSum(text.get(), "rollout_dump_files_written_total"),
                        TestCluster.metricSum(text.get(), "rollout_dump_writes_failed_total")
                    });
                }
            }
            return out;
        }

        /**
         * Opens 100-600 connections to node {@code node}'s gateway at once and holds them 2-5 s:
         * idle ones, or each a batch pull ({@code wait=30}) whose answer is never read. Pulls past
         * {@code gateway.max_waiting_pulls} must be refused and counted in {@code
         * rollout_gateway_pulls_refused_total}; the run's trainer goes on through the other
         * gateways or this one (its own checks).
         */
        private void flood(SplittableRandom random, int node, boolean pulls) throws Exception {
            int count = 100 + random.nextInt(501);
            java.net.InetSocketAddress address = c.gatewayAddress(node);
            Optional<String> before = pulls ? c.metrics(node) : Optional.empty();
            List<java.net.Socket> open = java.util.Collections.synchronizedList(new ArrayList<>());
            byte[] pull = ("POST /v1/batches/next?wait=30 HTTP/1.1\r\nHost: " + address.getHostString() + ":"
                            + address.getPort() + "\r\nAuthorization: Bearer " + TestCluster.GATEWAY_TOKEN
                            + "\r\nContent-Length: 0\r\n\r\n")
                    .getBytes(java.nio.charset.StandardCharsets.US_ASCII);
            try {
                try (var connecting = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
                    for (int i = 0; i < count; i++) {
                        connecting.submit(() -> {
                            java.net.Socket s = new java.net.Socket();
                            try {
                                s.connect(address, 1000);
                                open.add(s);
                                if (pulls) {
                                    s.getOutputStream().write(pull);
                                    s.getOutputStream().flush();
                                }
                            } catch (java.io.IOException e) {
                                s.close();
                            }
                            return null;
                        });
                    }
                }
                flooded.addAndGet(open.size());
                c.fault(
                        pulls ? "pull_flood" : "connection_flood",
                        open.size() + " of " + count + " " + (pulls ? "unread pulls" : "idle connections")
                                + " open to node-" + node + "'s gateway");
                pause(random, 2000, 5000);
                if (pulls && before.isPresent()) {
                    Optional<String> after = c.metrics(node);
                    if (after.isPresent()) {
                        double b = TestCluster.metricSum(before.get(), "rollout_gateway_pulls_refused_total");
                        double a = TestCluster.metricSum(after.get(), "rollout_gateway_pulls_refused_total");
                        if (a >= b) {
                            pullsRefused.addAndGet((long) (a - b));
                            if (open.size() > MAX_WAITING_PULLS + 64 && a == b) {
                                throw new AssertionError(open.size() + " pulls open to node-" + node
                                        + "'s gateway and none refused past gateway.max_waiting_pulls ("
                                        + MAX_WAITING_PULLS + ")");
                            }
                        }
                    }
                }
            } finally {
                synchronized (open) {
                    for (java.net.Socket s : open) {
                        s.close();
                    }
                }
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
