package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.modelserver.LatencyModel;
import picocli.CommandLine;

/**
 * {@code rollout inspect} on the dumps of a real {@code rollout local} run, against counts the test
 * computes itself from the JSON lines (without the engine's reader): tasks, rows, mean reward and
 * staleness per version and scope; and a bad line refused naming its file and line.
 */
class InspectCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    static Path dir;

    static Path run;

    @BeforeAll
    static void aRealRun() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        boolean completed = new LocalRun(
                        ObservabilityEndToEndTest.settings(dir, "inspect"),
                        true,
                        false,
                        12,
                        2,
                        false,
                        new PrintStream(out, true, StandardCharsets.UTF_8))
                .withLatency(new LatencyModel(Duration.ZERO, Duration.ofMillis(2), Duration.ofMillis(1)))
                .execute();
        assertThat(completed).isTrue();
        run = dir.resolve("demo/inspect");
    }

    /** What the test counts itself: per "scope/version", tasks, rows, reward sum, staleness counts. */
    private record Expected(long tasks, long rows, double rewardSum, Map<Integer, Long> staleness) {}

    private static Map<String, Expected> countIndependently(Path run) throws Exception {
        Map<String, Expected> out = new TreeMap<>();
        for (String scope : List.of("rollout", "eval-rollout")) {
            if (!Files.isDirectory(run.resolve(scope))) {
                continue;
            }
            try (Stream<Path> files = Files.walk(run.resolve(scope))) {
                for (Path f : files.filter(p -> p.toString().endsWith(".jsonl")).toList()) {
                    String key = scope + "/" + f.getParent().getFileName();
                    Expected e = out.getOrDefault(key, new Expected(0, 0, 0, new TreeMap<>()));
                    long rows = 0;
                    double rewards = 0;
                    Map<Integer, Long> staleness = new HashMap<>(e.staleness());
                    for (String line : Files.readAllLines(f)) {
                        JsonNode n = JSON.readTree(line);
                        rows++;
                        rewards += n.get("reward").asDouble();
                        staleness.merge(
                                n.get("tail_version").asInt()
                                        - n.get("head_version").asInt(),
                                1L,
                                Long::sum);
                    }
                    out.put(
                            key,
                            new Expected(
                                    e.tasks() + 1, e.rows() + rows, e.rewardSum() + rewards, new TreeMap<>(staleness)));
                }
            }
        }
        return out;
    }

    @Test
    void summariesMatchCountsTakenFromTheLines() throws Exception {
        Map<String, Expected> expected = countIndependently(run);
        assertThat(expected).isNotEmpty();
        assertThat(expected.keySet()).anyMatch(k -> k.startsWith("eval-rollout/"));

        ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        PrintStream saved = System.out;
        int status;
        try {
            System.setOut(new PrintStream(stdout, true, StandardCharsets.UTF_8));
            status = new CommandLine(new InspectCommand()).execute(run.toString(), "--json");
        } finally {
            System.setOut(saved);
        }
        assertThat(status).isZero();
        JsonNode versions =
                JSON.readTree(stdout.toString(StandardCharsets.UTF_8)).get("versions");
        assertThat(versions).hasSize(expected.size());
        for (JsonNode v : versions) {
            String key = v.get("scope").asText() + "/" + v.get("version").asInt();
            Expected e = expected.get(key);
            assertThat(e).as(key).isNotNull();
            assertThat(v.get("tasks").asLong()).as(key).isEqualTo(e.tasks());
            assertThat(v.get("rows").asLong()).as(key).isEqualTo(e.rows());
            assertThat(v.get("reward").get("mean").asDouble())
                    .as(key)
                    .isCloseTo(e.rewardSum() / e.rows(), org.assertj.core.data.Offset.offset(1e-9));
            Map<Integer, Long> staleness = new TreeMap<>();
            v.get("staleness")
                    .fields()
                    .forEachRemaining(f -> staleness.put(
                            Integer.parseInt(f.getKey()), f.getValue().asLong()));
            assertThat(staleness).as(key).isEqualTo(e.staleness());
        }
    }

    @Test
    void thePrefixCacheHitRateOfEachVersionComesFromTheRunsStatistics() throws Exception {
        // The built-in servers keep a prefix cache: a group's samples share their prompt.
        double prompt = 0;
        double cached = 0;
        for (String line : Files.readAllLines(run.resolve("stats.jsonl"))) {
            JsonNode n = JSON.readTree(line);
            if (n.get("scope").asText().equals("rollout") && n.has("prompt_tokens")) {
                prompt += n.get("prompt_tokens").asDouble()
                        * n.get("prompt_tokens__count").asDouble();
                cached += n.get("cached_prompt_tokens").asDouble()
                        * n.get("prompt_tokens__count").asDouble();
            }
        }
        assertThat(prompt).as("prompt tokens recorded in stats.jsonl").isPositive();
        assertThat(cached).as("cached prompt tokens recorded in stats.jsonl").isPositive();
        List<InspectCommand.VersionSummary> summaries = InspectCommand.summarise(run);
        for (InspectCommand.VersionSummary v : summaries) {
            if (v.scope().equals("rollout")) {
                assertThat(v.prefixCacheHitRate())
                        .as("version %d", v.version())
                        .isNotNull()
                        .isBetween(0.0, 1.0);
            }
        }
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        InspectCommand.print(new PrintStream(text, true, StandardCharsets.UTF_8), summaries);
        assertThat(text.toString(StandardCharsets.UTF_8)).contains("prefix cache hit rate");
    }

    @Test
    void textShowsEveryVersionAndTheEvalCurve() throws Exception {
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        InspectCommand.print(new PrintStream(text, true, StandardCharsets.UTF_8), InspectCommand.summarise(run));
        String s = text.toString(StandardCharsets.UTF_8);
        assertThat(s).contains("rollout:", "eval-rollout:", "(the eval curve)", "generated segments per row", "└");
        for (String key : countIndependently(run).keySet()) {
            if (key.startsWith("rollout/")) {
                assertThat(s).containsPattern("\\n\\s+" + key.substring("rollout/".length()) + "\\s+\\d+\\s+\\d+");
            }
        }
    }

    @Test
    void aBadLineIsRefusedNamingItsFileAndLine(@TempDir Path copy) throws Exception {
        Path v = Files.createDirectories(copy.resolve("rollout/0"));
        Path good;
        try (Stream<Path> files = Files.walk(run.resolve("rollout"))) {
            good = files.filter(p -> p.toString().endsWith(".jsonl"))
                    .findFirst()
                    .orElseThrow();
        }
        Path file = Files.copy(good, v.resolve("7.jsonl"));
        long lines = Files.readAllLines(file).size();
        Files.writeString(file, "{\"task_id\": \"seven\"}\n", StandardOpenOption.APPEND);
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream saved = System.err;
        int status;
        try {
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            status = new CommandLine(new InspectCommand()).execute(copy.toString());
        } finally {
            System.setErr(saved);
        }
        assertThat(status).isEqualTo(1);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains(file + ":" + (lines + 1) + ":", "field 'sample_idx'");
    }
}
