package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.rollout.api.TrainingBatch;
import org.rollout.trainer.RolloutClient;

/**
 * The release tarball as a user gets it: {@code modules/dist/target/rollout-VERSION.tar.gz} (built
 * by the reactor) unpacked with {@code tar} into a directory of its own (once for the class) and run from there with
 * {@code bin/rollout}, from a working directory outside the source tree and with a {@code PATH}
 * that holds only the few tools the launcher uses (no Maven). The Dockerfile builds the same
 * tarball name.
 */
@Timeout(300)
class DistributionTest {
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(200);
    private static final Duration QUICK = Duration.ofSeconds(60);

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    private final String version = System.getProperty("rollout.version", "0.1.0-SNAPSHOT");
    private final Path repoRoot = Path.of(System.getProperty("rollout.repo.root", "../.."))
            .toAbsolutePath()
            .normalize();
    private final Path tarball = Path.of(
                    System.getProperty("rollout.dist.tarball", "../dist/target/rollout-" + version + ".tar.gz"))
            .toAbsolutePath()
            .normalize();
    private Path home;
    private Path tools;

    /**
     * Where the tarball is unpacked, once for all the tests of the class: they read and run the
     * release, none writes into it (each works in a directory of its own).
     */
    private static Path unpacked;

    @BeforeEach
    void unpack() throws Exception {
        assertThat(tarball)
                .as("the release tarball (built by the reactor's modules/dist)")
                .isRegularFile();
        home = unpackedOnce(tarball).resolve("rollout-" + version);
        // Only what bin/rollout needs on PATH: no mvn, no java (it comes from JAVA_HOME).
        tools = run.dir().resolve("tools");
        Files.createDirectories(tools);
        for (String tool : List.of("bash", "env", "dirname", "readlink", "awk")) {
            Path real = Stream.of("/usr/bin/", "/bin/")
                    .map(d -> Path.of(d + tool))
                    .filter(Files::isExecutable)
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("no " + tool + " in /usr/bin or /bin"));
            Files.createSymbolicLink(tools.resolve(tool), real);
        }
    }

    /** The tarball unpacked with {@code tar} (failing unless it exits 0), the first time only. */
    private static synchronized Path unpackedOnce(Path tarball) throws Exception {
        if (unpacked == null) {
            Path into = Path.of(System.getProperty("rollout.system.dir", "target/system-tests"))
                    .toAbsolutePath()
                    .resolve("DistributionTest-unpacked-"
                            + ProcessHandle.current().pid());
            SystemTestRun.deleteRecursively(into);
            Files.createDirectories(into);
            ManagedProcess.run(
                    List.of("tar", "-xzf", tarball.toString(), "-C", into.toString()), Map.of(), into, QUICK);
            unpacked = into;
        }
        return unpacked;
    }

    @AfterAll
    static void removeUnpacked() {
        if (unpacked != null) {
            SystemTestRun.deleteRecursively(unpacked);
            unpacked = null;
        }
    }

    @Test
    void theTarballHoldsTheLauncherEveryJarAndTheCommentedDefaults() throws IOException {
        Path launcher = home.resolve("bin/rollout");
        assertThat(launcher).isRegularFile();
        assertThat(Files.getPosixFilePermissions(launcher)).contains(PosixFilePermission.OWNER_EXECUTE);
        assertThat(home.resolve("lib/rollout-cli-" + version + ".jar")).isRegularFile();
        try (var jars = Files.list(home.resolve("lib"))) {
            List<String> names =
                    jars.map(p -> p.getFileName().toString()).sorted().toList();
            assertThat(names).anyMatch(n -> n.startsWith("pekko-cluster-typed_2.13-"));
            assertThat(names).anyMatch(n -> n.startsWith("rollout-gateway-"));
            assertThat(names).allMatch(n -> n.endsWith(".jar"));
            // The benchmarks are run from a source checkout (bin/rollout bench), never shipped: no
            // benchmarks jar, no JMH, no HdrHistogram, no test fixture or scripted engine.
            assertThat(names)
                    .as("benchmark and test jars in the tarball's lib/")
                    .noneMatch(n -> n.startsWith("rollout-benchmarks")
                            || n.startsWith("jmh-")
                            || n.startsWith("HdrHistogram")
                            || n.startsWith("rollout-test-engine")
                            || n.startsWith("rollout-test-support")
                            || n.endsWith("-tests.jar"));
        }
        try (Stream<Path> all = Files.walk(home)) {
            assertThat(all.filter(p -> p.getFileName().toString().equals("node_modules")))
                    .as("npm packages a checkout installed (the manifest checker's), shipped in the release")
                    .isEmpty();
        }
        String conf = Files.readString(home.resolve("conf/rollout.conf"));
        assertThat(conf).contains("\n#rollout.consumer_batch_size = 1\n").contains("\n#gconfig.n_samples = ");
        assertThat(home.resolve("conf/cluster/local.conf")).isRegularFile();
        assertThat(home.resolve("docs/configuration.md")).isRegularFile();
        assertThat(Files.readString(home.resolve("README.md"))).contains("docs/deploy.md");
    }

    @Test
    void versionAndALocalRunFromTheUnpackedTarball() throws Exception {
        ManagedProcess v = launch("version", List.of("--version"), javaHome());
        assertThat(v.awaitExit(QUICK))
                .as("exit status of --version; " + v.lines())
                .isZero();
        assertThat(v.lines()).contains("rollout " + version);

        Path fileroot = run.dir().resolve("runs");
        ManagedProcess local = launch(
                "local",
                List.of("local", "--steps", "3", "--no-status", "gconfig.n_samples=4", "rollout.fileroot=" + fileroot),
                javaHome());
        int status = local.awaitExit(RUN_TIMEOUT);
        String out = String.join("\n", local.lines());
        assertThat(status).as("exit status; output:\n" + out).isZero();
        assertThat(out).containsPattern("Done in [0-9.]+ s: 3 steps, weight version 3\\.");
        assertThat(out).doesNotContain("building the engine");
        assertThat(fileroot).isDirectory();
    }

    /**
     * Two built-in model servers and three {@code rollout node} processes, all from the unpacked
     * tarball, find each other by Cluster Bootstrap with config discovery (no seed nodes): one
     * cluster of three Up members seen by every node, {@code /ready} on each, and a trainer (the
     * Java client over HTTP, through every node's gateway) trains a few steps.
     */
    @Test
    @Timeout(420)
    void threeNodesFromTheTarballBootstrapOneClusterAndTrain() throws Exception {
        ManagedProcess demo = launch(
                "demo-weights",
                List.of("demo-weights", run.dir().resolve("weights").toString()),
                javaHome());
        assertThat(demo.awaitExit(QUICK)).as("demo-weights; " + demo.lines()).isZero();
        Path weights = Path.of(demo.lines().getLast().strip());
        assertThat(weights).isRegularFile();

        List<String> servers = new ArrayList<>();
        List<ManagedProcess> serverProcesses = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            int port = TestCluster.freePort();
            servers.add("127.0.0.1:" + port);
            serverProcesses.add(launch(
                    "server-" + i,
                    List.of(
                            "model-server",
                            "--host",
                            "127.0.0.1",
                            "--port",
                            Integer.toString(port),
                            "--weights",
                            weights.toString()),
                    javaHome(),
                    "-Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1"));
        }
        for (ManagedProcess s : serverProcesses) {
            s.awaitLine(TestCluster.SERVER_UP, RUN_TIMEOUT);
        }

        int[] ports = new int[3];
        int[] gateways = new int[3];
        int[] management = new int[3];
        StringBuilder endpoints = new StringBuilder("pekko.discovery.config.services.rollout.endpoints = [\n");
        for (int i = 0; i < 3; i++) {
            ports[i] = TestCluster.freePort();
            gateways[i] = TestCluster.freePort();
            management[i] = TestCluster.freePort();
            endpoints
                    .append("  { host = \"127.0.0.1\", port = ")
                    .append(management[i])
                    .append(" }\n");
        }
        // Every contact point on 127.0.0.1 with a port of its own: keep them all, and form only when
        // all three answer (docs/deploy.md, "Cluster Bootstrap").
        endpoints
                .append("]\n")
                .append("pekko.management.cluster.bootstrap.contact-point.filter-on-fallback-port = false\n")
                .append("pekko.management.cluster.bootstrap.contact-point-discovery.required-contact-point-nr = 3\n");
        Path profile = run.dir().resolve("bootstrap.conf");
        Files.writeString(profile, endpoints.toString());

        List<ManagedProcess> nodes = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            String name = "node-" + (i + 1);
            nodes.add(launch(
                    name,
                    List.of(
                            "node",
                            "--demo",
                            "--name",
                            name,
                            "--host",
                            "127.0.0.1",
                            "--port",
                            Integer.toString(ports[i]),
                            "--roles",
                            i < 2 ? "coordinator,rollout,gateway" : "rollout,gateway",
                            "--gateway-host",
                            "127.0.0.1",
                            "--gateway-port",
                            Integer.toString(gateways[i]),
                            "--discovery",
                            "config",
                            "--management-host",
                            "127.0.0.1",
                            "--management-port",
                            Integer.toString(management[i]),
                            "--profile",
                            profile.toString(),
                            "rollout.servers=" + String.join(",", servers),
                            "rollout.fileroot=" + run.dir().resolve("out"),
                            "rollout.dump_to_file=false",
                            "rollout.consumer_batch_size=4",
                            "rollout.max_concurrent_rollouts=12",
                            "rollout.eval_every=1000"),
                    javaHome(),
                    "-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1"));
        }
        for (ManagedProcess n : nodes) {
            n.awaitLine(TestCluster.GATEWAY, RUN_TIMEOUT);
        }

        // One cluster: every node's management endpoint lists the same three Up members.
        for (int i = 0; i < 3; i++) {
            URI members = URI.create("http://127.0.0.1:" + management[i] + "/cluster/members");
            List<String> up = Waits.until("three Up members seen by node-" + (i + 1), RUN_TIMEOUT, () -> {
                List<String> u = ClusterBootstrapTest.upMembers(members);
                return u.size() == 3 ? Optional.of(u) : Optional.empty();
            });
            assertThat(up).hasSize(3);
        }
        for (int i = 0; i < 3; i++) {
            URI ready = URI.create("http://127.0.0.1:" + management[i] + "/ready");
            Waits.untilTrue(
                    "node-" + (i + 1) + " ready (GET " + ready + ")",
                    QUICK,
                    () -> ClusterBootstrapTest.get(ready).statusCode() == 200);
        }

        // A trainer through the three gateways: pull, acknowledge, publish the next version.
        List<String> urls = new ArrayList<>();
        for (int g : gateways) {
            urls.add("http://127.0.0.1:" + g);
        }
        int steps = 3;
        try (RolloutClient trainer = RolloutClient.connect(TestCluster.clientConfig(urls))) {
            long deadline = System.nanoTime() + RUN_TIMEOUT.toNanos();
            for (int step = 0; step < steps; step++) {
                Optional<TrainingBatch> batch = Optional.empty();
                while (batch.isEmpty()) {
                    assertThat(System.nanoTime() - deadline)
                            .as("step " + (step + 1) + " of " + steps + " within " + RUN_TIMEOUT)
                            .isNegative();
                    batch = trainer.nextBatch(Duration.ofSeconds(2));
                }
                assertThat(batch.get().groups()).hasSize(4);
                trainer.acknowledge(batch.get());
                trainer.publishWeights(step + 1, weights);
            }
            assertThat(trainer.status().version()).isEqualTo(steps);
        }
        for (ManagedProcess n : nodes) {
            assertThat(n.isAlive()).as(n + " alive after training").isTrue();
        }
    }

    @Test
    void anOldJavaHomeIsPassedOverForANewerJavaBesideItAndRefusedNamingItsVersionWhenItIsTheOnlyOne() throws Exception {
        // A runtime that says it is Java 17, as an old JAVA_HOME (or the machine's default java) would.
        Path fake = run.dir().resolve("old-jdk");
        Files.createDirectories(fake.resolve("bin"));
        Path java = fake.resolve("bin/java");
        Files.writeString(java, "#!/bin/bash\necho '    java.specification.version = 17' >&2\n");
        java.toFile().setExecutable(true);
        Path noJvms = Files.createDirectories(run.dir().resolve("no-jvms"));
        ManagedProcess p = launch("old-java", List.of("--version"), fake, noJvms);
        assertThat(p.awaitExit(QUICK)).isEqualTo(1);
        assertThat(String.join("\n", p.lines()))
                .contains("no Java 21 or later found")
                .contains("JAVA_HOME=" + fake + ": Java 17");

        // A newer Java installed beside it, as under /usr/lib/jvm: the launcher finds and uses it.
        Path jvms = Files.createDirectories(run.dir().resolve("jvms"));
        Files.createSymbolicLink(jvms.resolve("some-jdk"), Path.of(System.getProperty("java.home")));
        ManagedProcess found = launch("newer-java", List.of("--version"), fake, jvms);
        assertThat(found.awaitExit(QUICK)).isZero();
        assertThat(String.join("\n", found.lines())).contains(version);

        ManagedProcess none = launch("no-java", List.of("--version"), run.dir().resolve("nowhere"), noJvms);
        assertThat(none.awaitExit(QUICK)).isEqualTo(1);
        assertThat(String.join("\n", none.lines())).contains("(no executable bin/java)");
    }

    @Test
    void theDockerfileBuildsAndUnpacksTheTarballThisBuildMakes() throws IOException {
        String dockerfile = Files.readString(repoRoot.resolve("Dockerfile"));
        Matcher arg = Pattern.compile("(?m)^ARG ROLLOUT_VERSION=(\\S+)$").matcher(dockerfile);
        assertThat(arg.find())
                .as("ARG ROLLOUT_VERSION=<version> in the Dockerfile")
                .isTrue();
        assertThat(arg.group(1)).as("the Dockerfile's version is the project's").isEqualTo(version);
        String tarballInImage = "modules/dist/target/rollout-${ROLLOUT_VERSION}.tar.gz";
        assertThat(dockerfile).contains(tarballInImage);
        assertThat(repoRoot.resolve(tarballInImage.replace("${ROLLOUT_VERSION}", arg.group(1))))
                .as("the path the Dockerfile unpacks is the tarball the build made")
                .isEqualTo(tarball);
        assertThat(dockerfile).containsPattern("(?m)^FROM eclipse-temurin:(2[1-9]|[3-9]\\d)-jre$");
        assertThat(dockerfile).containsPattern("(?m)^USER 10001");
        assertThat(dockerfile).contains("ENTRYPOINT [\"/opt/rollout/bin/rollout\"]");
    }

    private Path javaHome() {
        return Path.of(System.getProperty("java.home"));
    }

    /** bin/rollout of the unpacked tarball, from a working directory of its own, with {@code PATH} = the tools. */
    private ManagedProcess launch(String name, List<String> args, Path javaHome) throws IOException {
        // 2 cores shared with other tests: a small heap and a quick JIT, as the other system tests' JVMs.
        return launch(name, args, javaHome, "-Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1");
    }

    /** As {@link #launch(String, List, Path)}, with {@code ROLLOUT_JAVA_OPTS} = {@code javaOpts}. */
    private ManagedProcess launch(String name, List<String> args, Path javaHome, String javaOpts) throws IOException {
        // Only the given JAVA_HOME: the machine's other Java runtimes are not looked at.
        return launch(
                name,
                args,
                javaHome,
                javaOpts,
                Files.createDirectories(run.dir().resolve("no-jvms")));
    }

    /** As {@link #launch(String, List, Path)}, looking for other Java runtimes in {@code javaDirs}. */
    private ManagedProcess launch(String name, List<String> args, Path javaHome, Path javaDirs) throws IOException {
        return launch(name, args, javaHome, "-Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1", javaDirs);
    }

    private ManagedProcess launch(String name, List<String> args, Path javaHome, String javaOpts, Path javaDirs)
            throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(home.resolve("bin/rollout").toString());
        cmd.addAll(args);
        Map<String, String> env = new HashMap<>();
        env.put("PATH", tools.toString());
        env.put("JAVA_HOME", javaHome.toString());
        env.put("ROLLOUT_JAVA_OPTS", javaOpts);
        env.put("ROLLOUT_JAVA_DIRS", javaDirs.toString());
        Path work = run.dir().resolve("work-" + name);
        Files.createDirectories(work);
        return run.register(ManagedProcess.start(name, cmd, env, work, run.dir().resolve(name + ".log")));
    }
}
