package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class RolloutCliTest {
    private record Run(int exit, String out, String err) {}

    private static Run run(String... args) {
        CommandLine cl = RolloutCli.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cl.setOut(new PrintWriter(out));
        cl.setErr(new PrintWriter(err));
        java.io.PrintStream oldErr = System.err;
        java.io.ByteArrayOutputStream captured = new java.io.ByteArrayOutputStream();
        System.setErr(new java.io.PrintStream(captured, true, java.nio.charset.StandardCharsets.UTF_8));
        try {
            int exit = cl.execute(args);
            return new Run(exit, out.toString(), err + captured.toString(java.nio.charset.StandardCharsets.UTF_8));
        } finally {
            System.setErr(oldErr);
        }
    }

    /** As {@link #run}, with what the command prints on System.out as the output. */
    private static Run runLocal(String... args) {
        java.io.PrintStream oldOut = System.out;
        java.io.ByteArrayOutputStream captured = new java.io.ByteArrayOutputStream();
        System.setOut(new java.io.PrintStream(captured, true, java.nio.charset.StandardCharsets.UTF_8));
        try {
            Run r = run(args);
            return new Run(r.exit(), captured.toString(java.nio.charset.StandardCharsets.UTF_8), r.err());
        } finally {
            System.setOut(oldOut);
        }
    }

    @Test
    void helpListsTheSubcommands() {
        Run r = run("--help");
        assertThat(r.exit()).isZero();
        assertThat(r.out()).contains("local", "model-server", "node");
    }

    /**
     * The CLI does not depend on the benchmarks: {@code bench} is the benchmarks module's {@link
     * CliSubcommand}, added only when its jars are on the class path (bin/rollout bench), so the CLI's
     * own class path (and the release tarball made from it) has no {@code bench}.
     */
    @Test
    void benchIsNotOneOfTheCLIsOwnSubcommandsNorOnItsClassPath() {
        assertThat(RolloutCli.commandLine().getSubcommands()).doesNotContainKey("bench");
        assertThat(RolloutCliTest.class
                        .getClassLoader()
                        .getResource("org/rollout/benchmarks/e2e/EndToEndBenchmarks.class"))
                .as("the benchmarks on the CLI's test class path")
                .isNull();
    }

    @Test
    void aBadConfigurationValueExitsWithTwoNamingTheKeyTheValueAndWhatIsAllowed() {
        Run r = run("local", "--steps", "1", "gconfig.top_p=1.5");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("gconfig.top_p", "1.5", "(0, 1]");
    }

    @Test
    void anUnknownKeyExitsWithTwoAndSuggestsTheKnownOne() {
        Run r = run("local", "--steps", "1", "rollout.consumer_batchsize=4");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("rollout.consumer_batchsize", "rollout.consumer_batch_size");
    }

    @Test
    void aNodesDiscoveryMethodAndManagementPortAreCheckedBeforeAnythingStarts() {
        Run unknown = run("node", "--discovery", "zookeeper");
        assertThat(unknown.exit()).isEqualTo(2);
        assertThat(unknown.err()).contains("--discovery", "zookeeper", "config", "dns", "kubernetes-api");
        Run both = run("node", "--discovery", "config", "--seed-nodes", "127.0.0.1:25520");
        assertThat(both.exit()).isEqualTo(2);
        assertThat(both.err()).contains("--seed-nodes and --discovery exclude each other");
        Run port = run("node", "--management-port", "70000");
        assertThat(port.exit()).isEqualTo(2);
        assertThat(port.err()).contains("--management-port", "70000", "0 to 65535");
    }

    @Test
    void aNodesGatewayPullLimitAndWriteTimeoutAreCheckedBeforeAnythingStarts() {
        Run pulls = run("node", "--gateway-max-waiting-pulls", "0");
        assertThat(pulls.exit()).isEqualTo(2);
        assertThat(pulls.err()).contains("--gateway-max-waiting-pulls", "gateway.max_waiting_pulls", ">= 1");
        Run timeout = run("node", "--gateway-write-timeout", "0");
        assertThat(timeout.exit()).isEqualTo(2);
        assertThat(timeout.err()).contains("--gateway-write-timeout", "gateway.write_timeout", "> 0");
    }

    @Test
    void versionIsTheProjectVersion() throws Exception {
        Run r = run("--version");
        assertThat(r.exit()).isZero();
        assertThat(r.out().strip()).isEqualTo("rollout " + RolloutCli.version());
        assertThat(RolloutCli.version()).matches("\\d+\\.\\d+\\.\\d+.*");
    }

    @Test
    void anUnknownWorkflowModeIsRefusedWithTheAllowedValues() {
        Run r = run("local", "--workflow", "nope");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("--workflow", "demo or agent");
    }

    @Test
    void withNoWorkflowConfiguredTheFirstLineSaysTheDemoRuns() {
        // The accept class is missing, so the run is refused before any server starts.
        Run r = runLocal("local", "--steps", "1", "rollout.accept=com.example.NoSuchFilter");
        assertThat(r.out().lines().findFirst()).contains(LocalCommand.NO_WORKFLOW);
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("'rollout.accept'", "com.example.NoSuchFilter");
        assertThat(r.out()).doesNotContain("model servers:");
    }

    @Test
    void aConfiguredWorkflowWithoutDatasetEvaluationSetOrTokenizerIsRefusedNamingEachKey() {
        Run r = runLocal("local", "--steps", "1", "rollout.workflow=rlvr", "rollout.eval_every=5");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err())
                .contains("'rollout.dataset.train'", "'rollout.dataset.eval'", "'rollout.tokenizer_path'", "--demo");
        assertThat(r.out()).doesNotContain(LocalCommand.NO_WORKFLOW).doesNotContain("model servers:");
    }

    /** A configured rlvr run of the template's dataset, refused before anything starts when a key is wrong. */
    private static final String[] CONFIGURED_RLVR = {
        "local",
        "--steps",
        "1",
        "rollout.workflow=rlvr",
        "rollout.tokenizer_path=builtin",
        "rollout.dataset.train=../../examples/user-workflow/data/train.jsonl",
        "rollout.workflow_kwargs.reward_fn=org.rollout.workflows.demo.LetterReward"
    };

    @Test
    void theBuiltInWorkflowsKwargsAreCheckedBeforeAnythingStarts() {
        Run r = runLocal(concat(CONFIGURED_RLVR, "rollout.workflow_kwargs.reward_fn=com.example.NoSuchReward"));
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("'rollout.workflow_kwargs.reward_fn'", "com.example.NoSuchReward", "not found");
        assertThat(r.out()).doesNotContain("model servers:");
    }

    @Test
    void theEvaluationWorkflowAndItsKwargsAreCheckedBeforeAnythingStartsNamingTheirOwnKeys() {
        String[] base = CONFIGURED_RLVR;
        Run missing = runLocal(concat(base, "rollout.eval_workflow=com.example.NoSuchWorkflow"));
        assertThat(missing.exit()).isEqualTo(2);
        assertThat(missing.err()).contains("'rollout.eval_workflow'", "com.example.NoSuchWorkflow");
        assertThat(missing.out()).doesNotContain("model servers:");

        Run badKwarg = runLocal(concat(base, "rollout.eval_workflow_kwargs.reward_fn=com.example.NoSuchReward"));
        assertThat(badKwarg.exit()).isEqualTo(2);
        assertThat(badKwarg.err())
                .contains("'rollout.eval_workflow_kwargs.reward_fn'", "com.example.NoSuchReward", "not found");
        assertThat(badKwarg.out()).doesNotContain("model servers:");

        Run notAName = runLocal(concat(base, "rollout.eval_workflow=\"not a name\""));
        assertThat(notAName.exit()).isEqualTo(2);
        assertThat(notAName.err()).contains("'rollout.eval_workflow'", "null for rollout.workflow");
    }

    @Test
    void evaluationKwargsForAnAgentThatTakesNoneAreRefusedNamingTheKey() {
        Run r = runLocal("local", "--steps", "1", "--workflow", "agent", "rollout.eval_workflow_kwargs.max_turns=3");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("'rollout.eval_workflow_kwargs'", "demo agent, which takes no kwargs");
        assertThat(r.out()).doesNotContain("model servers:");
    }

    private static String[] concat(String[] base, String... more) {
        String[] all = java.util.Arrays.copyOf(base, base.length + more.length);
        System.arraycopy(more, 0, all, base.length, more.length);
        return all;
    }

    @Test
    void aNodeWithAConfiguredWorkflowAndNoDatasetIsRefusedBeforeReachingAServer() {
        Run r = runLocal(
                "node", "rollout.workflow=rlvr", "rollout.tokenizer_path=builtin", "rollout.servers=127.0.0.1:9");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("'rollout.dataset.train'");
    }

    @Test
    void aNodeLaunchesItsServersAndFailsNamingOneThatNeverBecameHealthy(@TempDir Path dir) throws Exception {
        Run r = runLocal(
                "node",
                "--demo",
                "rollout.launch.servers=1",
                "rollout.launch.command=[\"sh\", \"-c\", \"echo booting on port {port}; exit 7\"]",
                "rollout.launch.max_restarts=0",
                "rollout.launch.health_timeout=2",
                "rollout.launch.log_dir=\"" + dir + "\"");
        assertThat(r.exit()).isEqualTo(1);
        assertThat(r.out()).contains("launching 1 inference server(s) at [127.0.0.1:", "logs in " + dir);
        assertThat(r.err())
                .contains(
                        "launched inference servers not healthy after 2.0 s (rollout.launch.health_timeout): server 0 at"
                                + " 127.0.0.1:")
                .contains("(not running, log " + dir.resolve("server-0.log") + "): booting on port ");
        assertThat(Files.readString(dir.resolve("server-0.log"))).startsWith("booting on port ");
    }
}
