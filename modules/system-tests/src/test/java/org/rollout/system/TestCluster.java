package org.rollout.system;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.RolloutClient;

/**
 * A rollout cluster of real processes on 127.0.0.1 for a system test: model servers ({@code
 * rollout model-server}), cluster nodes ({@code rollout node}, every one with the gateway role) and
 * the means to hurt them.
 *
 * <pre>
 *   try (TestCluster c = TestCluster.aCluster(run).withNodes(3).withModelServers(2)
 *           .withTransport(Transport.TCP).withConfig("rollout.consumer_batch_size=4").start()) {
 *       CheckedTrainer t = c.checkedTrainer();
 *       c.killNode(3);  c.restartNode(3);  c.killSingletonNode();
 *       c.crashServer(1);  c.restartServer(1);  c.hangServer(0);  c.resumeServer(0);
 *   }
 * </pre>
 *
 * <p>Layout: node 1 is the seed, the only node the others join through, so it is the oldest node
 * and holds the singletons (coordinator, collector, weight version); every process of the cluster
 * starts at once (a node waits for the model servers); nodes 1 and 2 have the coordinator role
 * ({@link Builder#withCoordinators}), so node 2 takes the singletons over when node 1 is lost;
 * every node runs groups and serves trainers. Each node and server keeps its ports across restarts
 * (a restarted node joins through the nodes alive at the time). Nodes use {@code
 * cluster-config/local.conf} with faster failure detection (a killed node is downed after about
 * 7 s: {@code fast-failure-detection.conf}), the demo's letters workflow, and the run
 * configuration given with {@link Builder#withConfig}; the task journal ({@code rollout.tasks}) is
 * on, so that every task can be accounted for ({@link TaskAccounting}).
 *
 * <p>Faults: {@link #killNode} and {@link #crashServer} are SIGKILL, {@link #hangServer} is
 * SIGSTOP; each is counted in {@link #faults()}. {@link #close()} stops everything (SIGTERM, then
 * SIGKILL), and the test's {@link SystemTestRun} kills whatever is left even when the test failed.
 */
final class TestCluster implements AutoCloseable {
    static final Pattern NODE_UP = Pattern.compile("node up: (\\S+) at (\\S+) roles=\\[(.*)\\]");
    static final Pattern GATEWAY = Pattern.compile("gateway listening on (http\\S+)");
    static final Pattern PROGRESS = Pattern.compile("node (\\S+): (\\d+) groups started here");
    static final Pattern SERVER_UP = Pattern.compile("model server listening on (http://\\S+)");
    /** Pekko's singleton manager on the node where a singleton starts. */
    static final Pattern SINGLETON_STARTED =
            Pattern.compile("^(\\S+) .*[Ss]ingleton manager start(ing|ed) singleton actor.*rollout-coordinator");

    private static final Duration START_TIMEOUT = SystemTestRun.START_TIMEOUT;
    private static final Duration STOP_GRACE = Duration.ofSeconds(20);
    /**
     * The grace of a node that records the class-data archive: it writes the archive (about 70 MB)
     * as it exits, which on a loaded machine takes longer than {@link #STOP_GRACE}; killed before it
     * is done, it leaves no archive, and every later node records again and starts without one.
     */
    private static final Duration ARCHIVE_STOP_GRACE = Duration.ofSeconds(60);

    private static final Object ARCHIVE_LOCK = new Object();
    private static boolean archiveInProgress;

    /** How the nodes talk to each other. */
    enum Transport {
        /** Artery TCP: {@code cluster-config/local.conf} alone. */
        TCP,
        /** Artery over Aeron UDP: {@code aeron.conf}, an embedded media driver per node. */
        AERON_UDP,
        /** Artery over TLS 1.3 with mutual authentication: {@code tls.conf}, stores from {@code gen-keystores.sh}. */
        TLS
    }

    static Builder aCluster(SystemTestRun run) {
        return new Builder(run);
    }

    /** What to start; {@link #start()} starts it. */
    static final class Builder {
        private final SystemTestRun run;
        private int nodes = 3;
        private int coordinators = 2;
        private int servers = 2;
        private Transport transport = Transport.TCP;
        private final List<String> config = new ArrayList<>();
        private final List<String> serverFlags = new ArrayList<>();
        private final Map<Integer, List<String>> serverFlagsFor = new HashMap<>();
        private String nodeHeap = "256m";
        private boolean namespaces;
        private final List<String> nodeProfiles = new ArrayList<>();
        private boolean bootstrap;
        private boolean management;
        private int nodeFileLimit;
        private boolean serverProxies;
        private final List<Integer> nodesBehindProxy = new ArrayList<>();

        private Builder(SystemTestRun run) {
            this.run = run;
        }

        Builder withNodes(int n) {
            this.nodes = n;
            return this;
        }

        /** The first {@code n} nodes may host the singletons (default 2). */
        Builder withCoordinators(int n) {
            this.coordinators = n;
            return this;
        }

        Builder withModelServers(int n) {
            this.servers = n;
            return this;
        }

        Builder withTransport(Transport t) {
            this.transport = t;
            return this;
        }

        /** Run configuration overrides ({@code key=value}), after the system tests' defaults. */
        Builder withConfig(String... keyValues) {
            config.addAll(List.of(keyValues));
            return this;
        }

        /** Flags of every model server ({@code --decode-base-us 2000}, …). */
        Builder withServerFlags(String... flags) {
            serverFlags.addAll(List.of(flags));
            return this;
        }

        /** Flags of model server {@code index} (0-based), after the common ones. */
        Builder withServerFlagsFor(int index, String... flags) {
            serverFlagsFor.computeIfAbsent(index, k -> new ArrayList<>()).addAll(List.of(flags));
            return this;
        }

        /**
         * Every node in a network namespace of its own on a bridge ({@link NetworkNamespaces}), so
         * that {@link #partition} and friends can cut links; check {@link
         * NetworkNamespaces#unavailable} first.
         */
        Builder withNetworkNamespaces() {
            this.namespaces = true;
            return this;
        }

        /** A test resource layered as a node profile after the system tests' own. */
        Builder withNodeProfile(String resource) {
            nodeProfiles.add(resource);
            return this;
        }

        /**
         * Nodes find each other by Cluster Bootstrap with config discovery (each node's management
         * endpoint listed as a contact point) instead of seed nodes; they start all at once.
         */
        Builder withBootstrap() {
            this.bootstrap = true;
            return this;
        }

        /**
         * Every node serves its management endpoint ({@code --management-port}, on its own host),
         * which {@link #awaitSettled} reads; bootstrap nodes serve it anyway.
         */
        Builder withManagement() {
            this.management = true;
            return this;
        }

        /**
         * Every node JVM started under {@code ulimit -n limit} (a shell that sets it and execs the
         * JVM, so the node's pid is the shell's).
         */
        Builder withNodeFileLimit(int limit) {
            this.nodeFileLimit = limit;
            return this;
        }

        /**
         * A {@link FaultProxy} in front of every model server: the nodes' {@code rollout.servers}
         * name the proxies, so every node-to-server exchange (generation, health check, weight
         * update) crosses one ({@link #serverProxy}). With {@link #withNetworkNamespaces()} the
         * proxies listen on the bridge's address, beside the servers.
         */
        Builder withServerProxies() {
            this.serverProxies = true;
            return this;
        }

        /**
         * Node {@code index} (1-based, not the seed) advertises the port of a {@link FaultProxy}
         * ({@code pekko.remote.artery.canonical.port}) while it binds its own ({@code
         * pekko.remote.artery.bind.port}): every connection another node opens to it crosses the
         * proxy ({@link #nodeProxy}). Not with {@link #withNetworkNamespaces()}.
         */
        Builder withNodeBehindProxy(int index) {
            nodesBehindProxy.add(index);
            return this;
        }

        Builder withNodeHeap(String heap) {
            this.nodeHeap = heap;
            return this;
        }

        TestCluster start() throws IOException, InterruptedException {
            TestCluster c = new TestCluster(this);
            c.startAll();
            return c;
        }
    }

    /** A model server's slot: its port outlives its processes. */
    private static final class ServerSlot {
        final int index;
        final int port;
        List<String> flags;
        ManagedProcess process;
        int incarnation;

        ServerSlot(int index, int port, List<String> flags) {
            this.index = index;
            this.port = port;
            this.flags = flags;
        }
    }

    /** A node's slot: name and ports outlive its processes. */
    private static final class NodeSlot {
        final int index;
        final String name;
        /** The port other nodes dial (Artery's canonical port). */
        final int port;
        /** The port the node binds: {@link #port}, or the real port behind a node proxy. */
        int bindPort;

        final int gatewayPort;
        final int managementPort;
        final List<String> roles;
        final List<ManagedProcess> incarnations = new ArrayList<>();
        ManagedProcess process;
        Path archiveInProgress;

        NodeSlot(int index, int port, int gatewayPort, int managementPort, List<String> roles) {
            this.index = index;
            this.name = "node-" + index;
            this.port = port;
            this.bindPort = port;
            this.gatewayPort = gatewayPort;
            this.managementPort = managementPort;
            this.roles = roles;
        }

        boolean alive() {
            return process != null && process.isAlive();
        }
    }

    private final SystemTestRun run;
    private final Builder spec;
    private final Path dir;
    private final Path java;
    private final Path cliJar;
    private final Path repoRoot;
    private final Faults faults = new Faults();
    private final List<ServerSlot> servers = new ArrayList<>();
    private final List<NodeSlot> nodes = new ArrayList<>();
    private final Map<String, String> nodeEnv = new HashMap<>();
    private final List<String> transportProfiles = new ArrayList<>();
    private final List<String> transportJvmFlags = new ArrayList<>();
    private Path weights;
    private Path tlsDir;
    private NetworkNamespaces netns;
    private final Map<Integer, FaultProxy> serverProxies = new HashMap<>();
    private final Map<Integer, FaultProxy> nodeProxies = new HashMap<>();
    private boolean closed;

    private TestCluster(Builder spec) {
        this.run = spec.run;
        this.spec = spec;
        this.dir = spec.run.dir();
        this.java = Path.of(System.getProperty("java.home"), "bin", "java");
        this.cliJar = Path.of(System.getProperty("rollout.cli.jar", "../cli/target/rollout-cli.jar"))
                .toAbsolutePath()
                .normalize();
        this.repoRoot = Path.of(System.getProperty("rollout.repo.root", "../.."))
                .toAbsolutePath()
                .normalize();
        if (!Files.isRegularFile(cliJar)) {
            throw new IllegalStateException("the CLI jar " + cliJar + " is missing: build modules/cli first (mvn -pl"
                    + " modules/system-tests -am verify packages it)");
        }
    }

    // ---- start ----

    private void startAll() throws IOException, InterruptedException {
        prepareTransport();
        if (spec.namespaces) {
            netns = NetworkNamespaces.create(spec.nodes, dir);
            run.onCleanup(netns::close);
        }
        for (int i = 0; i < spec.servers; i++) {
            List<String> flags = new ArrayList<>(spec.serverFlags);
            flags.addAll(spec.serverFlagsFor.getOrDefault(i, List.of()));
            servers.add(new ServerSlot(i, freePort(), flags));
        }
        if (!spec.nodesBehindProxy.isEmpty() && spec.namespaces) {
            throw new IllegalStateException("node proxies run on 127.0.0.1, not with network namespaces");
        }
        if (spec.serverProxies) {
            for (ServerSlot s : servers) {
                // Beside the servers: on the bridge's address when the nodes are in namespaces.
                FaultProxy proxy = new FaultProxy(
                        "server-" + s.index,
                        serverHost(),
                        0,
                        new java.net.InetSocketAddress(serverHost(), s.port),
                        1000 + s.index);
                serverProxies.put(s.index, proxy);
                run.onCleanup(proxy::close);
            }
        }
        for (int i = 1; i <= spec.nodes; i++) {
            List<String> roles = new ArrayList<>();
            if (i <= spec.coordinators) {
                roles.add("coordinator");
            }
            roles.add("rollout");
            roles.add("gateway");
            if (spec.nodesBehindProxy.contains(i)) {
                if (i == 1) {
                    throw new IllegalStateException("the seed node-1 cannot be behind a proxy");
                }
                int real = freePort();
                FaultProxy proxy =
                        FaultProxy.to("node-" + i, new java.net.InetSocketAddress("127.0.0.1", real), 2000 + i);
                nodeProxies.put(i, proxy);
                run.onCleanup(proxy::close);
                NodeSlot n = new NodeSlot(i, proxy.port(), freePort(), freePort(), roles);
                n.bindPort = real;
                nodes.add(n);
            } else {
                nodes.add(new NodeSlot(i, freePort(), freePort(), freePort(), roles));
            }
        }
        if (spec.bootstrap) {
            writeBootstrapProfile();
        }
        // Everything starts at once: JVM start is most of a cluster's start-up on 2 cores, and
        // nothing needs to wait for it. A node waits for the model servers to answer their health
        // checks before it joins (setup_timeout). Node 1 is every other node's only seed node, so
        // the others can join only through it once it is Up: it is the oldest node and holds the
        // singletons however the JVMs' starts interleave.
        ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor();
        try {
            List<Future<?>> started = new ArrayList<>();
            started.add(pool.submit(() -> {
                startServers();
                return null;
            }));
            for (NodeSlot n : nodes) {
                started.add(pool.submit(() -> {
                    startNode(n, List.of(nodes.get(0)));
                    return null;
                }));
            }
            for (Future<?> f : started) {
                get(f);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** The demo's weights, then every model server on them at once. */
    private void startServers() throws IOException, InterruptedException {
        Path v0 = demoWeights();
        weights = Files.createDirectories(dir.resolve("weights")).resolve(v0.getFileName());
        Files.copy(v0, weights);
        ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor();
        try {
            List<Future<?>> started = new ArrayList<>();
            for (ServerSlot s : servers) {
                started.add(pool.submit(() -> {
                    startServer(s);
                    return null;
                }));
            }
            for (Future<?> f : started) {
                get(f);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private static final Object DEMO_WEIGHTS_LOCK = new Object();
    private static Path demoWeights;

    /**
     * The demo's initial weights as this build's {@code rollout demo-weights} writes them: made once
     * per test JVM (a JVM start, on the critical path of every cluster's start on 2 cores) and
     * copied into each test's directory. They depend only on the build (a fixed seed); made anew by
     * each test JVM, they are always the build's under test.
     */
    private Path demoWeights() throws IOException, InterruptedException {
        synchronized (DEMO_WEIGHTS_LOCK) {
            if (demoWeights == null) {
                Path into = Path.of(System.getProperty("rollout.system.dir", "target/system-tests"))
                        .toAbsolutePath()
                        .resolve("demo-weights-" + ProcessHandle.current().pid());
                SystemTestRun.deleteRecursively(into);
                String out = ManagedProcess.run(
                        cliCommand(withArchive("-Xmx128m"), List.of("demo-weights", into.toString())),
                        Map.of(),
                        dir,
                        START_TIMEOUT);
                Path v0 = Path.of(out.strip().lines().reduce((x, y) -> y).orElseThrow())
                        .toAbsolutePath();
                Runtime.getRuntime()
                        .addShutdownHook(
                                new Thread(() -> SystemTestRun.deleteRecursively(into), "demo-weights-cleanup"));
                demoWeights = v0;
            }
            return demoWeights;
        }
    }

    private static void get(Future<?> f) throws IOException, InterruptedException {
        try {
            f.get();
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof IOException io) {
                throw io;
            }
            if (c instanceof InterruptedException ie) {
                throw ie;
            }
            if (c instanceof Error err) {
                throw err;
            }
            throw new IllegalStateException(c);
        }
    }

    private void prepareTransport() throws IOException, InterruptedException {
        switch (spec.transport) {
            case TCP -> {}
            case AERON_UDP -> {
                transportProfiles.add(
                        repoRoot.resolve("cluster-config/aeron.conf").toString());
                transportJvmFlags.add("-Daeron.term.buffer.length=2097152");
            }
            case TLS -> {
                transportProfiles.add(
                        repoRoot.resolve("cluster-config/tls.conf").toString());
                tlsDir = dir.resolve("tls");
                String password = HexFormat.of().formatHex(new SecureRandom().generateSeed(12));
                ManagedProcess.run(
                        List.of(
                                "bash",
                                repoRoot.resolve("cluster-config/gen-keystores.sh")
                                        .toString(),
                                tlsDir.toString()),
                        Map.of("ROLLOUT_TLS_PASSWORD", password, "JAVA_HOME", System.getProperty("java.home")),
                        dir,
                        START_TIMEOUT);
                nodeEnv.put("ROLLOUT_TLS_PASSWORD", password);
                nodeEnv.put("ROLLOUT_TLS_KEY_STORE", tlsDir.resolve("node.p12").toString());
                nodeEnv.put(
                        "ROLLOUT_TLS_TRUST_STORE",
                        tlsDir.resolve("truststore.p12").toString());
            }
        }
    }

    /** Config discovery's contact points: every node's management endpoint; all of them needed to form. */
    private void writeBootstrapProfile() throws IOException {
        StringBuilder b = new StringBuilder("pekko.discovery.config.services.rollout.endpoints = [\n");
        for (NodeSlot n : nodes) {
            b.append("  { host = \"127.0.0.1\", port = ")
                    .append(n.managementPort)
                    .append(" }\n");
        }
        // Every endpoint is on 127.0.0.1 with a port of its own: keep them all (by default Bootstrap
        // keeps only the targets on the management port's own number).
        b.append("]\n")
                .append("pekko.management.cluster.bootstrap.contact-point.filter-on-fallback-port = false\n")
                .append("pekko.management.cluster.bootstrap.contact-point-discovery.required-contact-point-nr = ")
                .append(nodes.size())
                .append('\n');
        Files.writeString(bootstrapProfile(), b.toString());
    }

    private Path bootstrapProfile() {
        return dir.resolve("bootstrap.conf");
    }

    private void startServer(ServerSlot s) throws IOException, InterruptedException {
        List<String> args = new ArrayList<>(
                List.of("model-server", "--port", Integer.toString(s.port), "--weights", weights.toString()));
        if (netns != null) {
            args.addAll(List.of("--host", serverHost()));
        }
        args.addAll(s.flags);
        String name = "server-" + s.index + (s.incarnation == 0 ? "" : "-restart" + s.incarnation);
        ManagedProcess p = run.register(ManagedProcess.start(
                name, cliCommand(withArchive("-Xmx128m"), args), Map.of(), dir, dir.resolve("logs/" + name + ".log")));
        s.process = p;
        s.incarnation++;
        p.awaitLine(SERVER_UP, START_TIMEOUT);
    }

    private void startNode(NodeSlot n, List<NodeSlot> seeds) throws IOException, InterruptedException {
        startNodeProcess(n, seeds, nodeEnv, n.name, n.roles);
        n.process.awaitLine(NODE_UP, START_TIMEOUT);
        n.process.awaitLine(GATEWAY, START_TIMEOUT);
    }

    private ManagedProcess startNodeProcess(
            NodeSlot n, List<NodeSlot> seeds, Map<String, String> env, String logName, List<String> roles)
            throws IOException {
        if (n.process != null && !n.process.isAlive()) {
            publishArchive(n); // the incarnation before, killed or downed, may have been recording
        }
        List<String> jvm = new ArrayList<>(List.of("-Xmx" + spec.nodeHeap));
        jvm.addAll(transportJvmFlags);
        jvm.add("-Dlogback.configurationFile=" + resource("node-logback.xml"));
        Path archiveTmp = null;
        synchronized (ARCHIVE_LOCK) {
            Path archive = archive();
            if (Files.isRegularFile(archive)) {
                jvm.addAll(archiveFlags(archive));
            } else if (!archiveInProgress && spec.nodeFileLimit == 0 && nodes.contains(n)) {
                // (Not under a file limit: recording the archive needs descriptors of its own; not
                // an extra node, which close() does not stop.)
                // This node records the classes it loads; a clean exit writes the archive that
                // later nodes start from (JVM start is most of a node's start-up on 2 cores).
                archiveInProgress = true;
                archiveTmp = archive.resolveSibling(archive.getFileName() + ".tmp");
                Files.createDirectories(archive.getParent());
                Files.deleteIfExists(archiveTmp);
                jvm.add("-XX:ArchiveClassesAtExit=" + archiveTmp);
            }
        }
        List<String> args = new ArrayList<>(List.of(
                "node",
                "--demo",
                "--name",
                n.name,
                "--port",
                Integer.toString(n.port),
                "--roles",
                String.join(",", roles),
                "--gateway-port",
                Integer.toString(n.gatewayPort),
                "--profile",
                resource("fast-failure-detection.conf").toString()));
        if (spec.bootstrap) {
            args.addAll(List.of(
                    "--discovery",
                    "config",
                    "--management-port",
                    Integer.toString(n.managementPort),
                    "--profile",
                    bootstrapProfile().toString()));
        } else {
            args.add("--seed-nodes");
            args.add(String.join(
                    ",", seeds.stream().map(s -> hostOf(s) + ":" + s.port).toList()));
            if (spec.management) {
                args.addAll(List.of("--management-port", Integer.toString(n.managementPort)));
            }
        }
        for (String profile : transportProfiles) {
            args.add("--profile");
            args.add(profile);
        }
        for (String profile : spec.nodeProfiles) {
            args.add("--profile");
            args.add(resource(profile).toString());
        }
        if (spec.transport == Transport.AERON_UDP) {
            // A driver directory of its own that this harness can remove after a SIGKILL.
            Path aeronDir = Path.of(
                    "/dev/shm",
                    "rollout-systest-" + ProcessHandle.current().pid() + "-" + n.port + "-" + n.incarnations.size());
            Path profile = dir.resolve("aeron-" + n.name + "-" + n.incarnations.size() + ".conf");
            Files.writeString(profile, "pekko.remote.artery.advanced.aeron.aeron-dir = \"" + aeronDir + "\"\n");
            args.add("--profile");
            args.add(profile.toString());
            run.onCleanup(() -> SystemTestRun.deleteRecursively(aeronDir));
        }
        if (n.bindPort != n.port) {
            Path bind = dir.resolve("bind-" + n.name + ".conf");
            Files.writeString(bind, "pekko.remote.artery.bind.port = " + n.bindPort + "\n");
            args.add("--profile");
            args.add(bind.toString());
        }
        if (netns != null) {
            // A gateway bound beyond loopback requires a token; the tests' trainer and helpers send it.
            args.addAll(List.of("--host", hostOf(n), "--gateway-host", hostOf(n), "--gateway-token", GATEWAY_TOKEN));
        }
        args.addAll(defaults());
        args.addAll(spec.config);
        List<String> command = new ArrayList<>(netns != null ? netns.exec(n.index) : List.of());
        if (spec.nodeFileLimit > 0) {
            command.addAll(List.of("bash", "-c", "ulimit -n " + spec.nodeFileLimit + " && exec \"$@\"", "bash"));
        }
        command.addAll(cliCommand(jvm, args));
        ManagedProcess p =
                run.register(ManagedProcess.start(n.name, command, env, dir, dir.resolve("logs/" + logName + ".log")));
        n.process = p;
        n.incarnations.add(p);
        n.archiveInProgress = archiveTmp;
        return p;
    }

    /** The system tests' run configuration, under the test's own. */
    private List<String> defaults() {
        return List.of(
                "rollout.servers="
                        + String.join(
                                ",",
                                servers.stream()
                                        .map(s -> serverAddress(s.index))
                                        .toList()),
                "rollout.experiment_name=system",
                "rollout.trial_name=" + run.testName().replace('.', '-'),
                "rollout.fileroot=" + dir.resolve("out"),
                "rollout.dump_to_file=false",
                "rollout.consumer_batch_size=4",
                "rollout.max_concurrent_rollouts=12",
                "rollout.max_head_offpolicyness=1",
                // One evaluation pass (the 26 letters) at the start, none later.
                "rollout.eval_every=1000",
                // A hung server is noticed within seconds, not the default hour.
                "rollout.request_timeout=5",
                "rollout.retry_backoff_initial=0.2",
                "rollout.retry_backoff_max=1",
                "rollout.health_check_interval=0.5",
                "rollout.control_timeout=5",
                "rollout.episode_timeout=120",
                "rollout.batch_ack_timeout=30",
                "rollout.weight_update_timeout=20",
                "rollout.prepare_timeout=10");
    }

    private List<String> cliCommand(List<String> jvmFlags, List<String> args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(java.toString());
        cmd.addAll(jvmFlags);
        cmd.addAll(List.of(
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
                "--add-opens=java.base/java.nio=ALL-UNNAMED",
                "--enable-native-access=ALL-UNNAMED"));
        // As bin/rollout: Pekko's sun.misc.Unsafe use allowed without a warning (the flag exists from 23 on).
        if (Runtime.version().feature() >= 23) {
            cmd.add("--sun-misc-unsafe-memory-access=allow");
        }
        cmd.addAll(List.of("-jar", cliJar.toString()));
        cmd.addAll(args);
        return cmd;
    }

    /**
     * {@code heap} and, once a node has recorded the class-data archive, the flags that start a JVM
     * from it: the model servers and {@code demo-weights} run the same jar, and load a part of the
     * node's classes.
     */
    private List<String> withArchive(String heap) throws IOException {
        List<String> jvm = new ArrayList<>(List.of(heap));
        jvm.addAll(recordedArchiveFlags(cliJar));
        return jvm;
    }

    /**
     * The flags that start a JVM of {@code cliJar} from the class-data archive the nodes recorded,
     * or none while there is no such archive.
     */
    static List<String> recordedArchiveFlags(Path cliJar) throws IOException {
        Path archive = archive(cliJar);
        return Files.isRegularFile(archive) ? archiveFlags(archive) : List.of();
    }

    private static List<String> archiveFlags(Path archive) {
        return List.of(
                "-XX:SharedArchiveFile=" + archive,
                "-Xshare:auto",
                // The archive is used with --add-opens, which only turns off its optimized module
                // graph; the JVM reports that as an error line in every log otherwise.
                "-Xlog:cds=off",
                "-Xlog:aot=off");
    }

    /** The class-data archive of node JVMs, named after the jar it was made from. */
    private Path archive() throws IOException {
        return archive(cliJar);
    }

    private static Path archive(Path cliJar) throws IOException {
        long stamp = Files.getLastModifiedTime(cliJar).toMillis();
        Path root = Path.of(System.getProperty("rollout.system.dir", "target/system-tests"));
        return root.toAbsolutePath().resolve("cds/node-" + stamp + ".jsa");
    }

    private static Path resource(String name) {
        try {
            return Path.of(TestCluster.class.getResource("/" + name).toURI());
        } catch (URISyntaxException | NullPointerException e) {
            throw new IllegalStateException("test resource " + name + " is missing", e);
        }
    }

    /** Where node {@code n} listens: 127.0.0.1, or its namespace's address. */
    private String hostOf(NodeSlot n) {
        return netns != null ? netns.nodeIp(n.index) : "127.0.0.1";
    }

    /** Where the model servers listen: 127.0.0.1, or the bridge's address when nodes are in namespaces. */
    private String serverHost() {
        return netns != null ? netns.bridgeIp() : "127.0.0.1";
    }

    /** Ports this JVM has handed out: the kernel may give a closed probe's port again at once. */
    private static final Set<Integer> HANDED_OUT = new HashSet<>();

    /**
     * A port free at the time of the call and never handed out before in this JVM: a node's
     * Artery, gateway and management ports are taken one after the other and bound later, and two
     * probes in a row once got the same port (the management endpoint then failed to bind). It is
     * drawn at random below the kernel's range of ephemeral ports: a port the kernel hands out (to
     * a probe on port 0, or to any outgoing connection on the machine) goes back to that range once
     * closed, and on a busy machine a client's connection took one before its node bound it ("the
     * port is in use").
     */
    static int freePort() throws IOException {
        int below = ephemeralLow();
        for (int tries = 0; tries < 1_000; tries++) {
            int port = PORTS.nextInt(Math.max(1_025, below - 20_000), below);
            synchronized (HANDED_OUT) {
                if (HANDED_OUT.contains(port)) {
                    continue;
                }
                try (ServerSocket s = new ServerSocket(port)) {
                    HANDED_OUT.add(port);
                    return s.getLocalPort();
                } catch (IOException inUse) {
                    // taken: draw again
                }
            }
        }
        throw new IOException("no free port below " + below + " after 1000 draws");
    }

    private static final SecureRandom PORTS = new SecureRandom();

    /** The lowest ephemeral port (net.ipv4.ip_local_port_range), 32768 where it cannot be read. */
    private static int ephemeralLow() {
        try {
            // Read by line: Files.readString of a procfs file got only its first byte here.
            String range = Files.readAllLines(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))
                    .getFirst()
                    .trim();
            int low = Integer.parseInt(range.split("\\s+")[0]);
            return low > 2_048 ? low : 32_768;
        } catch (IOException | RuntimeException e) {
            return 32_768;
        }
    }

    // ---- what tests use ----

    /** The test's directory. */
    Path dir() {
        return dir;
    }

    /** The demo's initial weights (version 0): publishing them again with a new version is a weight update. */
    Path weights() {
        return weights;
    }

    /** Faults injected so far. */
    Faults faults() {
        return faults;
    }

    int nodeCount() {
        return nodes.size();
    }

    int serverCount() {
        return servers.size();
    }

    /** The gateways' URLs, node 1 first. */
    List<String> gatewayUrls() {
        return nodes.stream()
                .map(n -> "http://" + hostOf(n) + ":" + n.gatewayPort)
                .toList();
    }

    /** A trainer's client over every node's gateway (node 1 first), with retries long enough for a fail-over. */
    RolloutClient trainerClient() {
        return RolloutClient.connect(clientConfig(gatewayUrls()));
    }

    /** As {@link #trainerClient()}, with the contact points in the given node order (1-based). */
    RolloutClient trainerClient(int... nodeOrder) {
        return trainerClient(true, nodeOrder);
    }

    /**
     * As {@link #trainerClient(int...)}; {@code followRedirects} false keeps every pull on the
     * gateway it is sent to (relayed from the collector's node when that is another node).
     */
    RolloutClient trainerClient(boolean followRedirects, int... nodeOrder) {
        List<String> urls = Arrays.stream(nodeOrder)
                .mapToObj(i -> "http://" + hostOf(node(i)) + ":" + node(i).gatewayPort)
                .toList();
        return RolloutClient.connect(clientConfig(urls).withPullRedirects(followRedirects));
    }

    /**
     * The bearer token of the gateways of nodes in network namespaces (bound beyond loopback); the
     * tests' clients send it to every gateway (one without a token ignores it).
     */
    static final String GATEWAY_TOKEN = "system-test-gateway-token";

    static ClientConfig clientConfig(List<String> urls) {
        return ClientConfig.of(urls.toArray(String[]::new))
                .withToken(GATEWAY_TOKEN)
                .withPollWait(Duration.ofSeconds(2))
                .withConnectTimeout(Duration.ofSeconds(2))
                .withRequestTimeout(Duration.ofSeconds(40))
                .withPublishTimeout(Duration.ofSeconds(60))
                .withRetry(Duration.ofMillis(100), Duration.ofSeconds(1), Duration.ofSeconds(120));
    }

    /** A trainer that checks every batch against the engine's invariants. */
    CheckedTrainer checkedTrainer(long maxHeadOffpolicyness, boolean strictStaleness) {
        return new CheckedTrainer(this, trainerClient(), maxHeadOffpolicyness, strictStaleness);
    }

    /**
     * As {@link #checkedTrainer(long, boolean)}, for a run configured with other {@code
     * max_concurrent_rollouts} and {@code consumer_batch_size} than the defaults (12 and 4): the
     * budget checks use these.
     */
    CheckedTrainer checkedTrainer(
            long maxHeadOffpolicyness, boolean strictStaleness, long maxConcurrentRollouts, long consumerBatchSize) {
        return new CheckedTrainer(
                this, trainerClient(), maxHeadOffpolicyness, strictStaleness, maxConcurrentRollouts, consumerBatchSize);
    }

    private NodeSlot node(int index) {
        if (index < 1 || index > nodes.size()) {
            throw new IllegalArgumentException("no node " + index + " (nodes are 1.." + nodes.size() + ")");
        }
        return nodes.get(index - 1);
    }

    private ServerSlot server(int index) {
        if (index < 0 || index >= servers.size()) {
            throw new IllegalArgumentException("no server " + index + " (servers are 0.." + (servers.size() - 1) + ")");
        }
        return servers.get(index);
    }

    boolean isAlive(int nodeIndex) {
        return node(nodeIndex).alive();
    }

    long pidOf(int nodeIndex) {
        return node(nodeIndex).process.pid();
    }

    /** SIGKILL of node {@code index} (1-based): no leave, no hand-over, as a crash or an OOM kill. */
    void killNode(int index) throws InterruptedException {
        killNode(index, "node_kill");
    }

    private void killNode(int index, String kind) throws InterruptedException {
        NodeSlot n = node(index);
        if (!n.alive()) {
            throw new IllegalStateException(n.name + " is not running");
        }
        n.process.kill();
        faults.inject(kind);
        log("SIGKILL " + n.name + " (pid " + n.process.pid() + ")");
    }

    /**
     * SIGTERM to node {@code index}: it drains, leaves the cluster and exits; waits at most {@code
     * grace} (then SIGKILL) and returns its exit status.
     */
    int terminateNode(int index, Duration grace) throws InterruptedException {
        NodeSlot n = node(index);
        if (!n.alive()) {
            throw new IllegalStateException(n.name + " is not running");
        }
        log("SIGTERM " + n.name + " (pid " + n.process.pid() + ")");
        return n.process.stop(grace);
    }

    /**
     * Starts node {@code index} again with its name and ports, joining through the nodes alive now
     * (as a supervisor would), and waits until it is Up with its gateway.
     */
    void restartNode(int index) throws IOException, InterruptedException {
        NodeSlot n = node(index);
        if (n.alive()) {
            throw new IllegalStateException(n.name + " is still running");
        }
        List<NodeSlot> seeds = nodes.stream().filter(NodeSlot::alive).toList();
        if (seeds.isEmpty()) {
            throw new IllegalStateException("no node alive to join");
        }
        startNodeProcess(n, seeds, nodeEnv, n.name + "-restart" + (n.incarnations.size()), n.roles);
        n.process.awaitLine(NODE_UP, START_TIMEOUT);
        n.process.awaitLine(GATEWAY, START_TIMEOUT);
        log("restarted " + n.name + " (pid " + n.process.pid() + ")");
    }

    /**
     * The node that holds the singletons now: the alive node whose log says last that Pekko started
     * the coordinator singleton there. Waits (at most {@code timeout}) until one does.
     */
    int singletonNode(Duration timeout) throws InterruptedException {
        return Waits.until("a node holding the singletons", timeout, () -> {
            String latest = null;
            Integer holder = null;
            for (NodeSlot n : nodes) {
                if (!n.alive()) {
                    continue;
                }
                for (String line : n.process.lines()) {
                    Matcher m = SINGLETON_STARTED.matcher(line);
                    if (m.find() && (latest == null || m.group(1).compareTo(latest) >= 0)) {
                        latest = m.group(1);
                        holder = n.index;
                    }
                }
            }
            return Optional.ofNullable(holder);
        });
    }

    /**
     * The index of the alive node that holds the singletons as far as the logs say now (without
     * waiting), or 0 when none says so.
     */
    private int singletonHolderNow() throws InterruptedException {
        try {
            return singletonNode(Duration.ZERO);
        } catch (AssertionError none) {
            return 0;
        }
    }

    /** SIGKILL of the node that holds the singletons (a fault of kind singleton_node_kill); returns its index. */
    int killSingletonNode() throws InterruptedException {
        int holder = singletonNode(Duration.ofSeconds(60));
        killNode(holder, "singleton_node_kill");
        return holder;
    }

    /** SIGKILL of model server {@code index} (0-based). */
    void crashServer(int index) throws InterruptedException {
        ServerSlot s = server(index);
        s.process.kill();
        faults.inject("server_crash");
        log("SIGKILL server-" + index);
    }

    /** Starts model server {@code index} again on its port with its flags. */
    void restartServer(int index) throws IOException, InterruptedException {
        ServerSlot s = server(index);
        if (s.process.isAlive()) {
            throw new IllegalStateException("server-" + index + " is still running");
        }
        startServer(s);
        log("restarted server-" + index);
    }

    /** The management endpoint of node {@code index} (1-based), with {@link Builder#withBootstrap}. */
    URI managementUri(int index) {
        if (!spec.bootstrap) {
            throw new IllegalStateException("the nodes run no management endpoint without withBootstrap()");
        }
        return URI.create("http://127.0.0.1:" + node(index).managementPort);
    }

    /**
     * Waits until every live node sees every member Up and none unreachable ({@code GET
     * /cluster/members} of its management endpoint, {@link Builder#withManagement}). Between two
     * faults this is what a fresh fault needs: the Split Brain Resolver counts a cluster whose
     * reachability keeps changing for stable-after plus three quarters of it as unstable and downs
     * every node, so a partition that starts while a link hurt by the last fault has not recovered
     * yet (seen after 20 % packet loss) stops the whole cluster. Returns how long it took.
     */
    Duration awaitSettled(Duration within) throws InterruptedException {
        if (!spec.management && !spec.bootstrap) {
            throw new IllegalStateException("awaitSettled reads the management endpoints: build withManagement()");
        }
        long started = System.nanoTime();
        Waits.untilTrue("every live node seeing every member Up and reachable", within, () -> {
            for (NodeSlot n : nodes) {
                if (!n.alive()) {
                    continue;
                }
                HttpRequest request = HttpRequest.newBuilder(
                                URI.create("http://" + hostOf(n) + ":" + n.managementPort + "/cluster/members"))
                        .timeout(Duration.ofSeconds(5))
                        .GET()
                        .build();
                try (HttpClient http = HttpClient.newBuilder()
                        .connectTimeout(Duration.ofSeconds(2))
                        .version(HttpClient.Version.HTTP_1_1)
                        .build()) {
                    HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
                    if (r.statusCode() != 200) {
                        return false;
                    }
                    com.fasterxml.jackson.databind.JsonNode members = MEMBERS_JSON.readTree(r.body());
                    if (!members.path("unreachable").isEmpty()) {
                        return false;
                    }
                    long live = nodes.stream().filter(NodeSlot::alive).count();
                    long up = 0;
                    for (com.fasterxml.jackson.databind.JsonNode m : members.path("members")) {
                        if (!m.path("status").asText().equals("Up")) {
                            return false;
                        }
                        up++;
                    }
                    if (up != live) {
                        return false;
                    }
                } catch (IOException e) {
                    return false; // starting, or its endpoint not up yet
                }
            }
            return true;
        });
        return Duration.ofNanos(System.nanoTime() - started);
    }

    private static final com.fasterxml.jackson.databind.ObjectMapper MEMBERS_JSON =
            new com.fasterxml.jackson.databind.ObjectMapper();

    /** The address the nodes know model server {@code index} by: its proxy's when it has one. */
    private String serverAddress(int index) {
        FaultProxy proxy = serverProxies.get(index);
        return serverHost() + ":" + (proxy != null ? proxy.port() : server(index).port);
    }

    /** The proxy in front of model server {@code index} ({@link Builder#withServerProxies}). */
    FaultProxy serverProxy(int index) {
        FaultProxy p = serverProxies.get(index);
        if (p == null) {
            throw new IllegalStateException("server-" + index + " has no proxy: build the cluster withServerProxies()");
        }
        return p;
    }

    /** The proxy every inbound connection of node {@code index} crosses ({@link Builder#withNodeBehindProxy}). */
    FaultProxy nodeProxy(int index) {
        FaultProxy p = nodeProxies.get(index);
        if (p == null) {
            throw new IllegalStateException(
                    "node-" + index + " has no proxy: build the cluster withNodeBehindProxy(" + index + ")");
        }
        return p;
    }

    /** Counts a fault of {@code kind} that the test made itself (a full disk, a flood of connections). */
    void fault(String kind, String what) {
        faults.inject(kind);
        log(kind + ": " + what);
    }

    /** The address of node {@code index}'s gateway (1-based), as a trainer reaches it. */
    java.net.InetSocketAddress gatewayAddress(int index) {
        NodeSlot n = node(index);
        return new java.net.InetSocketAddress(hostOf(n), n.gatewayPort);
    }

    /**
     * The Prometheus text node {@code index} serves on its gateway's {@code /metrics}, or empty when
     * it is down or does not answer.
     */
    Optional<String> metrics(int index) throws InterruptedException {
        NodeSlot n = node(index);
        if (!n.alive()) {
            return Optional.empty();
        }
        try {
            HttpResponse<String> r = nodeHttp(n, "GET", "/metrics", null);
            return r.statusCode() == 200 ? Optional.of(r.body()) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** The sum of every sample of metric {@code name} (any labels) in Prometheus text. */
    static double metricSum(String prometheusText, String name) {
        double sum = 0;
        for (String line : prometheusText.split("\n")) {
            if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
                sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return sum;
    }

    /** Counts a link fault of {@code kind} made through a proxy. */
    void linkFault(String kind, String what) {
        faults.inject(kind);
        log(kind + ": " + what);
    }

    /** The port model server {@code index} listens on (kept across restarts). */
    int serverPort(int index) {
        return server(index).port;
    }

    /**
     * Replaces model server {@code index} by one with {@code flags} (its fault flags, e.g. {@code
     * --fault-error-rate 0.3}) on the same port; counts the replacement as a fault of {@code kind}
     * when {@code kind} is not null.
     */
    void replaceServer(int index, String kind, String... flags) throws IOException, InterruptedException {
        ServerSlot s = server(index);
        if (s.process.isAlive()) {
            s.process.stop(Duration.ofSeconds(10));
        }
        s.flags = new ArrayList<>(spec.serverFlags);
        s.flags.addAll(List.of(flags));
        startServer(s);
        if (kind != null) {
            faults.inject(kind);
        }
        log("server-" + index + " now runs with " + String.join(" ", flags));
    }

    /**
     * Drains model server {@code index} from the run-time server list through the gateway of the
     * first node that answers ({@code DELETE /v1/servers/{host:port}}): every node stops sending it
     * segments and, after {@code handOverAfter}, hands what it runs over to the other servers.
     */
    void drainServer(int index, Duration handOverAfter) throws IOException, InterruptedException {
        String address = serverAddress(index);
        untilReplicated(
                "DELETE", "/v1/servers/" + address + "?hand_over_after=" + handOverAfter.toMillis() / 1000.0, null);
        faults.inject("server_drained");
        log("drained server-" + index + " (hand-over after " + handOverAfter.toMillis() + " ms)");
    }

    /** Adds model server {@code index} to the run-time server list through a node's gateway ({@code POST /v1/servers}). */
    void addServer(int index) throws IOException, InterruptedException {
        String address = serverAddress(index);
        untilReplicated("POST", "/v1/servers", "{\"address\":\"" + address + "\"}");
        faults.inject("server_added");
        log("added server-" + index);
    }

    /**
     * Whether every live node's gateway lists model server {@code index} ({@code GET /v1/servers}),
     * in rotation when {@code inRotation}; false while a live node does not answer.
     */
    boolean serverListedOnLiveNodes(int index, boolean inRotation) throws InterruptedException {
        return liveNodesAgree(
                index, listed -> listed != null && (!inRotation || listed.contains("\"in_rotation\":true")));
    }

    /** Whether no live node's gateway lists model server {@code index}; false while a live node does not answer. */
    boolean serverGoneFromLiveNodes(int index) throws InterruptedException {
        return liveNodesAgree(index, listed -> listed == null);
    }

    /** Whether node {@code n}'s gateway is up (it printed its address). */
    private static boolean serving(NodeSlot n) {
        try {
            return n.process.find(GATEWAY).isPresent();
        } catch (IOException e) {
            return false;
        }
    }

    private boolean liveNodesAgree(int index, java.util.function.Predicate<String> entryHolds)
            throws InterruptedException {
        String address = "\"address\":\"" + serverAddress(index) + "\"";
        for (NodeSlot n : nodes) {
            if (!n.alive() || !serving(n)) {
                // Down, or starting: a node takes the replicated server list as it joins, and is
                // asked once its gateway is up (a start can outlast this wait on a busy machine).
                continue;
            }
            String body;
            try {
                HttpResponse<String> r = nodeHttp(n, "GET", "/v1/servers", null);
                if (r.statusCode() != 200) {
                    return false;
                }
                body = r.body();
            } catch (IOException e) {
                return false; // starting or stopping
            }
            String entry = null;
            int at = body.indexOf(address);
            if (at >= 0) {
                entry = body.substring(at, body.indexOf('}', at) + 1);
            }
            if (!entryHolds.test(entry)) {
                return false;
            }
        }
        return true;
    }

    /**
     * A server-list change, repeated (it is idempotent) while every live node answers {@code 503
     * not_replicated}: a majority could not confirm it in time, e.g. during a partition or while a
     * lost node is not yet downed. Gives up after a minute. A write answered 503 still holds on the
     * node that took it and reaches the others by gossip if that node stays: a drain repeated after
     * that is answered 404 {@code unknown_server} by every node, which means it is done.
     */
    private void untilReplicated(String method, String path, String body) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        boolean repeated = false;
        while (true) {
            try {
                gatewayCall(method, path, body);
                return;
            } catch (IOException e) {
                String answers = String.valueOf(e.getMessage());
                if (repeated
                        && method.equals("DELETE")
                        && answers.contains("unknown_server")
                        && !answers.contains("not_replicated")) {
                    log(method + " " + path + " had reached every node before it was repeated");
                    return;
                }
                if (!answers.contains("not_replicated") || System.nanoTime() > deadline) {
                    throw e;
                }
                repeated = true;
                log(method + " " + path + " not confirmed by a majority; repeating it");
                Thread.sleep(1000);
            }
        }
    }

    /** One call on the first live node whose gateway answers 2xx; fails naming each node's answer. */
    private void gatewayCall(String method, String path, String body) throws IOException, InterruptedException {
        List<String> answers = new ArrayList<>();
        for (NodeSlot n : nodes) {
            if (!n.alive()) {
                continue;
            }
            try {
                HttpResponse<String> r = nodeHttp(n, method, path, body);
                if (r.statusCode() / 100 == 2) {
                    return;
                }
                answers.add(n.name + ": " + r.statusCode() + " " + r.body());
            } catch (IOException e) {
                answers.add(n.name + ": " + e);
            }
        }
        throw new IOException(method + " " + path + " succeeded on no node: " + answers);
    }

    private HttpResponse<String> nodeHttp(NodeSlot n, String method, String path, String body)
            throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://" + hostOf(n) + ":" + n.gatewayPort + path))
                .timeout(Duration.ofSeconds(20))
                .header("Authorization", "Bearer " + GATEWAY_TOKEN)
                .method(
                        method,
                        body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body))
                .build();
        try (HttpClient http = HttpClient.newBuilder()
                .connectTimeout(Duration.ofSeconds(5))
                .version(HttpClient.Version.HTTP_1_1)
                .build()) {
            return http.send(request, HttpResponse.BodyHandlers.ofString());
        }
    }

    /** SIGSTOP of model server {@code index}: it keeps its connections and answers nothing. */
    void hangServer(int index) throws IOException, InterruptedException {
        server(index).process.suspend();
        faults.inject("server_hang");
        log("SIGSTOP server-" + index);
    }

    /** SIGCONT of model server {@code index}. */
    void resumeServer(int index) throws IOException, InterruptedException {
        server(index).process.resume();
        log("SIGCONT server-" + index);
    }

    /**
     * Sets the fault plan of model server {@code index} at runtime ({@code POST /_admin/faults},
     * the JSON form of {@code FaultPlan}, e.g. {@code {"error_rate": 0.3, "seed": 7}}; {@code {}}
     * lifts every fault); counts it as a fault of {@code kind} when {@code kind} is not null.
     */
    void setServerFaults(int index, String kind, String planJson) throws IOException, InterruptedException {
        HttpResponse<String> r = serverHttp(index, "/_admin/faults", planJson);
        if (r.statusCode() != 200) {
            throw new IllegalStateException(
                    "server-" + index + " refused the fault plan " + planJson + ": " + r.statusCode() + " " + r.body());
        }
        if (kind != null) {
            faults.inject(kind);
        }
        log("server-" + index + " faults now " + planJson);
    }

    /**
     * A counter of model server {@code index}'s {@code /get_server_info} (e.g. {@code
     * requests_aborted}: generations cut short by a pause, a weight update or a client that left),
     * since its current process started.
     */
    long serverCounter(int index, String counter) throws IOException, InterruptedException {
        HttpResponse<String> r = serverHttp(index, "/get_server_info", null);
        Matcher m = Pattern.compile("\"" + Pattern.quote(counter) + "\"\\s*:\\s*(\\d+)")
                .matcher(r.body());
        if (r.statusCode() != 200 || !m.find()) {
            throw new IllegalStateException(
                    "server-" + index + " /get_server_info has no " + counter + ": " + r.statusCode() + " " + r.body());
        }
        return Long.parseLong(m.group(1));
    }

    private HttpResponse<String> serverHttp(int index, String path, String postBody)
            throws IOException, InterruptedException {
        ServerSlot s = server(index);
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://" + serverHost() + ":" + s.port + path))
                .timeout(Duration.ofSeconds(20));
        if (postBody != null) {
            b.header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(postBody));
        }
        try (HttpClient http = HttpClient.newBuilder()
                .connectTimeout(Duration.ofSeconds(5))
                .version(HttpClient.Version.HTTP_1_1)
                .build()) {
            return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        }
    }

    /** Whether model server {@code index}'s process is running (and not stopped). */
    boolean serverAlive(int index) {
        return server(index).process.isAlive();
    }

    /** Node {@code index} and each of {@code peers} no longer reach each other (a fault of kind {@code partition}). */
    void partition(int index, int... peers) throws IOException, InterruptedException {
        partition("partition", index, peers);
    }

    /** As {@link #partition(int, int...)}, counted as a fault of kind {@code kind}. */
    void partition(String kind, int index, int... peers) throws IOException, InterruptedException {
        namespaces().cut(index, peers);
        faults.inject(kind);
        log(kind + ": node-" + index + " cut from " + Arrays.toString(peers));
    }

    /**
     * A flapping link (a fault of kind {@code flapping_link}): node {@code index} cut from {@code
     * peers} and healed again {@code times} times, each state held for {@code period}.
     */
    void flap(int index, int times, Duration period, int... peers) throws IOException, InterruptedException {
        faults.inject("flapping_link");
        log("flapping link: node-" + index + " cut from " + Arrays.toString(peers) + " and healed " + times
                + " times, every " + period.toMillis() + " ms");
        for (int i = 0; i < times; i++) {
            namespaces().cut(index, peers);
            Thread.sleep(period.toMillis()); // the flapping period is the fault itself
            namespaces().heal(index);
            Thread.sleep(period.toMillis());
        }
    }

    /** Node {@code index} no longer hears {@code peer}, which still hears it (a fault of kind {@code one_way_cut}). */
    void cutOneWay(int index, int peer) throws IOException, InterruptedException {
        namespaces().cutInbound(index, peer);
        faults.inject("one_way_cut");
        log("one-way cut: node-" + index + " no longer hears node-" + peer);
    }

    /** Drops every packet of node {@code index} with {@code probability} (a fault of kind {@code packet_loss}). */
    void packetLoss(int index, double probability) throws IOException, InterruptedException {
        namespaces().lossy(index, probability);
        faults.inject("packet_loss");
        log("packet loss " + probability + " on every link of node-" + index);
    }

    /**
     * Node {@code index}'s link throttled to {@code kbit} kbit/s, both ways, with packets queued up
     * to {@code latencyMs} ({@link NetworkNamespaces#throttle}); {@link #heal} lifts it.
     */
    void throttle(int index, int kbit, int latencyMs) throws IOException, InterruptedException {
        namespaces().throttle(index, kbit, latencyMs);
        faults.inject("throttled_link");
        log("node-" + index + " link throttled to " + kbit + " kbit/s, packets queued up to " + latencyMs + " ms");
    }

    /** The packets node {@code index}'s throttle delayed and dropped so far ({@link NetworkNamespaces#throttled}). */
    long[] throttled(int index) throws IOException, InterruptedException {
        return namespaces().throttled(index);
    }

    /** What {@code tc} says of node {@code index}'s throttles, for a failure's message. */
    String throttleStats(int index) throws IOException, InterruptedException {
        return namespaces().throttleStats(index);
    }

    /** Lifts every cut made in node {@code index}'s namespace. */
    void heal(int index) throws IOException, InterruptedException {
        namespaces().heal(index);
        log("healed node-" + index);
    }

    private NetworkNamespaces namespaces() {
        if (netns == null) {
            throw new IllegalStateException("links can be cut only in a cluster built withNetworkNamespaces()");
        }
        return netns;
    }

    /**
     * Starts an extra node that presents the self-signed {@code rogue.p12} (TLS only); returns its
     * process, which must never become Up.
     */
    ManagedProcess startRogueNode() throws IOException {
        if (spec.transport != Transport.TLS) {
            throw new IllegalStateException("a rogue node needs the TLS transport");
        }
        Map<String, String> env = new HashMap<>(nodeEnv);
        env.put("ROLLOUT_TLS_KEY_STORE", tlsDir.resolve("rogue.p12").toString());
        NodeSlot rogue =
                new NodeSlot(nodes.size() + 1, freePort(), freePort(), freePort(), List.of("rollout", "gateway"));
        return startNodeProcess(rogue, nodes.stream().filter(NodeSlot::alive).toList(), env, "rogue", rogue.roles);
    }

    /**
     * Starts an extra node (roles rollout and gateway) whose trainer gateway is to listen on {@code
     * gatewayPort}; returns its process.
     */
    ManagedProcess startExtraNode(String name, int gatewayPort) throws IOException {
        NodeSlot extra =
                new NodeSlot(nodes.size() + 1, freePort(), gatewayPort, freePort(), List.of("rollout", "gateway"));
        return startNodeProcess(extra, nodes.stream().filter(NodeSlot::alive).toList(), nodeEnv, name, extra.roles);
    }

    /**
     * The heap node {@code index} holds after a full collection, in bytes ({@code GC.run}, then
     * {@code GC.heap_info}, both from one {@code jcmd}: the sum of the generations' {@code used}).
     */
    long heapAfterGc(int index) throws IOException, InterruptedException {
        long pid = node(index).process.pid();
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        // One jcmd JVM runs both, in order: its start is most of what a reading costs.
        Path commands = dir.resolve("jcmd-gc-then-heap-info.txt");
        Files.writeString(commands, "GC.run\nGC.heap_info\n");
        String info = ManagedProcess.run(
                List.of(
                        jcmd.toString(),
                        "-J-XX:+UseSerialGC",
                        "-J-XX:TieredStopAtLevel=1",
                        Long.toString(pid),
                        "-f",
                        commands.toString()),
                Map.of(),
                dir,
                START_TIMEOUT);
        long used = 0;
        boolean any = false;
        Matcher m = Pattern.compile(
                        "(?m)^\\s*(def new generation|tenured generation|DefNew|Tenured|garbage-first heap)\\s.*?used (\\d+)K")
                .matcher(info);
        while (m.find()) {
            used += Long.parseLong(m.group(2)) * 1024;
            any = true;
        }
        if (!any) {
            throw new IllegalStateException("jcmd GC.heap_info of " + node(index).name + " has no heap line:\n" + info);
        }
        return used;
    }

    /**
     * Groups started per node, from the nodes' progress lines ({@code node NAME: K groups started
     * here}, every 10 s): the last line of each incarnation, summed per node.
     */
    Map<String, Long> groupsStartedByNode() throws IOException {
        Map<String, Long> byNode = new LinkedHashMap<>();
        for (NodeSlot n : nodes) {
            long sum = 0;
            for (ManagedProcess p : n.incarnations) {
                long last = 0;
                for (String line : p.lines()) {
                    Matcher m = PROGRESS.matcher(line);
                    if (m.find()) {
                        last = Long.parseLong(m.group(2));
                    }
                }
                sum += last;
            }
            byNode.put(n.name, sum);
        }
        return byNode;
    }

    /** Node {@code index}'s current incarnation (its process and log). */
    ManagedProcess nodeProcess(int index) {
        return node(index).process;
    }

    /** The lines of node {@code index}'s current log. */
    List<String> nodeLog(int index) throws IOException {
        return node(index).process.lines();
    }

    /** Every node log, all incarnations (killed ones too). */
    List<ManagedProcess> nodeProcesses() {
        List<ManagedProcess> all = new ArrayList<>();
        nodes.forEach(n -> all.addAll(n.incarnations));
        return all;
    }

    /** Waits until every live node has printed at least one progress line (they come every 10 s). */
    void awaitProgressLines() throws InterruptedException {
        for (NodeSlot n : nodes) {
            if (n.alive()) {
                try {
                    n.process.awaitLine(PROGRESS, Duration.ofSeconds(30));
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        }
    }

    static void log(String message) {
        System.out.println("[system-tests " + LocalDateTime.now().toLocalTime() + "] " + message);
    }

    /**
     * Stops every node (SIGTERM: each leaves the cluster, then exits) and every server; whatever is
     * not gone after the grace period is killed.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            stopAll();
        } catch (InterruptedException e) {
            // The test's SystemTestRun kills whatever is left.
            Thread.currentThread().interrupt();
        }
    }

    private void stopAll() throws InterruptedException {
        // Every node but the singletons' at once, then that one, alone: the singletons never move.
        // Stopped all at once, the last node to complete its exit waited about 5 s for it (its
        // failure detector's pause) whenever the leader that had moved it to Exiting (the lowest
        // address, not the oldest node) had already shut down.
        int holder = singletonHolderNow();
        for (NodeSlot n : nodes) {
            if (n.index != holder && n.alive()) {
                n.process.terminate();
            }
        }
        for (NodeSlot n : nodes) {
            if (n.index != holder && n.process != null) {
                stopNode(n);
            }
        }
        if (holder > 0) {
            stopNode(node(holder));
        }
        for (ServerSlot s : servers) {
            if (s.process != null && s.process.isAlive()) {
                s.process.terminate();
            }
        }
        for (ServerSlot s : servers) {
            if (s.process != null) {
                s.process.stop(STOP_GRACE);
            }
        }
    }

    private static void stopNode(NodeSlot n) throws InterruptedException {
        n.process.stop(n.archiveInProgress != null ? ARCHIVE_STOP_GRACE : STOP_GRACE);
        publishArchive(n);
    }

    /**
     * After node {@code n}'s incarnation that recorded the class-data archive has exited: keeps the
     * archive it wrote, unless it was killed (then the file may be cut short), and lets a later node
     * record one when there is none.
     */
    private static void publishArchive(NodeSlot n) {
        synchronized (ARCHIVE_LOCK) {
            Path tmp = n.archiveInProgress;
            if (tmp == null) {
                return;
            }
            n.archiveInProgress = null;
            archiveInProgress = false;
            try {
                // 128 + 9: SIGKILL, from a fault or after the grace period.
                boolean exited = !n.process.isAlive() && n.process.exitValue() != 137;
                if (exited && Files.isRegularFile(tmp) && Files.size(tmp) > 0) {
                    String name = tmp.getFileName().toString();
                    Files.move(
                            tmp,
                            tmp.resolveSibling(name.substring(0, name.length() - ".tmp".length())),
                            StandardCopyOption.ATOMIC_MOVE);
                }
                Files.deleteIfExists(tmp);
            } catch (IOException e) {
                log("the class-data archive " + tmp + " could not be kept: " + e);
            }
        }
    }
}
