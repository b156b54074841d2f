package org.rollout.benchmarks.e2e;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.cluster.LargePayloads;
import org.rollout.config.ServerAddress;
import org.rollout.modelserver.LatencyModel;
import org.rollout.modelserver.OutputLengths;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.RolloutClient;

/**
 * Scale-out (end to end 5, with the batch hand-off bandwidth): the same job on clusters of 1, 2
 * and 3 node JVMs ({@code rollout node}, started from this JVM's class path), each node with the
 * same number of simulated model servers of its own and the same node capacity, a trainer in this
 * JVM pulling and acknowledging batches through node 1's gateway. Reports groups/s per cluster size,
 * the efficiency {@code groups/s(N) / (N × groups/s(1))}, and the cluster formation time (all N
 * JVMs launched at once until every one printed {@code node up}).
 *
 * <p>The default sizes (20 warm-up batches, then 60 timed) put the timed window after each fresh
 * cluster's start-up: on two cores its first seconds run the machine at 100 % (class loading, and
 * the JIT's compiler threads at over a third of each node's CPU), and a window of 25 batches right
 * after 5 measured that burst as much as the rollout. Tests pass small sizes.
 *
 * <p>Then the hand-off bandwidth: a two-node cluster, both nodes with a trainer gateway, node 1
 * holding the collector, makes groups of {@code handoff-group-size × handoff-tokens} synthetic
 * tokens ({@link ScaleOutWorkflow} with {@code payload_tokens}) until {@code 2 × handoff-batches}
 * batches wait in the collector (after {@code handoff-warmup-batches} pulled through each gateway
 * untimed, for the JIT). The trainer pulls {@code handoff-batches} of them back to back
 * through node 2 with a client that does not follow redirects, so each is relayed from node 1
 * through node 2 (the data plane) to the trainer (HTTP, streamed RBATCH), then the rest through
 * node 1 (collector → gateway in one JVM → trainer). A client that follows node 2's redirect
 * reads from node 1 instead: {@code bench handoff --via other-node}. Bytes
 * per second (tensor bytes, {@link LargePayloads#estimatedBytes}) are set against the same number
 * of bytes sent through a raw loopback TCP socket between two threads of this JVM, in the same run.
 *
 * <p>The model servers live in this JVM (as in the other fleet benchmarks); the node JVMs need the
 * {@code rollout} CLI on the class path, so run it as {@code bin/rollout bench scaleout}.
 */
public final class ScaleOutBenchmark implements EndToEndBenchmark {
    private static final Duration START_TIMEOUT = Duration.ofMinutes(3);
    private static final Duration PULL_TIMEOUT = Duration.ofMinutes(2);

    @Override
    public String name() {
        return "scaleout";
    }

    @Override
    public String description() {
        return "groups/s on 1, 2, 3 node JVMs with the same servers per node; batch hand-off bandwidth vs a raw loopback socket";
    }

    @Override
    public List<Flag> flags() {
        return List.of(
                new Flag("nodes", "1,2,3", "cluster sizes to run, comma-separated"),
                new Flag("servers-per-node", "1", "simulated model servers per node"),
                new Flag("decode-base-us", "20000", "latency model: fixed time of one decode step, µs"),
                new Flag("decode-us-per-seq", "20", "latency model: extra decode time per running sequence, µs"),
                new Flag("prefill-us-per-token", "5", "latency model: time per prompt token admitted, µs"),
                new Flag("max-running", "256", "sequences one server decodes at once"),
                new Flag("lengths", "fixed:length=32", "simulated output length distribution"),
                new Flag("length-seed", "1", "seed of the simulated output lengths"),
                new Flag("max-new-tokens", "64", "gconfig.max_new_tokens"),
                new Flag("prompt-tokens", "32", "prompt tokens per generation"),
                new Flag("group-size", "8", "gconfig.n_samples: samples per prompt"),
                new Flag("node-capacity", "8", "rollout.node_capacity: groups one node runs at once"),
                new Flag("batch", "4", "rollout.consumer_batch_size: groups per batch"),
                new Flag(
                        "warmup-batches",
                        "20",
                        "batches pulled before measuring; fewer leave each fresh node JVM compiling (JIT) in the timed window"),
                new Flag("batches", "60", "batches measured per cluster size"),
                new Flag("node-heap", "384m", "-Xmx of each node JVM"),
                new Flag("handoff-tokens", "32768", "hand-off phase: synthetic output tokens per row"),
                new Flag("handoff-group-size", "16", "hand-off phase: rows per group"),
                new Flag("handoff-batch", "4", "hand-off phase: groups per batch"),
                new Flag(
                        "handoff-warmup-batches",
                        "3",
                        "hand-off phase: batches pulled through each gateway before timing (JIT)"),
                new Flag("handoff-batches", "4", "hand-off phase: batches pulled back to back through each gateway"),
                new Flag("handoff-node-heap", "1536m", "hand-off phase: -Xmx of each node JVM"),
                new Flag(
                        "node-config",
                        "none",
                        "extra key=value settings for every node, separated by ';' (none: no extra)"),
                new Flag("node-main", "org.rollout.cli.RolloutCli", "main class of the rollout CLI on the class path"));
    }

    @Override
    public SummaryLine run(Flags f, PrintStream log) throws Exception {
        String main = f.string("node-main");
        try {
            Class.forName(main, false, getClass().getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("bench scaleout starts node JVMs with " + main
                    + ", which is not on this class path: run it as bin/rollout bench scaleout");
        }
        List<Integer> sizes = nodeCounts(f.string("nodes"));
        Path dir = Files.createTempDirectory("rollout-bench-scaleout-");
        log.printf("scaleout: node logs under %s%n", dir);
        Map<Integer, Point> points = new LinkedHashMap<>();
        for (int n : sizes) {
            Point p = runCluster(f, n, dir, log);
            points.put(n, p);
            log.printf(
                    Locale.ROOT,
                    "scaleout: %d node(s): %.1f groups/s, formation %.2f s, first batch after %.2f s, utilisation %.3f, groups per node %s (in the timed window %s), groups in flight during it %.1f of %d%n",
                    n,
                    p.groupsPerSecond,
                    p.formationSeconds,
                    p.firstBatchSeconds,
                    p.utilisation,
                    p.groupsPerNode,
                    p.groupsPerNodeTimed,
                    p.inFlightMean,
                    n * f.integer("node-capacity", 1));
        }
        Handoff h = runHandoff(f, dir, log);
        log.printf(
                Locale.ROOT,
                "scaleout: hand-off across nodes %.1f MB/s over %d batches (%.1f MB), from the collector's node %.1f MB/s, raw loopback %.1f MB/s%n",
                h.cross.mbPerSecond,
                h.cross.batches,
                h.cross.bytes / 1e6,
                h.same.mbPerSecond,
                h.loopbackMbPerSecond);

        SummaryLine line = new SummaryLine(name());
        Point one = points.get(sizes.get(0));
        int base = sizes.get(0);
        for (Map.Entry<Integer, Point> e : points.entrySet()) {
            int n = e.getKey();
            Point p = e.getValue();
            line.put("groups_per_s_" + n, p.groupsPerSecond)
                    .put("efficiency_" + n, p.groupsPerSecond / (one.groupsPerSecond * n / base))
                    .put("formation_s_" + n, p.formationSeconds)
                    .put("first_batch_s_" + n, p.firstBatchSeconds)
                    .put("utilisation_" + n, p.utilisation)
                    .put("groups_per_node_" + n, p.groupsPerNode.replace(' ', '/'))
                    .put("groups_per_node_timed_" + n, p.groupsPerNodeTimed.replace(' ', '/'))
                    .put("inflight_mean_" + n, p.inFlightMean);
        }
        line.put("handoff_mb_per_s", h.cross.mbPerSecond)
                .put("loopback_mb_per_s", h.loopbackMbPerSecond)
                .put("handoff_to_loopback", h.cross.mbPerSecond / h.loopbackMbPerSecond)
                .put("handoff_bytes", h.cross.bytes)
                .put("handoff_batch_p50_ms", h.cross.batchP50Ms)
                .put("handoff_batch_max_ms", h.cross.batchMaxMs)
                .put("handoff_same_node_mb_per_s", h.same.mbPerSecond)
                .put("handoff_same_node_to_loopback", h.same.mbPerSecond / h.loopbackMbPerSecond);
        f.appendTo(line);
        SimulatedFleet.deleteTree(dir);
        return line;
    }

    static List<Integer> nodeCounts(String spec) {
        List<Integer> sizes = new ArrayList<>();
        for (String s : spec.split(",")) {
            try {
                int n = Integer.parseInt(s.strip());
                if (n >= 1 && n <= 8) {
                    sizes.add(n);
                    continue;
                }
            } catch (NumberFormatException e) {
                // reported below
            }
            throw new IllegalArgumentException(
                    "bench scaleout: --nodes must list cluster sizes from 1 to 8, e.g. 1,2,3; got '" + spec + "'");
        }
        return sizes;
    }

    /**
     * Figures of one cluster size. {@code groupsPerNode}: groups each node started over the whole
     * run (node 1 starts alone while the others join); {@code groupsPerNodeTimed}: over the timed
     * window only (from the nodes' status lines, printed every second); {@code inFlightMean}: the
     * groups running cluster-wide, read after each timed batch (the placement fills every node's
     * capacity when it equals nodes × capacity).
     */
    record Point(
            double groupsPerSecond,
            double formationSeconds,
            double firstBatchSeconds,
            double utilisation,
            String groupsPerNode,
            String groupsPerNodeTimed,
            double inFlightMean) {}

    /** One series of batches pulled back to back. */
    record Transfer(int batches, long bytes, double mbPerSecond, double batchP50Ms, double batchMaxMs) {}

    /**
     * Figures of the hand-off phase: {@code cross}, pulled through the node without the collector;
     * {@code same}, through the collector's own node; the raw loopback socket's rate.
     */
    record Handoff(Transfer cross, Transfer same, double loopbackMbPerSecond) {}

    /**
     * A one-line dataset in {@code dir}: {@link ScaleOutWorkflow} makes its prompts from the task
     * id, but a node with a configured workflow must be given training prompts (the letters task's
     * are the demo's), so it cycles this one item.
     */
    private static Path placeholderDataset(Path dir) throws IOException {
        Path file = dir.resolve("scaleout-prompts.jsonl");
        Files.createDirectories(dir);
        Files.writeString(file, "{\"prompt\": \"scale-out\"}\n");
        return file.toAbsolutePath();
    }

    private Point runCluster(Flags f, int n, Path dir, PrintStream log) throws Exception {
        int perNode = f.integer("servers-per-node", 1);
        int capacity = f.integer("node-capacity", 1);
        int batch = f.integer("batch", 1);
        LatencyModel latency = SimulatedFleet.latency(f);
        OutputLengths lengths = SimulatedFleet.lengths(f);
        try (SimulatedFleet fleet = SimulatedFleet.start(n * perNode, latency, lengths, f.integer("max-running", 1));
                NodeJvms nodes = new NodeJvms(f.string("node-main"), dir.resolve(n + "-nodes"), log)) {
            List<ServerAddress> servers = fleet.addresses();
            List<String> common = List.of(
                    "rollout.workflow=" + ScaleOutWorkflow.class.getName(),
                    "rollout.workflow_kwargs.prompt_tokens=" + f.integer("prompt-tokens", 1),
                    "rollout.dataset.train=" + placeholderDataset(dir),
                    "rollout.tokenizer_path=builtin",
                    "gconfig.n_samples=" + f.integer("group-size", 1),
                    "gconfig.max_new_tokens=" + f.integer("max-new-tokens", 1),
                    "rollout.consumer_batch_size=" + batch,
                    "rollout.node_capacity=" + capacity,
                    "rollout.max_concurrent_rollouts=" + (n * capacity),
                    "rollout.max_head_offpolicyness=1000000",
                    "rollout.trial_name=scaleout-" + n,
                    "rollout.fileroot=" + dir.resolve(n + "-nodes/out"));
            common = withExtra(common, f);
            long t0 = System.nanoTime();
            for (int i = 1; i <= n; i++) {
                List<ServerAddress> own = servers.subList((i - 1) * perNode, i * perNode);
                List<String> args = new ArrayList<>(common);
                args.add("rollout.servers="
                        + own.stream().map(a -> a.host() + ":" + a.port()).collect(Collectors.joining(",")));
                nodes.start(i, i == 1 ? "coordinator,rollout,gateway" : "rollout", f.string("node-heap"), args);
            }
            nodes.awaitAllUp(START_TIMEOUT);
            double formation = (System.nanoTime() - t0) / 1e9;
            try (RolloutClient trainer = RolloutClient.connect(clientConfig(nodes.gatewayUrl(1)))) {
                pull(trainer, 1);
                double firstBatch = (System.nanoTime() - t0) / 1e9;
                pull(trainer, f.integer("warmup-batches", 0) - 1);
                SimulatedFleet.Snapshot before = fleet.snapshot();
                String startedBefore = nodes.groupsStartedPerNode();
                long start = System.nanoTime();
                long[] running = new long[2]; // sum, samples
                int groups = pull(trainer, f.integer("batches", 1), running);
                double seconds = (System.nanoTime() - start) / 1e9;
                double utilisation = fleet.snapshot().utilisationSince(before);
                String startedAfter = nodes.groupsStartedPerNode();
                return new Point(
                        groups / seconds,
                        formation,
                        firstBatch,
                        utilisation,
                        startedAfter,
                        difference(startedAfter, startedBefore),
                        running[1] == 0 ? 0 : (double) running[0] / running[1]);
            }
        }
    }

    /** {@code common} followed by the {@code --node-config} settings (later ones win). */
    static List<String> withExtra(List<String> common, Flags f) {
        String extra = f.string("node-config").strip();
        if (extra.isEmpty() || extra.equals("none")) {
            return common;
        }
        List<String> all = new ArrayList<>(common);
        for (String kv : extra.split(";")) {
            if (!kv.isBlank()) {
                if (!kv.contains("=")) {
                    throw new IllegalArgumentException(
                            "bench scaleout: --node-config wants key=value settings separated by ';', got '" + kv
                                    + "'");
                }
                all.add(kv.strip());
            }
        }
        return all;
    }

    /** Pulls and acknowledges {@code batches} batches; returns the groups they held. */
    private static int pull(RolloutClient trainer, int batches) throws InterruptedException {
        return pull(trainer, batches, null);
    }

    /**
     * Pulls and acknowledges {@code batches} batches; returns the groups they held. With {@code
     * running} ({sum, samples}), reads the groups running cluster-wide after each batch.
     */
    private static int pull(RolloutClient trainer, int batches, long[] running) throws InterruptedException {
        int groups = 0;
        for (int i = 0; i < batches; i++) {
            TrainingBatch b = trainer.nextBatch(PULL_TIMEOUT)
                    .orElseThrow(() -> new IllegalStateException("no batch within " + PULL_TIMEOUT));
            groups += b.groups().size();
            trainer.acknowledge(b);
            if (running != null) {
                running[0] += trainer.status().running();
                running[1]++;
            }
        }
        return groups;
    }

    /** Per-node counts {@code after − before}, both as {@link NodeJvms#groupsStartedPerNode} prints them. */
    static String difference(String after, String before) {
        String[] a = after.split(" ");
        String[] b = before.split(" ");
        if (a.length != b.length) {
            throw new IllegalArgumentException(
                    "per-node counts of different lengths: '" + after + "', '" + before + "'");
        }
        List<String> out = new ArrayList<>();
        for (int i = 0; i < a.length; i++) {
            out.add(Long.toString(Long.parseLong(a[i]) - Long.parseLong(b[i])));
        }
        return String.join(" ", out);
    }

    private Handoff runHandoff(Flags f, Path dir, PrintStream log) throws Exception {
        int batch = f.integer("handoff-batch", 1);
        int batches = f.integer("handoff-batches", 1);
        int warmup = f.integer("handoff-warmup-batches", 0);
        int tokens = f.integer("handoff-tokens", 1);
        int groupSize = f.integer("handoff-group-size", 1);
        // The workflow makes no request, but a node checks its servers when it starts.
        try (SimulatedFleet fleet = SimulatedFleet.start(
                        1,
                        new LatencyModel(Duration.ZERO, Duration.ZERO, Duration.ZERO),
                        new OutputLengths(f.lengths("lengths"), 1),
                        16);
                NodeJvms nodes = new NodeJvms(f.string("node-main"), dir.resolve("handoff"), log)) {
            ServerAddress server = fleet.addresses().get(0);
            List<String> common = List.of(
                    "rollout.workflow=" + ScaleOutWorkflow.class.getName(),
                    "rollout.workflow_kwargs.payload_tokens=" + tokens,
                    "rollout.dataset.train=" + placeholderDataset(dir),
                    "rollout.tokenizer_path=builtin",
                    "rollout.workflow_kwargs.prompt_tokens=" + f.integer("prompt-tokens", 1),
                    "gconfig.n_samples=" + groupSize,
                    "gconfig.max_new_tokens=" + tokens,
                    "rollout.consumer_batch_size=" + batch,
                    // Version 0 admits exactly 2 × (warm-up + timed) batches: after the warm-up the
                    // collector fills with the timed ones, then waits.
                    "rollout.max_head_offpolicyness=" + (2 * (warmup + batches) - 1),
                    "rollout.max_concurrent_rollouts=" + batch,
                    "rollout.servers=" + server.host() + ":" + server.port(),
                    "rollout.trial_name=scaleout-handoff",
                    "rollout.fileroot=" + dir.resolve("handoff/out"));
            common = withExtra(common, f);
            nodes.start(1, "coordinator,rollout,gateway", f.string("handoff-node-heap"), common);
            nodes.start(2, "rollout,gateway", f.string("handoff-node-heap"), common);
            nodes.awaitAllUp(START_TIMEOUT);
            long want = 2L * batch * batches;
            try (RolloutClient local = RolloutClient.connect(clientConfig(nodes.gatewayUrl(1)));
                    // Relayed: a client that followed node 2's redirect would read from node 1 (bench
                    // handoff --via other-node measures that path).
                    RolloutClient remote = RolloutClient.connect(
                            clientConfig(nodes.gatewayUrl(2)).withPullRedirects(false))) {
                // Warm-up: both paths, untimed, as the batches come (the nodes' JIT compiles the
                // Kryo, stream and HTTP code; the first transfers run several times slower).
                pullAll(remote, warmup);
                pullAll(local, warmup);
                long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
                int buffered;
                while ((buffered = local.status().bufferedGroups()) < want) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("hand-off: only " + buffered + " of " + want
                                + " groups buffered within " + START_TIMEOUT);
                    }
                    Thread.sleep(200);
                }
                log.printf(
                        "scaleout: hand-off: %d groups buffered on node 1; pulling through node 2, then node 1%n",
                        buffered);
                Transfer cross = pullAll(remote, batches);
                Transfer same = pullAll(local, batches);
                double loopback = loopbackMbPerSecond(cross.bytes);
                return new Handoff(cross, same, loopback);
            }
        }
    }

    /** Pulls and acknowledges {@code batches} batches back to back, timing each pull. */
    private static Transfer pullAll(RolloutClient trainer, int batches) throws InterruptedException {
        if (batches == 0) {
            return new Transfer(0, 0, 0, 0, 0);
        }
        double[] ms = new double[batches];
        long bytes = 0;
        long start = System.nanoTime();
        for (int i = 0; i < batches; i++) {
            long t = System.nanoTime();
            TrainingBatch b = trainer.nextBatch(PULL_TIMEOUT)
                    .orElseThrow(() -> new IllegalStateException("hand-off: no batch within " + PULL_TIMEOUT));
            ms[i] = (System.nanoTime() - t) / 1e6;
            for (TrainingGroup g : b.groups()) {
                bytes += LargePayloads.estimatedBytes(g.rows());
            }
            trainer.acknowledge(b);
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        Arrays.sort(ms);
        return new Transfer(batches, bytes, bytes / 1e6 / seconds, ms[ms.length / 2], ms[ms.length - 1]);
    }

    /**
     * The median of three transfers of {@code bytes} through a loopback TCP socket, one thread
     * writing 64 KiB chunks, another reading them: what this machine's loopback carries between two
     * endpoints with no framing, copying or decoding.
     */
    static double loopbackMbPerSecond(long bytes) throws Exception {
        double[] runs = new double[3];
        for (int r = 0; r < runs.length; r++) {
            runs[r] = bytes / 1e6 / HandoffBenchmark.loopback(bytes);
        }
        Arrays.sort(runs);
        return runs[1];
    }

    private static ClientConfig clientConfig(String url) {
        return ClientConfig.of(url)
                .withPollWait(Duration.ofSeconds(2))
                .withConnectTimeout(Duration.ofSeconds(5))
                .withRequestTimeout(Duration.ofSeconds(120))
                .withRetry(Duration.ofMillis(100), Duration.ofSeconds(1), Duration.ofSeconds(60));
    }
}
