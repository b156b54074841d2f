package org.rollout.benchmarks.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.rollout.cli.RolloutCli;

/**
 * {@code rollout bench}: the CLI finds the benchmarks' command through its {@code CliSubcommand}
 * service ({@link BenchSubcommand}, registered in this module's {@code META-INF/services}) when this
 * module is on its class path; the command's wiring only, nothing is measured (timings are never
 * asserted).
 */
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

    /**
     * The scale-out benchmark starts real node JVMs ({@code rollout node} from this class path) on
     * 127.0.0.1: one point of one node and the two-node hand-off, tiny, only to show that it runs
     * from a fresh build and reports every figure.
     */
    @Test
    @Timeout(240)
    void scaleOutRunsNodeJvmsAndReportsGroupsPerSecondAndHandOffBandwidth() {
        Run r = run(
                "bench",
                "scaleout",
                "--nodes",
                "1",
                "--warmup-batches",
                "1",
                "--batches",
                "2",
                "--handoff-batches",
                "1",
                "--handoff-warmup-batches",
                "1",
                "--handoff-tokens",
                "4096",
                "--handoff-node-heap",
                "384m");
        assertThat(r.exit()).as(r.err()).isZero();
        Map<String, String> values = SummaryLine.parse(r.out().strip());
        assertThat(values)
                .containsEntry("bench", "scaleout")
                .containsEntry("nodes", "1")
                .containsEntry("handoff-tokens", "4096")
                .containsKeys("groups_per_s_1", "formation_s_1", "handoff_mb_per_s", "loopback_mb_per_s");
        assertThat(Double.parseDouble(values.get("groups_per_s_1"))).isPositive();
        // 1 batch of 4 groups of 16 rows of 32 + 4096 tokens: the hand-off carried all of it.
        assertThat(Long.parseLong(values.get("handoff_bytes"))).isGreaterThan(4L * 16 * 4096 * 4 * 3);
    }
}
