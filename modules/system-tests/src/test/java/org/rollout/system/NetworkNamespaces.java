package org.rollout.system;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One network namespace per cluster node, made by the test and removed after it: each namespace
 * has a veth pair to a bridge in the test's own namespace, on a /24 of 10.213.0.0/16 picked from
 * the test JVM's pid (or the next one no interface here holds). The bridge holds {@code .1} (the model servers and the trainer, which is the
 * test JVM, use it); node {@code i} is {@code .(10 + i)}. Partitions are iptables rules inside a
 * node's namespace, so they cut node-to-node traffic and nothing else; no address outside this
 * machine is ever involved.
 *
 * <pre>
 *   test JVM, model servers ── br (10.213.K.1) ──┬─ veth ─ ns node-1 (10.213.K.11)
 *                                                ├─ veth ─ ns node-2 (10.213.K.12)
 *                                                └─ veth ─ ns node-3 (10.213.K.13)
 * </pre>
 */
final class NetworkNamespaces implements AutoCloseable {
    private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(20);

    private final String tag;
    private final String subnet;
    private final Path workDir;
    private final int nodes;

    private NetworkNamespaces(String tag, String subnet, Path workDir, int nodes) {
        this.tag = tag;
        this.subnet = subnet;
        this.workDir = workDir;
        this.nodes = nodes;
    }

    /**
     * Why namespaces cannot be made here (not root, no {@code ip} or {@code iptables}), or empty
     * when they can: a probe namespace is created, given a rule and removed.
     */
    static Optional<String> unavailable(Path workDir) {
        String probe = "rt-probe-" + ProcessHandle.current().pid();
        try {
            String out = ManagedProcess.run(
                    List.of(
                            "/bin/sh",
                            "-c",
                            "ip netns add " + probe + " 2>&1 && ip netns exec " + probe
                                    + " iptables -A INPUT -s 10.213.255.254 -j DROP 2>&1; r=$?; ip netns del "
                                    + probe + " 2>/dev/null; [ $r = 0 ] && echo usable; true"),
                    Map.of(),
                    workDir,
                    COMMAND_TIMEOUT);
            return out.contains("usable")
                    ? Optional.empty()
                    : Optional.of("cannot make a network namespace with an iptables rule here (root, iproute2 and"
                            + " iptables are needed): " + out.strip());
        } catch (IOException | InterruptedException | AssertionError e) {
            return Optional.of("cannot run ip/iptables: " + e);
        }
    }

    /** Creates the bridge and {@code nodes} namespaces. */
    static NetworkNamespaces create(int nodes, Path workDir) throws IOException, InterruptedException {
        long pid = ProcessHandle.current().pid();
        NetworkNamespaces n = new NetworkNamespaces("r" + (pid % 100000), "10.213." + freeSubnet(pid), workDir, nodes);
        StringBuilder script = new StringBuilder("set -e\n");
        script.append("ip link add ").append(n.bridge()).append(" type bridge\n");
        script.append("ip addr add ")
                .append(n.bridgeIp())
                .append("/24 dev ")
                .append(n.bridge())
                .append('\n');
        script.append("ip link set ").append(n.bridge()).append(" up\n");
        for (int i = 1; i <= nodes; i++) {
            String ns = n.namespace(i);
            String host = n.hostVeth(i);
            script.append("ip netns add ").append(ns).append('\n');
            script.append("ip link add ")
                    .append(host)
                    .append(" type veth peer name eth0 netns ")
                    .append(ns)
                    .append('\n');
            script.append("ip link set ")
                    .append(host)
                    .append(" master ")
                    .append(n.bridge())
                    .append(" up\n");
            script.append("ip netns exec ")
                    .append(ns)
                    .append(" ip addr add ")
                    .append(n.nodeIp(i))
                    .append("/24 dev eth0\n");
            script.append("ip netns exec ").append(ns).append(" ip link set eth0 up\n");
            script.append("ip netns exec ").append(ns).append(" ip link set lo up\n");
            script.append("ip netns exec ")
                    .append(ns)
                    .append(" ip route add default via ")
                    .append(n.bridgeIp())
                    .append('\n');
        }
        try {
            sh(workDir, script.toString());
        } catch (AssertionError | IOException e) {
            n.close();
            throw e;
        }
        return n;
    }

    String bridgeIp() {
        return subnet + ".1";
    }

    /** Node {@code i}'s address (1-based). */
    String nodeIp(int i) {
        return subnet + "." + (10 + i);
    }

    /** The command prefix that runs a program in node {@code i}'s namespace. */
    List<String> exec(int i) {
        return List.of("ip", "netns", "exec", namespace(i));
    }

    /** Node {@code i} and each of {@code peers} no longer reach each other (both ways). */
    void cut(int i, int... peers) throws IOException, InterruptedException {
        StringBuilder rules = new StringBuilder();
        for (int p : peers) {
            rules.append(inNs(i, "iptables -A INPUT -s " + nodeIp(p) + " -j DROP"));
            rules.append(inNs(i, "iptables -A OUTPUT -d " + nodeIp(p) + " -j DROP"));
        }
        sh(workDir, rules.toString());
    }

    /** Node {@code i} no longer hears {@code peer}; {@code peer} still hears node {@code i} (one way). */
    void cutInbound(int i, int peer) throws IOException, InterruptedException {
        sh(workDir, inNs(i, "iptables -A INPUT -s " + nodeIp(peer) + " -j DROP"));
    }

    /**
     * Every packet in or out of node {@code i} (to nodes, model servers and the trainer alike) is
     * dropped with {@code probability}: real loss that TCP must retransmit through.
     */
    void lossy(int i, double probability) throws IOException, InterruptedException {
        String p = String.format(java.util.Locale.ROOT, "%.3f", probability);
        sh(
                workDir,
                inNs(i, "iptables -A INPUT -m statistic --mode random --probability " + p + " -j DROP")
                        + inNs(i, "iptables -A OUTPUT -m statistic --mode random --probability " + p + " -j DROP"));
    }

    /**
     * Node {@code i}'s link, both ways, throttled to {@code kbit} kbit/s with a queue of at most
     * {@code latencyMs} (a {@code tbf} qdisc on each end of its veth; this kernel has no {@code
     * netem}): every packet past the rate waits in the queue, up to that long, and one that would
     * wait longer is dropped. Real delay and jitter, growing with the link's load, for everything
     * the node sends or receives (other nodes, model servers, trainers).
     */
    void throttle(int i, int kbit, int latencyMs) throws IOException, InterruptedException {
        String tbf = " root tbf rate " + kbit + "kbit burst 4kb latency " + latencyMs + "ms";
        sh(workDir, inNs(i, "tc qdisc replace dev eth0" + tbf) + "tc qdisc replace dev " + hostVeth(i) + tbf + "\n");
    }

    /**
     * The packets node {@code i}'s throttles held back so far, {@code {delayed, dropped}}: {@code
     * overlimits} and {@code dropped} of both ends' {@code tbf} (zeros when none is set).
     */
    long[] throttled(int i) throws IOException, InterruptedException {
        String out = throttleStats(i);
        long delayed = 0;
        long dropped = 0;
        boolean tbf = false;
        for (String line : out.split("\n")) {
            if (line.startsWith("qdisc ")) {
                tbf = line.startsWith("qdisc tbf ");
            } else if (tbf) {
                java.util.regex.Matcher m = java.util.regex.Pattern.compile("dropped (\\d+), overlimits (\\d+)")
                        .matcher(line);
                if (m.find()) {
                    dropped += Long.parseLong(m.group(1));
                    delayed += Long.parseLong(m.group(2));
                }
            }
        }
        return new long[] {delayed, dropped};
    }

    /** What {@code tc -s qdisc show} says of both ends of node {@code i}'s link. */
    String throttleStats(int i) throws IOException, InterruptedException {
        return ManagedProcess.run(
                List.of(
                        "/bin/sh",
                        "-c",
                        inNs(i, "tc -s qdisc show dev eth0") + "tc -s qdisc show dev " + hostVeth(i) + "\n"),
                Map.of(),
                workDir,
                COMMAND_TIMEOUT);
    }

    /** Removes every rule of node {@code i}'s namespace and the throttle of its link. */
    void heal(int i) throws IOException, InterruptedException {
        sh(
                workDir,
                inNs(i, "iptables -F INPUT") + inNs(i, "iptables -F OUTPUT")
                        + inNs(i, "tc qdisc del dev eth0 root 2>/dev/null || true")
                        + "tc qdisc del dev " + hostVeth(i) + " root 2>/dev/null || true\n");
    }

    @Override
    public void close() {
        StringBuilder script = new StringBuilder();
        for (int i = 1; i <= nodes; i++) {
            script.append("ip netns del ").append(namespace(i)).append(" 2>/dev/null || true\n");
        }
        script.append("ip link del ").append(bridge()).append(" 2>/dev/null || true\n");
        try {
            sh(workDir, script.toString());
        } catch (IOException | InterruptedException | AssertionError e) {
            TestCluster.log("removing the network namespaces failed: " + e);
        }
    }

    private String namespace(int i) {
        return tag + "-node" + i;
    }

    /** The bridge's end of node {@code i}'s veth, in the root namespace. */
    private String hostVeth(int i) {
        return tag + "h" + i;
    }

    private String bridge() {
        return tag + "br";
    }

    private String inNs(int i, String command) {
        return "ip netns exec " + namespace(i) + " " + command + "\n";
    }

    /**
     * The third byte of a /24 of 10.213.0.0/16 that no interface here holds: the one the pid picks,
     * or the next free one. A bridge left by a run that was killed before it could clean up keeps
     * its address, and a second bridge on the same /24 left the new nodes unable to reach the model
     * servers (two test JVMs whose pids agree modulo 250).
     */
    private static int freeSubnet(long pid) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("ip", "-o", "-4", "addr", "show")
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("ip addr show did not end within 10 s");
        }
        Set<Integer> used = new HashSet<>();
        Matcher m = Pattern.compile("inet 10\\.213\\.(\\d+)\\.").matcher(out);
        while (m.find()) {
            used.add(Integer.parseInt(m.group(1)));
        }
        for (int i = 0; i < 250; i++) {
            int k = (int) ((pid + i) % 250);
            if (!used.contains(k)) {
                return k;
            }
        }
        throw new IOException("every /24 of 10.213.0.0/16 below .250 is in use here");
    }

    private static void sh(Path workDir, String script) throws IOException, InterruptedException {
        // Every line must succeed: a rule or qdisc that failed to apply would leave a fault that never happened.
        List<String> cmd = new ArrayList<>(List.of("/bin/sh", "-c", "set -e\n" + script));
        ManagedProcess.run(cmd, Map.of(), workDir, COMMAND_TIMEOUT);
    }
}
