package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The release tarball as a user gets it: {@code modules/dist/target/rollout-VERSION.tar.gz} (built
 * by the reactor) unpacked with {@code tar} into a temporary directory and run from there with
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

    @BeforeEach
    void unpack() throws Exception {
        assertThat(tarball)
                .as("the release tarball (built by the reactor's modules/dist)")
                .isRegularFile();
        Path into = run.dir().resolve("unpacked");
        Files.createDirectories(into);
        ManagedProcess tar = run.register(ManagedProcess.start(
                "tar",
                List.of("tar", "-xzf", tarball.toString(), "-C", into.toString()),
                Map.of(),
                into,
                run.dir().resolve("tar.log")));
        assertThat(tar.awaitExit(QUICK)).as("tar's exit status").isZero();
        home = into.resolve("rollout-" + version);
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

    @Test
    void anOldJavaIsRefusedNamingItsVersion() throws Exception {
        // A runtime that says it is Java 17, as an old JAVA_HOME would.
        Path fake = run.dir().resolve("old-jdk");
        Files.createDirectories(fake.resolve("bin"));
        Path java = fake.resolve("bin/java");
        Files.writeString(java, "#!/bin/bash\necho '    java.specification.version = 17' >&2\n");
        java.toFile().setExecutable(true);
        ManagedProcess p = launch("old-java", List.of("--version"), fake);
        assertThat(p.awaitExit(QUICK)).isEqualTo(1);
        assertThat(String.join("\n", p.lines()))
                .contains("JAVA_HOME=" + fake + " is Java 17; the Rollout Engine needs Java 21 or later");

        ManagedProcess none = launch("no-java", List.of("--version"), run.dir().resolve("nowhere"));
        assertThat(none.awaitExit(QUICK)).isEqualTo(1);
        assertThat(String.join("\n", none.lines())).contains("is not an executable");
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
        List<String> cmd = new ArrayList<>();
        cmd.add(home.resolve("bin/rollout").toString());
        cmd.addAll(args);
        Map<String, String> env = new HashMap<>();
        env.put("PATH", tools.toString());
        env.put("JAVA_HOME", javaHome.toString());
        // 2 cores shared with other tests: a small heap and a quick JIT, as the other system tests' JVMs.
        env.put("ROLLOUT_JAVA_OPTS", "-Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1");
        Path work = run.dir().resolve("work-" + name);
        Files.createDirectories(work);
        return run.register(ManagedProcess.start(name, cmd, env, work, run.dir().resolve(name + ".log")));
    }
}
