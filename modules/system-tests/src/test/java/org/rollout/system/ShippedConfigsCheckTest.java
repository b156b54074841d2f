package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.typesafe.config.ConfigFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every run configuration the repository ships passes {@code rollout check-config} as the command
 * that would run it: each rollout config under {@code examples/} as {@code rollout local} does, the
 * Kubernetes example overlay's as each engine workload's {@code rollout node} arguments give it (from
 * the rendered manifests: the run and profile ConfigMaps, the container's args and its token
 * Secret), the Slurm scripts' and {@code deploy/local-cluster.sh}'s as those scripts call {@code
 * bin/rollout} (run with a {@code bin/rollout} that records its arguments). A configuration that
 * needs something only present where it is deployed is given a stand-in, and the test says which.
 */
@Timeout(600)
class ShippedConfigsCheckTest {
    private static final Duration CHECK_TIMEOUT = Duration.ofSeconds(120);
    /** How many check-config JVMs run side by side (2 cores). */
    private static final int AT_ONCE = 2;
    /** The gateway token Secret's stand-in: the gateway's nodes read it from $ROLLOUT_GATEWAY_TOKEN. */
    private static final String TOKEN = "test-token";

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    private final Path repoRoot = CliProcess.REPO_ROOT;

    /** Extra arguments an example needs, as its header says it is run. */
    private static final Map<String, List<String>> EXAMPLE_ARGS = Map.of(
            // Its reward class is the template's own jar (built by the reactor before this module).
            "examples/user-workflow/rollout.conf",
            List.of(
                    "--classpath",
                    Path.of(System.getProperty(
                                    "rollout.user.workflow.jar",
                                    "../../examples/user-workflow/target/user-workflow.jar"))
                            .toAbsolutePath()
                            .normalize()
                            .toString()));

    @Test
    void everyExampleRolloutConfigPassesCheckConfigAsRolloutLocal() throws Exception {
        List<Path> configs;
        try (Stream<Path> files = Files.walk(repoRoot.resolve("examples"))) {
            configs = files.filter(p -> p.toString().endsWith(".conf"))
                    .filter(p -> !p.toString().contains("/target/"))
                    .filter(ShippedConfigsCheckTest::isRolloutConfig)
                    .sorted()
                    .toList();
        }
        assertThat(configs).isNotEmpty();
        List<String> rels = configs.stream()
                .map(conf -> repoRoot.relativize(conf).toString())
                .toList();
        List<List<String>> checks = new ArrayList<>();
        for (String rel : rels) {
            List<String> args = new ArrayList<>(List.of("check-config", "--config", rel));
            args.addAll(EXAMPLE_ARGS.getOrDefault(rel, List.of()));
            checks.add(args);
        }
        List<String> outputs = checkConfigs(checks, Map.of());
        for (int i = 0; i < rels.size(); i++) {
            String rel = rels.get(i);
            assertThat(outputs.get(i)).as(rel).contains("ok: rollout local --config " + rel);
        }
    }

    @Test
    void theKubernetesOverlaysEngineWorkloadsPassCheckConfigWithTheirOwnArguments() throws Exception {
        Path kubectl = Path.of("/usr/bin/kubectl");
        assumeTrue(
                Files.isExecutable(kubectl),
                "kubectl is not installed (/usr/bin/kubectl; .ci/run installs the Debian package kubectl):"
                        + " the Kubernetes manifests are not rendered");
        String yaml = ManagedProcess.run(
                List.of(kubectl.toString(), "kustomize", "deploy/kubernetes/overlays/example"),
                Map.of(),
                repoRoot,
                CHECK_TIMEOUT);
        Map<String, JsonNode> objects = new HashMap<>();
        try (MappingIterator<JsonNode> docs =
                new ObjectMapper(new YAMLFactory()).readerFor(JsonNode.class).readValues(yaml)) {
            while (docs.hasNext()) {
                JsonNode d = docs.next();
                if (d != null && d.has("kind")) {
                    String name = d.at("/metadata/name").asText();
                    // Generated ConfigMaps carry a hash suffix: keyed by their generator's name.
                    if (d.get("kind").asText().equals("ConfigMap")) {
                        name = name.replaceFirst("-[a-z0-9]{10}$", "");
                    }
                    objects.put(d.get("kind").asText() + "/" + name, d);
                }
            }
        }
        // The ConfigMaps the pods mount, written where the test can name them.
        Map<String, Path> mounted = new HashMap<>();
        for (String map : List.of("rollout-run", "rollout-profile")) {
            JsonNode cm = objects.get("ConfigMap/" + map);
            assertThat(cm).as("ConfigMap " + map).isNotNull();
            Path dir = Files.createDirectories(run.dir().resolve(map));
            cm.path("data").fields().forEachRemaining(e -> {
                try {
                    Files.writeString(dir.resolve(e.getKey()), e.getValue().asText());
                } catch (java.io.IOException ex) {
                    throw new java.io.UncheckedIOException(ex);
                }
            });
            mounted.put(map, dir);
        }
        List<String> workloads = List.of("StatefulSet/rollout-coordinator", "Deployment/rollout-node");
        List<List<String>> checks = new ArrayList<>();
        List<Map<String, String>> envs = new ArrayList<>();
        for (String workload : workloads) {
            JsonNode w = objects.get(workload);
            JsonNode engine = null;
            for (JsonNode c : w.at("/spec/template/spec/containers")) {
                if (c.path("name").asText().equals("rollout")) {
                    engine = c;
                }
            }
            assertThat(engine).as(workload + " container rollout").isNotNull();
            // Mount paths of the ConfigMap volumes, to map the args' paths onto the files written above.
            Map<String, String> volumeToMap = new HashMap<>();
            for (JsonNode v : w.at("/spec/template/spec/volumes")) {
                if (v.has("configMap")) {
                    volumeToMap.put(
                            v.path("name").asText(),
                            v.at("/configMap/name").asText().replaceFirst("-[a-z0-9]{10}$", ""));
                }
            }
            Map<String, Path> mountToDir = new HashMap<>();
            for (JsonNode m : engine.path("volumeMounts")) {
                String map = volumeToMap.get(m.path("name").asText());
                if (map != null) {
                    mountToDir.put(m.path("mountPath").asText(), mounted.get(map));
                }
            }
            List<String> args = new ArrayList<>();
            engine.path("args").forEach(a -> args.add(a.asText()));
            assertThat(args.get(0)).isEqualTo("node");
            List<String> check = new ArrayList<>(List.of("check-config", "--role", "node"));
            for (String a : args.subList(1, args.size())) {
                // The pod's IP (the downward API): this machine's loopback address.
                String mapped = a.replace("$(POD_IP)", "127.0.0.1");
                for (Map.Entry<String, Path> m : mountToDir.entrySet()) {
                    mapped = mapped.replace(m.getKey() + "/", m.getValue() + "/");
                }
                check.add(mapped);
            }
            // The pod's environment: a Secret's value is the test's stand-in token.
            Map<String, String> env = new HashMap<>();
            for (JsonNode e : engine.path("env")) {
                if (e.has("value")) {
                    env.put(e.path("name").asText(), e.path("value").asText());
                } else if (e.at("/valueFrom/secretKeyRef").isObject()) {
                    env.put(e.path("name").asText(), TOKEN);
                }
            }
            if (args.stream().anyMatch(a -> a.startsWith("--roles=") && a.contains("gateway"))) {
                assertThat(env).as(workload + " gateway token from a Secret").containsKey("ROLLOUT_GATEWAY_TOKEN");
            }
            checks.add(check);
            envs.add(env);
        }
        List<String> outputs = checkConfigs(checks, envs);
        for (int i = 0; i < workloads.size(); i++) {
            assertThat(outputs.get(i)).as(workloads.get(i)).contains("ok: rollout node");
        }
        assertThat(outputs).hasSize(2);
    }

    @Test
    void theSlurmScriptsNodesPassCheckConfigWithTheArgumentsTheyWouldStartWith() throws Exception {
        Path home = fakeRelease();
        // The scripts ship no run configuration (ROLLOUT_CONFIG is the job's): the Kubernetes
        // example's stands in for it.
        Path conf = repoRoot.resolve("deploy/kubernetes/overlays/example/rollout.conf");
        List<String> hosts = List.of("node01", "node04");
        List<List<String>> checks = new ArrayList<>();
        for (String host : hosts) {
            Path calls = run.dir().resolve("slurm-" + host + ".args");
            ManagedProcess.run(
                    List.of(
                            "/bin/bash",
                            repoRoot.resolve("deploy/slurm/rollout-node.sh").toString()),
                    Map.of(
                            "SLURM_JOB_NODELIST",
                            "node[01-04]",
                            "SLURMD_NODENAME",
                            host,
                            "ROLLOUT_HOME",
                            home.toString(),
                            "ROLLOUT_CONFIG",
                            conf.toString(),
                            "ROLLOUT_GATEWAY_TOKEN",
                            TOKEN,
                            "CALLS",
                            calls.toString()),
                    repoRoot,
                    CHECK_TIMEOUT);
            List<List<String>> recorded = calls(calls);
            assertThat(recorded).hasSize(1);
            List<String> args = recorded.get(0);
            assertThat(args.get(0)).isEqualTo("node");
            List<String> check = new ArrayList<>(List.of("check-config", "--role", "node"));
            check.addAll(args.subList(1, args.size()));
            checks.add(check);
        }
        List<String> outputs = checkConfigs(checks, Map.of("ROLLOUT_GATEWAY_TOKEN", TOKEN));
        for (int i = 0; i < hosts.size(); i++) {
            assertThat(outputs.get(i)).as(hosts.get(i)).contains("ok: rollout node");
        }
    }

    @Test
    void localClusterShsNodesPassCheckConfigWithTheArgumentsItStartsThemWith() throws Exception {
        // The script runs its repository's bin/rollout: a copy of it beside a recording bin/rollout.
        Path root = fakeRelease();
        Files.createDirectories(root.resolve("deploy"));
        Files.copy(repoRoot.resolve("deploy/local-cluster.sh"), root.resolve("deploy/local-cluster.sh"));
        Path calls = run.dir().resolve("local-cluster.args");
        ManagedProcess.run(
                List.of("/bin/bash", root.resolve("deploy/local-cluster.sh").toString()),
                Map.of("RUN_DIR", run.dir().resolve("local-cluster").toString(), "CALLS", calls.toString()),
                root,
                CHECK_TIMEOUT);
        List<List<String>> nodes =
                calls(calls).stream().filter(c -> c.get(0).equals("node")).toList();
        assertThat(nodes).hasSize(3);
        List<List<String>> checks = new ArrayList<>();
        for (List<String> args : nodes) {
            List<String> check = new ArrayList<>(List.of("check-config", "--role", "node"));
            check.addAll(args.subList(1, args.size()));
            checks.add(check);
        }
        List<String> outputs = checkConfigs(checks, Map.of());
        for (int i = 0; i < nodes.size(); i++) {
            assertThat(outputs.get(i)).as(String.join(" ", nodes.get(i))).contains("ok: rollout node");
        }
    }

    /** {@link #checkConfig} of each of {@code checks} with the same environment. */
    private List<String> checkConfigs(List<List<String>> checks, Map<String, String> env) throws Exception {
        return checkConfigs(checks, checks.stream().map(c -> env).toList());
    }

    /**
     * {@link #checkConfig} of each of {@code checks}, with the environment of the same index, {@link
     * #AT_ONCE} at a time (each is a JVM of its own, mostly start-up); their outputs in the same
     * order. Fails with the first (in that order) that failed.
     */
    private List<String> checkConfigs(List<List<String>> checks, List<Map<String, String>> envs) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(AT_ONCE);
        try {
            List<Future<String>> runs = new ArrayList<>();
            for (int i = 0; i < checks.size(); i++) {
                List<String> args = checks.get(i);
                Map<String, String> env = envs.get(i);
                runs.add(pool.submit(() -> checkConfig(args, env)));
            }
            List<String> outputs = new ArrayList<>();
            for (Future<String> run : runs) {
                try {
                    outputs.add(run.get());
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof Error error) {
                        throw error; // an AssertionError naming the command and its output
                    }
                    throw e;
                }
            }
            return outputs;
        } finally {
            pool.shutdownNow();
        }
    }

    /** {@code rollout ARGS} in its own JVM from the repository's root; its output, failing unless it exits 0. */
    private String checkConfig(List<String> args, Map<String, String> env) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "--enable-native-access=ALL-UNNAMED"));
        // Started from the class-data archive the system tests' nodes recorded, when there is one.
        cmd.addAll(TestCluster.recordedArchiveFlags(CliProcess.CLI_JAR));
        if (Runtime.version().feature() >= 23) {
            cmd.add("--sun-misc-unsafe-memory-access=allow");
        }
        cmd.addAll(List.of("-jar", CliProcess.CLI_JAR.toString()));
        cmd.addAll(args);
        return ManagedProcess.run(cmd, env, repoRoot, CHECK_TIMEOUT);
    }

    /**
     * A release whose {@code bin/rollout} records each call's arguments (one per line, a blank line
     * after each call) in {@code $CALLS} and answers as the real one does where a script waits for it.
     */
    private Path fakeRelease() throws Exception {
        Path home = Files.createDirectories(run.dir().resolve("release-" + System.nanoTime()));
        Path bin = Files.createDirectories(home.resolve("bin"));
        Path rollout = bin.resolve("rollout");
        Files.writeString(rollout, """
                #!/usr/bin/env bash
                printf '%s\\n' "$@" >>"$CALLS"
                echo >>"$CALLS"
                case $1 in
                  --version) echo "rollout (recording)" ;;
                  demo-weights) mkdir -p "$2" && echo "$2/v0.rlm" ;;
                  model-server) echo "model server listening on http://127.0.0.1:$((30000 + $$ % 1000))" ;;
                  node) echo "node up: recorded"; echo "gateway listening on http://127.0.0.1:8470" ;;
                esac
                exit 0
                """);
        Files.setPosixFilePermissions(rollout, PosixFilePermissions.fromString("rwxr-xr-x"));
        return home;
    }

    private static List<List<String>> calls(Path file) throws Exception {
        List<List<String>> calls = new ArrayList<>();
        List<String> current = new ArrayList<>();
        for (String line : Files.readAllLines(file)) {
            if (line.isEmpty()) {
                calls.add(current);
                current = new ArrayList<>();
            } else {
                current.add(line);
            }
        }
        return calls;
    }

    private static boolean isRolloutConfig(Path p) {
        try {
            return ConfigFactory.parseFile(p.toFile()).hasPath("rollout");
        } catch (RuntimeException e) {
            return false;
        }
    }
}
