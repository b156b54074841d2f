package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.benchmarks.e2e.SummaryLine;

/** {@code rollout bench}: the command's wiring only; nothing is measured (timings are never asserted). */
class BenchCommandTest {
    private record Run(int exit, String out, String err) {}

    private static Run run(String... args) {
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            int exit = RolloutCli.commandLine().execute(args);
            return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }

    @Test
    void helpListsEveryBenchmarkAndItsFlagsWithDefaults() {
        Run r = run("bench", "--help");
        assertThat(r.exit()).isZero();
        assertThat(r.out())
                .contains("orchestration:", "async:", "interrupt:", "weights:")
                .contains("--step-cost-ms", "(default 1000)")
                .contains("--update-interval-s");
    }

    @Test
    void anUnknownBenchmarkExitsWithTwoNamingTheKnownOnes() {
        Run r = run("bench", "fastest");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("unknown benchmark 'fastest'", "orchestration, async, interrupt, weights");
    }

    @Test
    void anUnknownFlagExitsWithTwoNamingTheBenchmarksFlags() {
        Run r = run("bench", "weights", "--sever", "3");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("bench weights: unknown flag --sever (known: --servers, --updates");
    }

    @Test
    void aBenchmarkPrintsOneParseableSummaryLineWithItsFlags() {
        Run r = run("bench", "weights", "--servers", "2", "--updates", "1", "--warmup-updates", "0");
        assertThat(r.exit()).as(r.err()).isZero();
        String line = r.out().strip();
        assertThat(line.lines()).hasSize(1);
        Map<String, String> values = SummaryLine.parse(line);
        assertThat(values)
                .containsEntry("bench", "weights")
                .containsEntry("servers", "2")
                .containsKey("p99_ms");
    }
}
