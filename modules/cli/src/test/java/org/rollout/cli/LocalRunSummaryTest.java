package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * One short demo run (4 steps, evaluation every 3 versions, 2 weight files kept) and what its
 * summary says against the files it wrote.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(600)
class LocalRunSummaryTest {
    @TempDir
    static Path root;

    private int exit;
    private String out;
    private Path runDir;

    @BeforeAll
    void runFourSteps() throws IOException {
        PrintStream oldOut = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            exit = RolloutCli.commandLine()
                    .execute(
                            "local",
                            "--demo",
                            "--steps",
                            "4",
                            "--servers",
                            "1",
                            "--no-status",
                            "rollout.fileroot=" + root,
                            "rollout.trial_name=summary",
                            "rollout.eval_every=3",
                            "rollout.local.keep_weights=2");
        } finally {
            System.setOut(oldOut);
        }
        out = captured.toString(StandardCharsets.UTF_8);
        runDir = root.resolve("demo").resolve("summary");
    }

    private String line(String containing) {
        return out.lines()
                .filter(l -> l.contains(containing))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no line with '" + containing + "' in:\n" + out));
    }

    private static long number(String line, String regex) {
        Matcher m = Pattern.compile(regex).matcher(line);
        assertThat(m.find()).as(line + " ~ " + regex).isTrue();
        return Long.parseLong(m.group(1));
    }

    private long statsSum(String scope, String field) throws IOException {
        ObjectMapper json = new ObjectMapper();
        long sum = 0;
        for (String l : Files.readAllLines(runDir.resolve("stats.jsonl"))) {
            JsonNode n = json.readTree(l);
            if (n.get("scope").asText().equals(scope)) {
                sum += n.get(field).asLong();
            }
        }
        return sum;
    }

    private long files(String dir) throws IOException {
        try (Stream<Path> s = Files.walk(runDir.resolve(dir))) {
            return s.filter(p -> p.toString().endsWith(".jsonl")).count();
        }
    }

    @Test
    void theRunSucceeds() {
        assertThat(exit).as(out).isZero();
    }

    @Test
    void theFinalWeightsAreEvaluatedBeforeTheSummaryThoughEvalEveryDoesNotDivideTheirVersion() {
        assertThat(line("evaluation (mean reward")).contains("v0 ", "v3 ", "v4 ");
        assertThat(out).doesNotContain("were not evaluated");
    }

    @Test
    void aFourStepRunShowsTheFirstAndLastHalfWithoutARatio() {
        assertThat(line("mean reward:"))
                .contains("first 2 steps", "last 2 steps")
                .doesNotContain("×");
    }

    @Test
    void onlyTheNewestWeightFilesAreKeptAndTheSummarySaysSo() throws IOException {
        try (Stream<Path> s = Files.list(runDir.resolve("weights"))) {
            assertThat(s.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".rlm")))
                    .containsExactlyInAnyOrder("v3.rlm", "v4.rlm");
        }
        assertThat(line("weights/v{n}.rlm"))
                .contains("kept: 2 (v3..v4)", "3 older deleted", "rollout.local.keep_weights = 2");
    }

    @Test
    void theTrainingGroupCountsAreTheStatsFilesRolloutLines() throws IOException {
        String groups = line("training groups");
        assertThat(number(groups, "(\\d+) accepted")).isEqualTo(statsSum("rollout", "accepted"));
        assertThat(number(groups, "(\\d+) rejected")).isEqualTo(statsSum("rollout", "rejected"));
        assertThat(number(groups, "of which (\\d+) trained in 4 steps"))
                .isLessThanOrEqualTo(statsSum("rollout", "accepted"));
    }

    @Test
    void theEvaluationGroupCountIsTheStatsFilesEvalLinesAndItsDumps() throws IOException {
        long evalGroups = number(line("evaluation groups"), "(\\d+), in 3 pass");
        assertThat(evalGroups).isEqualTo(statsSum("eval-rollout", "groups"));
        assertThat(number(line("evaluation dumps"), "(\\d+) evaluation dumps")).isEqualTo(files("eval-rollout"));
        assertThat(files("eval-rollout")).isEqualTo(evalGroups);
    }

    @Test
    void theDumpCountIsTheFilesUnderRolloutAndCoversEveryAcceptedGroup() throws IOException {
        long dumps = number(line("trajectory dumps"), "(\\d+) trajectory dumps");
        assertThat(dumps).isEqualTo(files("rollout"));
        assertThat(dumps).isGreaterThanOrEqualTo(statsSum("rollout", "accepted"));
    }

    @Test
    void eachCountSaysWhatItCounts() {
        assertThat(List.of(line("training groups"), line("trajectory dumps"), line("evaluation groups")))
                .allSatisfy(l -> assertThat(l).containsAnyOf("stats.jsonl", "one per"));
    }
}
