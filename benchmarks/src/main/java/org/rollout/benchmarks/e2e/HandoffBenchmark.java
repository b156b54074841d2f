package org.rollout.benchmarks.e2e;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.rollout.api.BoolTensor;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.config.ServerAddress;
import org.rollout.gateway.GatewayConfig;
import org.rollout.gateway.TrainerGateway;
import org.rollout.modelserver.LatencyModel;
import org.rollout.modelserver.OutputLengths;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.RolloutStatus;
import org.rollout.trainer.wire.BatchWireFormat;

/**
 * The trainer gateway's hand-off rate against a raw loopback socket, per batch size: a {@link
 * TrainerGateway} on 127.0.0.1 in front of an engine-side client that hands out one fixed batch
 * (built once, on the heap, as the collector holds it) under a fresh id at every pull; a trainer
 * pulls and acknowledges it over HTTP with the Java client ({@link RolloutClient#connect}; by
 * default in a JVM of its own, {@link HandoffTrainer}, as a trainer process runs, and with {@code
 * --java in-process} in the benchmark's JVM beside the gateway) and with the Python client (a {@code /usr/bin/python3} process running {@code
 * benchmarks/python/bench_handoff.py}, told to pull over its stdin, recycling each batch's memory
 * after its acknowledgement as a training loop does). Each pull is paired with a
 * transfer of the same number of bytes through a raw loopback TCP socket (one thread writing 64 KiB
 * chunks, another reading them, nothing else), alternating, so both see the same load; the ratio is
 * median rate over median rate.
 *
 * <p>Memory: the Java figure is the trainer JVM's peak heap use (in process: during the timed
 * pulls, after a GC) minus the heap held before them (in process, the batch itself), in units of the batch size: a pull whose client
 * holds the decoded batch and nothing more shows about 1 (2 while the previous one is still
 * reachable); a whole-batch encoded copy on either side would add 1 more. The Python figure is the
 * trainer process's peak resident set size.
 */
final class HandoffBenchmark implements EndToEndBenchmark {
    private static final int LOOPBACK_CHUNK = 64 * 1024;
    private static final Duration PULL_TIMEOUT = Duration.ofSeconds(120);
    /** Each client's rate over the raw socket's that meets the target, at every size. */
    static final double TARGET_RATIO = 0.5;

    private static final int ROWS = 16;
    /** Bytes per token of the batch's keys: input_ids, loss_mask, versions (int32), logprobs (float32), attention_mask (bool). */
    private static final int BYTES_PER_TOKEN = 17;

    @Override
    public String name() {
        return "handoff";
    }

    @Override
    public String description() {
        return "trainer gateway hand-off (Java and Python clients) vs a raw loopback socket, per batch size";
    }

    @Override
    public List<Flag> flags() {
        return List.of(
                new Flag("sizes-mb", "10,100", "batch sizes in MB, comma-separated (1000 needs -Xmx of ~3g)"),
                new Flag("groups", "4", "groups per batch"),
                new Flag("rounds", "9", "timed pulls per size and client, each paired with a loopback transfer"),
                new Flag(
                        "warmup",
                        "10",
                        "untimed pulls (and loopback transfers) per size and client first; with 1-2 both sides still"
                                + " ran partly interpreted"),
                new Flag(
                        "java",
                        "process",
                        "where the Java client runs: process (a JVM of its own, heap pre-touched, as a trainer runs),"
                                + " in-process (in the benchmark's JVM, beside the gateway), both, or none"),
                new Flag("python", "/usr/bin/python3", "the Python interpreter for the Python client (none: skip)"),
                new Flag(
                        "via",
                        "gateway",
                        "where the batch is pulled: gateway (a gateway in this JVM in front of one fixed batch),"
                                + " other-node (two rollout node JVMs; the trainer's contact point is node 2's gateway,"
                                + " the collector and its batches are on node 1: the pull is redirected there), or both"),
                new Flag(
                        "node-rounds",
                        "5",
                        "via other-node: timed pulls per size and client (2 for sizes of 500 MB and more; node 1"
                                + " makes them all before the client starts)"),
                new Flag(
                        "node-warmup",
                        "3",
                        "via other-node: untimed pulls per size and client first (1 for 500 MB and more)"),
                new Flag("node-main", "org.rollout.cli.RolloutCli", "via other-node: main class of the rollout CLI"),
                new Flag(
                        "python-recycle-mb",
                        "4096",
                        "the Python client's recycle_bytes in MiB; each batch is recycled after its ack (0: fresh memory)"));
    }

    @Override
    public SummaryLine run(Flags f, PrintStream log) throws Exception {
        int groups = f.integer("groups", 1);
        int rounds = f.integer("rounds", 1);
        int warmup = f.integer("warmup", 0);
        String python = f.string("python");
        String java = f.string("java");
        if (!List.of("process", "in-process", "both", "none").contains(java)) {
            throw new IllegalArgumentException(
                    "bench handoff: flag --java: '" + java + "' is not one of process, in-process, both, none");
        }
        int recycleMb = f.integer("python-recycle-mb", 0);
        String via = f.string("via");
        if (!List.of("gateway", "other-node", "both").contains(via)) {
            throw new IllegalArgumentException(
                    "bench handoff: flag --via: '" + via + "' is not one of gateway, other-node, both");
        }
        SummaryLine line = new SummaryLine(name());
        double lowest = Double.MAX_VALUE;
        if (!via.equals("gateway")) {
            lowest = Math.min(lowest, viaOtherNode(f, groups, java, python, recycleMb, line, log));
        }
        if (via.equals("other-node")) {
            line.put("target_ratio", TARGET_RATIO).put("met", lowest >= TARGET_RATIO ? "yes" : "no");
            f.appendTo(line);
            return line;
        }
        for (String part : f.string("sizes-mb").split(",")) {
            int mb;
            try {
                mb = Integer.parseInt(part.strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("bench handoff: flag --sizes-mb: '" + part + "' is not a number");
            }
            TrainingBatch template = batchOf(mb, groups);
            long bytes = wireBytes(template);
            FixedBatchEngine engine = new FixedBatchEngine(template);
            String key = mb + "mb";
            line.put("bytes_" + key, bytes);
            try (TrainerGateway gateway =
                    TrainerGateway.start(GatewayConfig.defaults().withPort(0), engine)) {
                if (java.equals("process") || java.equals("both")) {
                    lowest = Math.min(
                            lowest,
                            processRounds(
                                    "Java client (own JVM)",
                                    "java",
                                    javaTrainerCommand(gateway, bytes),
                                    bytes,
                                    warmup,
                                    rounds,
                                    key,
                                    line,
                                    log));
                }
                if (java.equals("in-process") || java.equals("both")) {
                    lowest = Math.min(lowest, inProcessRounds(gateway, bytes, warmup, rounds, key, line, log));
                }
                if (!python.equals("none")) {
                    lowest = Math.min(
                            lowest,
                            processRounds(
                                    "Python client",
                                    "python",
                                    pythonCommand(python, recycleMb, gateway),
                                    bytes,
                                    warmup,
                                    rounds,
                                    key,
                                    line,
                                    log));
                }
            }
        }
        line.put("target_ratio", TARGET_RATIO).put("met", lowest >= TARGET_RATIO ? "yes" : "no");
        f.appendTo(line);
        return line;
    }

    /**
     * The hand-off from a gateway on a node that does not hold the batches: per size and client, two
     * {@code rollout node} JVMs, node 1 with the collector (coordinator, rollout and gateway roles)
     * making groups of synthetic tokens ({@link ScaleOutWorkflow} with {@code payload_tokens}) of
     * about the size's bytes a batch, node 2 a gateway only. Node 1 makes every batch the client
     * will pull before the client starts (the staleness bound admits exactly those groups, one at
     * a time), so no generation competes with a pull. The client's contact point is node 2's
     * gateway: its first pull is redirected to node 1's gateway and the later ones go there
     * directly, so each batch's bytes go from node 1 to the trainer once. Afterwards node 2's
     * /metrics must show no batch relayed. Returns the lowest ratio to the raw socket.
     */
    private static double viaOtherNode(
            Flags f, int groups, String java, String python, int recycleMb, SummaryLine line, PrintStream log)
            throws Exception {
        String main = f.string("node-main");
        try {
            Class.forName(main, false, HandoffBenchmark.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("bench handoff --via other-node starts node JVMs with " + main
                    + ", which is not on this class path: run it as bin/rollout bench handoff");
        }
        double lowest = Double.MAX_VALUE;
        Path dir = Files.createTempDirectory("rollout-bench-handoff-");
        log.printf("handoff: via another node: node logs under %s%n", dir);
        Path dataset = dir.resolve("prompts.jsonl");
        Files.writeString(dataset, "{\"prompt\": \"handoff\"}\n");
        for (String part : f.string("sizes-mb").split(",")) {
            int mb = Integer.parseInt(part.strip());
            // Batches of 500 MB and more: one untimed pull and two timed ones (node 1 holds them all).
            int warmup = mb >= 500 ? Math.min(1, f.integer("node-warmup", 0)) : f.integer("node-warmup", 0);
            int rounds = mb >= 500 ? Math.min(2, f.integer("node-rounds", 1)) : f.integer("node-rounds", 1);
            // input_ids, loss_mask, versions (int32), logprobs (float32), attention_mask (bool) per token.
            int tokens = (int) Math.max(1, (long) mb * 1_000_000 / ((long) groups * ROWS * BYTES_PER_TOKEN));
            long batchBytes = (long) groups * ROWS * tokens * BYTES_PER_TOKEN;
            String key = mb + "mb";
            List<String[]> clients = new ArrayList<>();
            if (!java.equals("none")) {
                clients.add(new String[] {"java_via_other_node", "Java client (own JVM) via another node"});
            }
            if (!python.equals("none")) {
                clients.add(new String[] {"python_via_other_node", "Python client via another node"});
            }
            double relayed = 0;
            double redirected = 0;
            for (String[] client : clients) {
                int batches = warmup + rounds;
                long heapMb = Math.max(768, (long) (batches + 1) * (batchBytes >> 20) + 768);
                try (SimulatedFleet fleet = SimulatedFleet.start(
                                1,
                                new LatencyModel(Duration.ZERO, Duration.ZERO, Duration.ZERO),
                                new OutputLengths(
                                        org.rollout.modelserver.LengthDistribution.parse("fixed:length=8"), 1),
                                16);
                        NodeJvms nodes = new NodeJvms(main, dir.resolve(key + "-" + client[0]), log)) {
                    ServerAddress server = fleet.addresses().get(0);
                    List<String> common = List.of(
                            "rollout.workflow=" + ScaleOutWorkflow.class.getName(),
                            "rollout.workflow_kwargs.payload_tokens=" + tokens,
                            "rollout.workflow_kwargs.prompt_tokens=32",
                            "rollout.dataset.train=" + dataset.toAbsolutePath(),
                            "rollout.tokenizer_path=builtin",
                            "gconfig.n_samples=" + ROWS,
                            "gconfig.max_new_tokens=" + tokens,
                            "rollout.consumer_batch_size=" + groups,
                            // Exactly the batches the client pulls, made one group at a time.
                            "rollout.max_head_offpolicyness=" + (batches - 1),
                            "rollout.queue_size=" + (batches * groups),
                            "rollout.max_concurrent_rollouts=1",
                            "rollout.batch_ack_timeout=600",
                            "rollout.servers=" + server.host() + ":" + server.port(),
                            "rollout.trial_name=handoff-" + key,
                            "rollout.fileroot=" + dir.resolve(key + "/out"),
                            "rollout.dump_to_file=false");
                    nodes.start(1, "coordinator,rollout,gateway", heapMb + "m", common);
                    nodes.start(2, "gateway", "512m", common);
                    nodes.awaitAllUp(Duration.ofMinutes(3));
                    String holder = nodes.gatewayUrl(1);
                    String other = nodes.gatewayUrl(2);
                    try (RolloutClient status = RolloutClient.connect(clientConfig(holder))) {
                        long t0 = System.nanoTime();
                        awaitBuffered(status, batches * groups, Duration.ofMinutes(10));
                        log.printf(
                                Locale.ROOT,
                                "handoff: %s: %d batches made on node 1 in %.1f s; the collector's node's gateway %s,"
                                        + " the trainer's contact point %s%n",
                                key,
                                batches,
                                (System.nanoTime() - t0) / 1e9,
                                holder,
                                other);
                    }
                    List<String> command = client[0].startsWith("java")
                            ? javaTrainerCommand(other, batchBytes)
                            : pythonCommand(python, recycleMb, other);
                    lowest = Math.min(
                            lowest,
                            processRounds(
                                    client[1],
                                    client[0],
                                    command,
                                    batchBytes,
                                    warmup,
                                    rounds,
                                    key,
                                    line,
                                    log,
                                    () -> {}));
                    String metrics = metricsOf(other);
                    relayed += metricSum(metrics, "rollout_batches_relayed_total");
                    redirected += metricSum(metrics, "rollout_gateway_pulls_redirected_total");
                    // Where a pull's time goes: node 1's gateway times each batch from its first byte
                    // to its last (warm-up pulls included); the rest of a pull is the engine's hand-out
                    // (the ask to the collector, the hand-out mark written to a majority) and the head.
                    String onHolder = metricsOf(holder);
                    double streamed = metricSum(onHolder, "rollout_batch_handoff_size_bytes_sum");
                    double streaming = metricSum(onHolder, "rollout_batch_handoff_duration_seconds_sum");
                    double count = metricSum(onHolder, "rollout_batch_handoff_duration_seconds_count");
                    if (streaming > 0 && count > 0) {
                        line.put(client[0] + "_streaming_mb_per_s_" + key, streamed / 1e6 / streaming);
                        log.printf(
                                Locale.ROOT,
                                "handoff: %s %s: node 1's gateway streamed %.0f batches at %.1f MB/s from first byte"
                                        + " to last (%.1f ms a batch)%n",
                                key,
                                client[1],
                                count,
                                streamed / 1e6 / streaming,
                                streaming / count * 1e3);
                    }
                }
            }
            line.put("via_other_node_relayed_" + key, relayed).put("via_other_node_redirected_" + key, redirected);
            log.printf(
                    Locale.ROOT,
                    "handoff: %s via another node: node 2 redirected %.0f pull(s), relayed %.0f batch(es)%n",
                    key,
                    redirected,
                    relayed);
            if (relayed != 0) {
                throw new IllegalStateException("bench handoff: node 2 relayed " + relayed
                        + " batch(es): the pulls were not redirected to the collector's node");
            }
        }
        SimulatedFleet.deleteTree(dir);
        return lowest;
    }

    /** Waits until the collector holds {@code groups} groups. */
    private static void awaitBuffered(RolloutClient status, int groups, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        int buffered;
        while ((buffered = status.status().bufferedGroups()) < groups) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("bench handoff: " + buffered + " of " + groups
                        + " groups buffered on node 1 within " + timeout);
            }
            Thread.sleep(200);
        }
    }

    private static String metricsOf(String gateway) throws IOException, InterruptedException {
        try (java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient()) {
            return http.send(
                            java.net.http.HttpRequest.newBuilder(java.net.URI.create(gateway + "/metrics"))
                                    .timeout(Duration.ofSeconds(30))
                                    .build(),
                            java.net.http.HttpResponse.BodyHandlers.ofString())
                    .body();
        }
    }

    /** The sum of the samples of {@code name} in Prometheus text. */
    static double metricSum(String text, String name) {
        double sum = 0;
        for (String l : text.split("\n")) {
            if (l.startsWith(name + " ") || l.startsWith(name + "{")) {
                sum += Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1));
            }
        }
        return sum;
    }

    /** What is done, untimed, before each pull of a process trainer. */
    @FunctionalInterface
    private interface Ready {
        void await() throws Exception;
    }

    /** The Java client in the benchmark's JVM, beside the gateway; returns its ratio to the raw socket. */
    private static double inProcessRounds(
            TrainerGateway gateway, long bytes, int warmup, int rounds, String key, SummaryLine line, PrintStream log)
            throws Exception {
        try (RolloutClient trainer =
                RolloutClient.connect(clientConfig(gateway.uri().toString()))) {
            for (int i = 0; i < warmup; i++) {
                pullJava(trainer);
                loopback(bytes);
            }
            double[] java = new double[rounds];
            double[] raw = new double[rounds];
            System.gc();
            long before = heapUsed();
            resetPeaks();
            for (int i = 0; i < rounds; i++) {
                java[i] = bytes / 1e6 / pullJava(trainer);
                raw[i] = bytes / 1e6 / loopback(bytes);
            }
            double javaHeap = (peakHeap() - before) / (double) bytes;
            line.put("java_inproc_mb_per_s_" + key, median(java))
                    .put("java_inproc_loopback_mb_per_s_" + key, median(raw))
                    .put("java_inproc_to_loopback_" + key, median(java) / median(raw))
                    .put("java_inproc_peak_heap_batches_" + key, javaHeap);
            log.printf(
                    Locale.ROOT,
                    "handoff: %s batch (%d bytes): Java client in the gateway's JVM %.1f MB/s, raw loopback %.1f MB/s"
                            + " (%.3fx), peak heap +%.2f batches%n",
                    key,
                    bytes,
                    median(java),
                    median(raw),
                    median(java) / median(raw),
                    javaHeap);
            return median(java) / median(raw);
        }
    }

    /** The Python trainer: {@code benchmarks/python/bench_handoff.py} under {@code python}. */
    private static List<String> pythonCommand(String python, int recycleMb, TrainerGateway gateway) {
        return pythonCommand(python, recycleMb, gateway.uri().toString());
    }

    private static List<String> pythonCommand(String python, int recycleMb, String url) {
        Path script = Path.of(
                Optional.ofNullable(System.getenv("ROLLOUT_HOME")).orElse("."), "benchmarks/python/bench_handoff.py");
        if (!Files.isRegularFile(script)) {
            throw new IllegalStateException(
                    "bench handoff: " + script.toAbsolutePath()
                            + " not found; run it as bin/rollout bench handoff, which sets ROLLOUT_HOME (or pass --python none)");
        }
        return List.of(python, script.toString(), "--url", url, "--recycle-mb", Integer.toString(recycleMb));
    }

    /**
     * The Java trainer in a JVM of its own ({@link HandoffTrainer}, this JVM's class path): heap
     * fixed and pre-touched, large enough for two batches and their decoding, as a trainer's JVM
     * would be set up; {@code ROLLOUT_BENCH_TRAINER_OPTS} adds flags (a profiler, say).
     */
    private static List<String> javaTrainerCommand(TrainerGateway gateway, long bytes) {
        return javaTrainerCommand(gateway.uri().toString(), bytes);
    }

    private static List<String> javaTrainerCommand(String url, long bytes) {
        String javaBin = ProcessHandle.current()
                .info()
                .command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        long heapMb = Math.max(512, (3 * bytes >> 20) + 512);
        List<String> cmd = new ArrayList<>(
                List.of(javaBin, "-Xms" + heapMb + "m", "-Xmx" + heapMb + "m", "-XX:+AlwaysPreTouch", "-XX:+UseG1GC"));
        String extra = System.getenv("ROLLOUT_BENCH_TRAINER_OPTS");
        if (extra != null && !extra.isBlank()) {
            cmd.addAll(List.of(extra.strip().split("\\s+")));
        }
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), HandoffTrainer.class.getName(), "--url", url));
        return cmd;
    }

    /**
     * Runs a trainer process that pulls when told to on its stdin and answers "&lt;bytes&gt;
     * &lt;seconds&gt; &lt;peak memory&gt;" ({@code bench_handoff.py}, {@link HandoffTrainer});
     * returns its ratio to the raw socket.
     */
    private static double processRounds(
            String label,
            String prefix,
            List<String> command,
            long bytes,
            int warmup,
            int rounds,
            String key,
            SummaryLine line,
            PrintStream log)
            throws Exception {
        return processRounds(label, prefix, command, bytes, warmup, rounds, key, line, log, null);
    }

    private static double processRounds(
            String label,
            String prefix,
            List<String> command,
            long bytes,
            int warmup,
            int rounds,
            String key,
            SummaryLine line,
            PrintStream log,
            Ready ready)
            throws Exception {
        Process p = new ProcessBuilder(command)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        try (Writer in = new OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8);
                BufferedReader out =
                        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            double[] rate = new double[rounds];
            double[] raw = new double[rounds];
            long memory = 0;
            for (int i = 0; i < warmup + rounds; i++) {
                if (ready != null) {
                    ready.await();
                }
                in.write("pull\n");
                in.flush();
                String answer = out.readLine();
                if (answer == null) {
                    throw new IllegalStateException("bench handoff: the " + label + " ended (see its stderr above)");
                }
                String[] w = answer.strip().split(" ");
                double seconds = Double.parseDouble(w[1]);
                memory = Long.parseLong(w[2]);
                // A batch the nodes made (ready != null) is as big as the trainer says (its tensor
                // bytes); the fixed batch is exactly {@code bytes} on the wire.
                long moved = ready == null ? bytes : Long.parseLong(w[0]);
                double loop = loopback(moved);
                if (i >= warmup) {
                    rate[i - warmup] = moved / 1e6 / seconds;
                    raw[i - warmup] = moved / 1e6 / loop;
                }
            }
            in.write("quit\n");
            in.flush();
            boolean python = prefix.startsWith("python");
            String memoryKey = python ? "_peak_rss_batches_" : "_peak_heap_batches_";
            line.put(prefix + "_mb_per_s_" + key, median(rate))
                    .put(prefix + "_loopback_mb_per_s_" + key, median(raw))
                    .put(prefix + "_to_loopback_" + key, median(rate) / median(raw))
                    .put(prefix + memoryKey + key, memory / (double) bytes);
            log.printf(
                    Locale.ROOT,
                    "handoff: %s batch: %s %.1f MB/s, raw loopback %.1f MB/s (%.3fx), %s %.2f batches%n",
                    key,
                    label,
                    median(rate),
                    median(raw),
                    median(rate) / median(raw),
                    python ? "peak RSS" : "peak heap above the start",
                    memory / (double) bytes);
            return median(rate) / median(raw);
        } finally {
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        }
    }

    /** Seconds to pull, decode and acknowledge one batch with the Java client. */
    private static double pullJava(RolloutClient trainer) throws InterruptedException {
        long start = System.nanoTime();
        TrainingBatch b = trainer.nextBatch(PULL_TIMEOUT)
                .orElseThrow(() -> new IllegalStateException("no batch within " + PULL_TIMEOUT));
        double seconds = (System.nanoTime() - start) / 1e9;
        trainer.acknowledge(b);
        return seconds;
    }

    /** Seconds to move {@code bytes} through a fresh loopback TCP connection, 64 KiB per write. */
    static double loopback(long bytes) throws Exception {
        ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor();
        try (pool;
                ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Future<Long> reader = pool.submit(() -> {
                try (Socket s = server.accept();
                        InputStream in = s.getInputStream()) {
                    byte[] buf = new byte[LOOPBACK_CHUNK];
                    long got = 0;
                    int k;
                    while ((k = in.read(buf)) >= 0) {
                        got += k;
                    }
                    return got;
                }
            });
            long start = System.nanoTime();
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getLocalPort()), 5000);
                OutputStream out = s.getOutputStream();
                byte[] chunk = new byte[LOOPBACK_CHUNK];
                Arrays.fill(chunk, (byte) 7);
                for (long sent = 0; sent < bytes; sent += LOOPBACK_CHUNK) {
                    out.write(chunk, 0, (int) Math.min(LOOPBACK_CHUNK, bytes - sent));
                }
            }
            long got;
            try {
                got = reader.get(2, TimeUnit.MINUTES);
            } catch (TimeoutException e) {
                throw new IllegalStateException("loopback transfer did not finish within 2 minutes", e);
            }
            if (got != bytes) {
                throw new IllegalStateException("loopback transfer lost bytes: " + got + " of " + bytes);
            }
            return (System.nanoTime() - start) / 1e9;
        }
    }

    /** A batch of {@code groups} groups of {@value #ROWS} rows, about {@code mb} MB on the wire. */
    static TrainingBatch batchOf(int mb, int groups) {
        int width = (int) Math.max(1, (long) mb * 1_000_000 / ((long) groups * ROWS * BYTES_PER_TOKEN));
        SplittableRandom rnd = new SplittableRandom(1);
        List<TrainingGroup> gs = new ArrayList<>();
        int[] slots = new int[ROWS];
        int[] counts = new int[ROWS];
        for (int r = 0; r < ROWS; r++) {
            slots[r] = r;
            counts[r] = 1;
        }
        for (int g = 0; g < groups; g++) {
            int n = ROWS * width;
            int[] ids = new int[n];
            float[] logprobs = new float[n];
            for (int k = 0; k < n; k++) {
                ids[k] = rnd.nextInt(50_000);
                logprobs[k] = (float) -rnd.nextDouble();
            }
            TensorDict rows = TensorDict.of(Map.of(
                    "input_ids", Int32Tensor.of(ids, ROWS, width),
                    "attention_mask", BoolTensor.filled(true, ROWS, width),
                    "loss_mask", Int32Tensor.filled(1, ROWS, width),
                    "logprobs", Float32Tensor.of(logprobs, ROWS, width),
                    "versions", Int32Tensor.filled(0, ROWS, width)));
            gs.add(new TrainingGroup(g, 0, rows, slots, counts, 0, 0, 0, 0));
        }
        return new TrainingBatch(0, gs, 0);
    }

    private static long wireBytes(TrainingBatch batch) throws IOException {
        CountingSink sink = new CountingSink();
        BatchWireFormat.write(batch, sink);
        return sink.count;
    }

    private static final class CountingSink extends OutputStream {
        long count;

        @Override
        public void write(int b) {
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) {
            count += len;
        }
    }

    private static double median(double[] xs) {
        double[] s = xs.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private static List<MemoryPoolMXBean> heapPools() {
        return ManagementFactory.getMemoryPoolMXBeans().stream()
                .filter(p -> p.getType() == MemoryType.HEAP)
                .toList();
    }

    static long heapUsed() {
        return heapPools().stream().mapToLong(p -> p.getUsage().getUsed()).sum();
    }

    static void resetPeaks() {
        heapPools().forEach(MemoryPoolMXBean::resetPeakUsage);
    }

    static long peakHeap() {
        return heapPools().stream().mapToLong(p -> p.getPeakUsage().getUsed()).sum();
    }

    private static ClientConfig clientConfig(String url) {
        return ClientConfig.of(url)
                .withPollWait(Duration.ofSeconds(2))
                .withConnectTimeout(Duration.ofSeconds(5))
                .withRequestTimeout(Duration.ofSeconds(120))
                .withRetry(Duration.ofMillis(100), Duration.ofSeconds(1), Duration.ofSeconds(60));
    }

    /** Hands out the same groups under a fresh batch id at every pull; acknowledgements are counted. */
    private static final class FixedBatchEngine implements RolloutClient {
        private final TrainingBatch template;
        private final AtomicLong ids = new AtomicLong();
        final AtomicLong acks = new AtomicLong();

        FixedBatchEngine(TrainingBatch template) {
            this.template = template;
        }

        @Override
        public TrainingBatch nextBatch() {
            return new TrainingBatch(ids.incrementAndGet(), template.groups(), 0);
        }

        @Override
        public Optional<TrainingBatch> nextBatch(Duration timeout) {
            return Optional.of(nextBatch());
        }

        @Override
        public void acknowledge(TrainingBatch batch) {
            acks.incrementAndGet();
        }

        @Override
        public PublishResult publishWeights(int version, Path weights) {
            throw new UnsupportedOperationException("bench handoff publishes no weights");
        }

        @Override
        public RolloutStatus status() {
            return new RolloutStatus(0, 0, 0, 0, 0, 0, 0, 0, 0, Map.of(), Map.of());
        }

        @Override
        public void close() {}
    }
}
