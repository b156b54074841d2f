package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Starts {@code java -jar rollout-cli.jar …} as a user runs {@code bin/rollout}: a small heap and the
 * JDK flags the engine's dependencies need, from the repository's root (the examples' paths are
 * relative to it), its output in {@code NAME.log} under the test's run directory.
 */
final class CliProcess {
    static final Path REPO_ROOT = Path.of(System.getProperty("rollout.repo.root", "../.."))
            .toAbsolutePath()
            .normalize();
    static final Path CLI_JAR = Path.of(System.getProperty("rollout.cli.jar", "../cli/target/rollout-cli.jar"))
            .toAbsolutePath()
            .normalize();

    private static final ObjectMapper JSON = new ObjectMapper();

    private CliProcess() {}

    static ManagedProcess start(SystemTestRun run, String name, String... args) throws IOException {
        return start(run, name, List.of(), args);
    }

    /** With {@code launcher} in front of {@code java} (e.g. {@code env --default-signal=INT}). */
    static ManagedProcess start(SystemTestRun run, String name, List<String> launcher, String... args)
            throws IOException {
        List<String> cmd = new ArrayList<>(launcher);
        cmd.addAll(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
                "--add-opens=java.base/java.nio=ALL-UNNAMED",
                "--enable-native-access=ALL-UNNAMED"));
        if (Runtime.version().feature() >= 23) {
            cmd.add("--sun-misc-unsafe-memory-access=allow");
        }
        // Started from the class-data archive the system tests' nodes recorded, when there is one.
        cmd.addAll(TestCluster.recordedArchiveFlags(CLI_JAR));
        cmd.addAll(List.of("-jar", CLI_JAR.toString()));
        cmd.addAll(List.of(args));
        ManagedProcess p =
                ManagedProcess.start(name, cmd, Map.of(), REPO_ROOT, run.dir().resolve(name + ".log"));
        run.register(p);
        return p;
    }

    /** A port free on 127.0.0.1 at the time of the call, never handed out before ({@link TestCluster#freePort}). */
    static int freePort() throws IOException {
        return TestCluster.freePort();
    }

    /** The one run directory under {@code experiment}. */
    static Path onlyRunDir(Path experiment) throws IOException {
        try (Stream<Path> dirs = Files.list(experiment)) {
            List<Path> all = dirs.filter(Files::isDirectory).toList();
            assertThat(all).as("run directories under " + experiment).hasSize(1);
            return all.get(0);
        }
    }

    /** Every row of every {@code .jsonl} dump under {@code dir}. */
    static List<JsonNode> dumpRows(Path dir) throws IOException {
        List<JsonNode> rows = new ArrayList<>();
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".jsonl")).toList()) {
                for (String line : Files.readAllLines(f)) {
                    rows.add(JSON.readTree(line));
                }
            }
        }
        return rows;
    }
}
