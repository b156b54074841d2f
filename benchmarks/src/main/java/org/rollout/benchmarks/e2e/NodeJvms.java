package org.rollout.benchmarks.e2e;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Rollout node JVMs ({@code rollout node}) started by a benchmark on 127.0.0.1: node 1 is the seed,
 * the others join it. Each JVM runs this JVM's {@code java} with its class path and logs to {@code
 * node-N.log} in the directory, with bin/rollout's JVM flags (default GC) and the given heap; {@link #close()} stops every one it started (SIGTERM, then SIGKILL
 * after 20 s).
 */
final class NodeJvms implements AutoCloseable {
    private static final Pattern NODE_UP = Pattern.compile("node up: (\\S+) at ");
    private static final Pattern GATEWAY = Pattern.compile("gateway listening on (http\\S+)");
    private static final Pattern PROGRESS = Pattern.compile("node (\\S+): (\\d+) groups started here");

    private final String main;
    private final Path dir;
    private final PrintStream log;
    private final Map<Integer, Node> nodes = new TreeMap<>();

    private record Node(int index, Process process, Path log, int port, boolean gateway) {}

    NodeJvms(String main, Path dir, PrintStream log) throws IOException {
        this.main = main;
        this.dir = Files.createDirectories(dir);
        this.log = log;
    }

    /** Starts node {@code index} (1 is the seed) with {@code roles} and key=value overrides. */
    void start(int index, String roles, String heap, List<String> overrides) throws IOException {
        int port = freePort();
        int seedPort = index == 1 ? port : nodes.get(1).port;
        boolean gateway = roles.contains("gateway");
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xms256m",
                "-Xmx" + heap,
                "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
                "--add-opens=java.base/java.nio=ALL-UNNAMED",
                "--enable-native-access=ALL-UNNAMED"));
        // Pekko uses sun.misc.Unsafe; allowed, the JDK does not warn about it (the flag exists from 23 on).
        if (Runtime.version().feature() >= 23) {
            cmd.add("--sun-misc-unsafe-memory-access=allow");
        }
        // Extra JVM flags for every node (a profiler, GC logging), split on spaces.
        String extra = System.getenv("ROLLOUT_BENCH_NODE_OPTS");
        if (extra != null && !extra.isBlank()) {
            cmd.addAll(List.of(extra.strip().split("\\s+")));
        }
        cmd.addAll(List.of(
                "-cp",
                System.getProperty("java.class.path"),
                main,
                "node",
                "--name",
                "node-" + index,
                "--port",
                Integer.toString(port),
                "--seed-nodes",
                "127.0.0.1:" + seedPort,
                "--roles",
                roles,
                "--progress-every",
                "1"));
        if (gateway) {
            cmd.addAll(List.of("--gateway-port", "0"));
        }
        cmd.addAll(overrides);
        Path file = dir.resolve("node-" + index + ".log");
        Process p = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(file.toFile())
                .start();
        nodes.put(index, new Node(index, p, file, port, gateway));
    }

    /** Waits until every node printed {@code node up} (and its gateway URL, for gateway nodes). */
    void awaitAllUp(Duration timeout) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Node n : nodes.values()) {
            while (find(n, NODE_UP) == null || (n.gateway && find(n, GATEWAY) == null)) {
                if (!n.process.isAlive()) {
                    throw new IllegalStateException("node-" + n.index + " exited with " + n.process.exitValue()
                            + " before it was up; its log: " + n.log + "\n" + tail(n));
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(
                            "node-" + n.index + " not up within " + timeout + "; its log: " + n.log + "\n" + tail(n));
                }
                Thread.sleep(50);
            }
        }
    }

    /** The trainer gateway URL that node {@code index} printed. */
    String gatewayUrl(int index) throws IOException {
        Matcher m = find(nodes.get(index), GATEWAY);
        if (m == null) {
            throw new IllegalStateException("node-" + index + " printed no gateway URL");
        }
        return m.group(1);
    }

    /** The last "K groups started here" of each node, as {@code K1 K2 …} in node order. */
    String groupsStartedPerNode() throws IOException {
        List<String> counts = new ArrayList<>();
        for (Node n : nodes.values()) {
            String last = "0";
            for (String line : Files.readAllLines(n.log, StandardCharsets.UTF_8)) {
                Matcher m = PROGRESS.matcher(line);
                if (m.find()) {
                    last = m.group(2);
                }
            }
            counts.add(last);
        }
        return String.join(" ", counts);
    }

    private static Matcher find(Node n, Pattern p) throws IOException {
        if (!Files.exists(n.log)) {
            return null;
        }
        for (String line : Files.readAllLines(n.log, StandardCharsets.UTF_8)) {
            Matcher m = p.matcher(line);
            if (m.find()) {
                return m;
            }
        }
        return null;
    }

    private static String tail(Node n) throws IOException {
        List<String> lines = Files.exists(n.log) ? Files.readAllLines(n.log, StandardCharsets.UTF_8) : List.of();
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    @Override
    public void close() {
        for (Node n : nodes.values()) {
            n.process.destroy();
        }
        for (Node n : nodes.values()) {
            try {
                if (!n.process.waitFor(20, TimeUnit.SECONDS)) {
                    log.printf("node-%d did not stop on SIGTERM within 20 s: killing it%n", n.index);
                    n.process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                n.process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }
}
