package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class ModelServerMainTest {
    @TempDir
    Path dir;

    @Test
    void optionsBecomeTheServerConfiguration() {
        ModelServerMain main = new ModelServerMain();
        new CommandLine(main)
                .parseArgs(
                        "--port",
                        "31000",
                        "--host",
                        "127.0.0.1",
                        "--seed",
                        "9",
                        "--weights",
                        "w.rlm",
                        "--max-running-requests",
                        "16",
                        "--prefill-us-per-token",
                        "2.5",
                        "--decode-base-us",
                        "1000",
                        "--decode-us-per-seq",
                        "50",
                        "--fault-error-rate",
                        "0.1",
                        "--fault-hang",
                        "--fault-crash-after",
                        "7",
                        "--fault-slow-ms",
                        "20",
                        "--fault-malformed-rate",
                        "0.2",
                        "--fault-malformed-kind",
                        "count_mismatch",
                        "--fault-seed",
                        "3",
                        "--prefix-cache-tokens",
                        "1024");
        ModelServerConfig c = main.config();
        assertThat(c.port()).isEqualTo(31000);
        assertThat(c.seed()).isEqualTo(9);
        assertThat(c.weightsPath()).isEqualTo(Path.of("w.rlm"));
        assertThat(c.maxRunningRequests()).isEqualTo(16);
        assertThat(c.latency())
                .isEqualTo(new LatencyModel(Duration.ofNanos(2500), Duration.ofMillis(1), Duration.ofNanos(50_000)));
        assertThat(c.faults())
                .isEqualTo(new FaultPlan(
                        0.1, true, 7, Duration.ofMillis(20), 0.2, FaultPlan.MalformedKind.COUNT_MISMATCH, 3));
        assertThat(c.prefixCacheTokens()).isEqualTo(1024);
    }

    @Test
    void defaultsAreLoopbackAFreePortAndNoFaultsOrLatency() {
        ModelServerMain main = new ModelServerMain();
        new CommandLine(main).parseArgs();
        ModelServerConfig c = main.config();
        assertThat(c.host()).isEqualTo("127.0.0.1");
        assertThat(c.port()).isZero();
        assertThat(c.latency().isNone()).isTrue();
        assertThat(c.faults().isNone()).isTrue();
        assertThat(c.outputLengths()).isNull();
        assertThat(c.prefixCacheTokens()).isEqualTo(ModelServerConfig.DEFAULT_PREFIX_CACHE_TOKENS);
    }

    @Test
    void aBadPrefixCacheSizeExitsWith2NamingTheOption() {
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(new ModelServerMain());
        cli.setErr(new PrintWriter(err, true));
        assertThat(cli.execute("--prefix-cache-tokens", "-1")).isEqualTo(2);
        assertThat(err.toString())
                .contains("model server: --prefix-cache-tokens must be >= 0 (0 turns the prefix cache off), got -1");
        assertThat(cli.execute("--prefix-cache-tokens", "lots")).isEqualTo(2);
        assertThat(err.toString()).contains("--prefix-cache-tokens").contains("'lots'");
    }

    @Test
    void outputLengthOptionsBecomeSimulatedOutputLengths() {
        ModelServerMain main = new ModelServerMain();
        new CommandLine(main)
                .parseArgs("--output-lengths", "lognormal:median=256,sigma=1", "--output-length-seed", "5");
        assertThat(main.config().outputLengths())
                .isEqualTo(new OutputLengths(new LengthDistribution.LogNormal(256, 1), 5));
    }

    @Test
    void aBadOutputLengthSpecExitsWith2NamingTheOption() {
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(new ModelServerMain());
        cli.setErr(new PrintWriter(err, true));
        assertThat(cli.execute("--output-lengths", "zipf:s=1")).isEqualTo(2);
        assertThat(err.toString())
                .contains("model server: --output-lengths: output length distribution 'zipf:s=1': unknown kind 'zipf'");
    }

    @Test
    void aBadOptionValueExitsWith2NamingIt() {
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(new ModelServerMain());
        cli.setErr(new PrintWriter(err, true));
        assertThat(cli.execute("--fault-malformed-kind", "odd")).isEqualTo(2);
        assertThat(err.toString()).contains("malformed_kind 'odd'");
        assertThat(cli.execute("--decode-base-us", "-1")).isEqualTo(2);
        assertThat(err.toString()).contains("--decode-base-us must be a finite number >= 0");
    }

    @Test
    void aBadWeightFileExitsWith1NamingThePath() {
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(new ModelServerMain());
        cli.setErr(new PrintWriter(err, true));
        Path missing = dir.resolve("none.rlm");
        assertThat(cli.execute("--weights", missing.toString())).isEqualTo(1);
        assertThat(err.toString()).contains(missing.toString());
    }

    @Test
    void theProcessPrintsOneListeningLineServesAndStopsCleanlyOnSigterm() throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        Path stdout = dir.resolve("stdout.txt");
        Process p = new ProcessBuilder(
                        java,
                        "-cp",
                        System.getProperty("java.class.path"),
                        ModelServerMain.class.getName(),
                        "--port",
                        "0",
                        "--seed",
                        "4")
                .redirectOutput(stdout.toFile())
                .redirectError(ProcessBuilder.Redirect.DISCARD)
                .start();
        try {
            ServerClient.await("the listening line", () -> !lines(stdout).isEmpty() || !p.isAlive());
            String line = lines(stdout).get(0);
            assertThat(line).matches("model server listening on http://127\\.0\\.0\\.1:\\d+");
            ServerClient client = new ServerClient(line.substring("model server listening on ".length()));
            assertThat(client.get("/health").status()).isEqualTo(200);
            assertThat(client.get("/get_model_info").json().get("model_path").asText())
                    .isEqualTo("builtin:tiny-lm?seed=4");
            p.destroy(); // SIGTERM
            assertThat(p.waitFor(60, TimeUnit.SECONDS))
                    .as("exits after SIGTERM")
                    .isTrue();
            assertThat(lines(stdout)).containsExactly(line, "model server stopped");
        } finally {
            p.destroyForcibly();
        }
    }

    private static List<String> lines(Path file) {
        try {
            return Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return List.of();
        }
    }
}
