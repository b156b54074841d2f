package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class CheckConfigCommandTest {
    record Run(int exit, String out, String err) {}

    /** Runs {@code rollout ARGS} in this JVM, capturing what it prints. */
    static Run run(String... args) {
        CommandLine cl = RolloutCli.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cl.setOut(new PrintWriter(out));
        cl.setErr(new PrintWriter(err));
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        ByteArrayOutputStream capturedOut = new ByteArrayOutputStream();
        ByteArrayOutputStream capturedErr = new ByteArrayOutputStream();
        System.setOut(new PrintStream(capturedOut, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(capturedErr, true, StandardCharsets.UTF_8));
        try {
            int exit = cl.execute(args);
            return new Run(
                    exit,
                    out + capturedOut.toString(StandardCharsets.UTF_8),
                    err + capturedErr.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }

    /** An rlvr job on the template's dataset with a reward class of the engine's. */
    private static Path rlvrConfig(Path dir) throws Exception {
        Path train = Path.of("../../examples/user-workflow/data/train.jsonl").toAbsolutePath();
        Path conf = dir.resolve("rollout.conf");
        Files.writeString(conf, """
                rollout {
                  trial_name = "check"
                  fileroot = "%s"
                  workflow = "rlvr"
                  workflow_kwargs.reward_fn = "org.rollout.workflows.demo.LetterReward"
                  tokenizer_path = "builtin"
                  dataset.train = ["%s"]
                  servers = ["127.0.0.1:9"]
                }
                """.formatted(dir.resolve("runs"), train));
        return conf;
    }

    @Test
    void aCompleteConfigurationPassesWithOneOkLineNamingWhatWasChecked(@TempDir Path dir) throws Exception {
        Run r = run("check-config", "--config", rlvrConfig(dir).toString());
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out().lines().toList()).hasSize(1);
        assertThat(r.out())
                .startsWith("ok: rollout local --config ")
                .contains("workflow rlvr (reward_fn org.rollout.workflows.demo.LetterReward)")
                .contains("1 training and 0 evaluation file(s)", "tokenizer builtin", "nothing started");
        // Nothing was created for a run: no run directory claimed.
        assertThat(dir.resolve("runs")).doesNotExist();
    }

    @Test
    void aConfigurationErrorIsTheSameMessageAndExitStatusAsLocalGives(@TempDir Path dir) throws Exception {
        String conf = rlvrConfig(dir).toString();
        String bad = "rollout.workflow_kwargs.reward_fn=com.example.NoSuchReward";
        Run checked = run("check-config", "--config", conf, bad);
        Run local = run("local", "--steps", "1", "--config", conf, bad);
        assertThat(checked.exit()).isEqualTo(2).isEqualTo(local.exit());
        assertThat(checked.err())
                .startsWith("configuration error: ")
                .contains("'rollout.workflow_kwargs.reward_fn'", "com.example.NoSuchReward")
                .isEqualTo(local.err());
        assertThat(checked.out()).doesNotContain("ok:");
    }

    @Test
    void anUnknownKeyIsRefusedNamingTheKey(@TempDir Path dir) throws Exception {
        Run r = run("check-config", "--config", rlvrConfig(dir).toString(), "rollout.consumer_batchsize=4");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("configuration error: ", "rollout.consumer_batchsize");
    }

    @Test
    void aDatasetFileThatDoesNotExistIsRefusedNamingTheKey(@TempDir Path dir) throws Exception {
        Run r = run(
                "check-config",
                "--config",
                rlvrConfig(dir).toString(),
                "rollout.dataset.train=[\"" + dir.resolve("missing.jsonl") + "\"]");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("configuration error: ", "rollout.dataset.train", "missing.jsonl");
    }

    @Test
    void asANodeTheNodesFlagsAreCheckedToo(@TempDir Path dir) throws Exception {
        Run r = run(
                "check-config", "--role", "node", "--config", rlvrConfig(dir).toString(), "--roles=rollout,nope");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("invalid role 'nope' in --roles");
    }

    @Test
    void asANodeAGatewayOnAllInterfacesWithATokenPasses(@TempDir Path dir) throws Exception {
        Run r = run(
                "check-config",
                "--role",
                "node",
                "--config",
                rlvrConfig(dir).toString(),
                "--roles=coordinator,rollout,gateway",
                "--gateway-host=0.0.0.0",
                "--gateway-token=s3cret");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out().lines().toList()).hasSize(1);
        assertThat(r.out())
                .startsWith(
                        "ok: rollout node --roles coordinator,rollout,gateway, gateway on 0.0.0.0:8470 with a token");
    }

    @Test
    void asANodeAGatewayOnAllInterfacesWithoutATokenIsRefusedNamingTheFlagAndTheVariable(@TempDir Path dir)
            throws Exception {
        assumeTrue(System.getenv("ROLLOUT_GATEWAY_TOKEN") == null, "ROLLOUT_GATEWAY_TOKEN is set in this environment");
        Run r = run(
                "check-config", "--role", "node", "--config", rlvrConfig(dir).toString(), "--gateway-host=0.0.0.0");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("'--gateway-host'", "0.0.0.0", "--gateway-token", "$ROLLOUT_GATEWAY_TOKEN");
    }

    @Test
    void asANodeWithoutTheGatewayRoleTheGatewayHostNeedsNoToken(@TempDir Path dir) throws Exception {
        Run r = run(
                "check-config",
                "--role",
                "node",
                "--config",
                rlvrConfig(dir).toString(),
                "--roles=rollout",
                "--gateway-host=0.0.0.0");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).startsWith("ok: rollout node --roles rollout --config ");
    }

    @Test
    void asANodeItBindsNoPortTheNodeWouldListenOn(@TempDir Path dir) throws Exception {
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            String port = Integer.toString(taken.getLocalPort());
            Run r = run(
                    "check-config",
                    "--role",
                    "node",
                    "--config",
                    rlvrConfig(dir).toString(),
                    "--port",
                    port,
                    "--gateway-port",
                    port,
                    "--management-port",
                    port);
            assertThat(r.exit()).as(r.err()).isZero();
            assertThat(r.out()).startsWith("ok: rollout node");
        }
    }

    @Test
    void anUnknownRoleIsRefusedWithTheAllowedValues(@TempDir Path dir) throws Exception {
        Run r = run(
                "check-config", "--role", "trainer", "--config", rlvrConfig(dir).toString());
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("'--role'", "trainer", "local or node");
    }
}
