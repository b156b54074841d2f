package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code rollout local} as a user runs it, each run a real {@code java -jar rollout-cli.jar}
 * process: the user workflow template's jar (examples/user-workflow, built by the reactor) on
 * {@code --classpath}, mistakes in user code refused before anything starts, and Ctrl-C.
 */
@Timeout(420)
class LocalUserWorkflowTest {
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(180);
    private static final Duration REFUSAL_TIMEOUT = Duration.ofSeconds(60);
    private static final Pattern QUESTION = Pattern.compile("What is (\\d) ([-+*]) (\\d)\\?");
    private static final Pattern NUMBER = Pattern.compile("-?\\d+(\\.\\d+)?");
    /**
     * A number as examples/python/rewards/math_exact.py finds one: thousands commas, and a leading
     * point (".8" is 0.8, where the Java reward sees 8).
     */
    /** The reward's number pattern, with Python's {@code \d}: any Unicode decimal digit, not only 0-9. */
    private static final Pattern PYTHON_NUMBER =
            Pattern.compile("-?\\d[\\d,]*(?:\\.\\d+)?|-?\\.\\d+", Pattern.UNICODE_CHARACTER_CLASS);

    private static final ObjectMapper JSON = new ObjectMapper();

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    private final Path repoRoot = CliProcess.REPO_ROOT;
    private final Path userJar = Path.of(System.getProperty(
                    "rollout.user.workflow.jar", "../../examples/user-workflow/target/user-workflow.jar"))
            .toAbsolutePath()
            .normalize();
    private final Path conf = repoRoot.resolve("examples/user-workflow/rollout.conf");

    @Test
    void theTemplatesRewardRunsFromItsJar() throws Exception {
        assertThat(userJar).as("the template's jar (built by the reactor)").isRegularFile();
        Path fileroot = run.dir().resolve("runs");
        ManagedProcess local = start(
                "local-template",
                "local",
                "--config",
                conf.toString(),
                "--classpath",
                userJar.toString(),
                "--steps",
                "3",
                "--no-status",
                "rollout.fileroot=" + fileroot);
        int status = local.awaitExit(RUN_TIMEOUT);
        String out = String.join("\n", local.lines());
        assertThat(status).as("exit status; output:\n" + out).isZero();
        assertThat(out)
                .contains(
                        "local run of the rlvr workflow with reward_fn com.example.rollout.ExactAnswerReward, 3 steps")
                .contains("dataset: [examples/user-workflow/data/train.jsonl]")
                .contains("tokenizer: examples/user-workflow/tokenizer")
                .contains("Done in")
                .doesNotContain("letters")
                .doesNotContain("no workflow configured");

        // Every dumped reward is the template's: 1 exactly when the completion's last number is the answer.
        Path runDir = CliProcess.onlyRunDir(fileroot.resolve("user-workflow"));
        int rows = 0;
        int correct = 0;
        for (JsonNode row : CliProcess.dumpRows(runDir.resolve("rollout"))) {
            Matcher q = QUESTION.matcher(row.get("prompt").asText());
            assertThat(q.find()).as("a template question in " + row).isTrue();
            int a = Integer.parseInt(q.group(1));
            int b = Integer.parseInt(q.group(3));
            int answer = switch (q.group(2)) {
                case "+" -> a + b;
                case "-" -> a - b;
                default -> a * b;
            };
            String last = null;
            Matcher m = NUMBER.matcher(row.get("completion").asText());
            while (m.find()) {
                last = m.group();
            }
            double expected = Integer.toString(answer).equals(last) ? 1.0 : 0.0;
            assertThat(row.get("reward").asDouble()).as("reward of " + row).isEqualTo(expected);
            rows++;
            correct += (int) expected;
        }
        // 3 steps of 26 questions × 8 samples of a random model; about 2 % of samples end in the right digit.
        assertThat(rows).isGreaterThanOrEqualTo(3 * 26 * 8);
        assertThat(correct).as("samples rewarded 1 of " + rows).isPositive();
        // Three steps: the first step and the last two, either of them above 0.
        assertThat(out)
                .containsPattern(
                        "mean reward: first step (0\\.0*[1-9]\\d*, last 2 steps \\d|\\d\\.\\d+, last 2 steps 0\\.0*[1-9])");
    }

    @Test
    void theSameJobRunsWithItsRewardInPython() throws Exception {
        Path fileroot = run.dir().resolve("runs-python");
        ManagedProcess local = start(
                "local-python-reward",
                "local",
                "--config",
                repoRoot.resolve("examples/user-workflow/rollout-python.conf").toString(),
                "--steps",
                "2",
                "--no-status",
                "rollout.python.executable=/usr/bin/python3",
                "rollout.fileroot=" + fileroot);
        int status = local.awaitExit(RUN_TIMEOUT);
        String out = String.join("\n", local.lines());
        assertThat(status).as("exit status; output:\n" + out).isZero();
        assertThat(out)
                .contains("local run of the rlvr workflow with reward_fn python:math_exact:reward, 2 steps")
                .contains("Done in")
                .doesNotContain("letters");
        int rows = 0;
        for (JsonNode row : CliProcess.dumpRows(
                CliProcess.onlyRunDir(fileroot.resolve("user-workflow")).resolve("rollout"))) {
            Matcher q = QUESTION.matcher(row.get("prompt").asText());
            assertThat(q.find()).as("a template question in " + row).isTrue();
            double reward = row.get("reward").asDouble();
            assertThat(reward).as("reward of " + row).isIn(0.0, 1.0);
            // A completion whose last number, read as the Python reward reads numbers, is the
            // answer itself is scored 1.
            String last = null;
            Matcher m = PYTHON_NUMBER.matcher(row.get("completion").asText());
            while (m.find()) {
                last = m.group();
            }
            if (answer(q).equals(last)) {
                assertThat(reward).as("reward of " + row).isEqualTo(1.0);
            }
            rows++;
        }
        assertThat(rows).isGreaterThanOrEqualTo(2 * 26 * 8);
    }

    @Test
    void aPythonAgentScriptRunsFromConfiguration() throws Exception {
        Path fileroot = run.dir().resolve("runs-agent");
        ManagedProcess local = start(
                "local-http-agent",
                "local",
                "--config",
                repoRoot.resolve("examples/agents/rollout.conf").toString(),
                "--steps",
                "2",
                "--no-status",
                "rollout.agent.command=[\"/usr/bin/python3\", \"examples/agents/http_agent.py\"]",
                "rollout.fileroot=" + fileroot);
        int status = local.awaitExit(RUN_TIMEOUT);
        String out = String.join("\n", local.lines());
        assertThat(status).as("exit status; output:\n" + out).isZero();
        assertThat(out)
                .contains("local run of the agent workflow")
                .contains("Done in")
                .doesNotContain("letters")
                .doesNotContain("rejected {");
        int rows = 0;
        for (JsonNode row : CliProcess.dumpRows(
                CliProcess.onlyRunDir(fileroot.resolve("http-agent")).resolve("rollout"))) {
            assertThat(QUESTION.matcher(row.get("prompt").asText()).find())
                    .as("the agent's question, rendered by the chat template, in " + row)
                    .isTrue();
            assertThat(row.get("reward").asDouble())
                    .as("the agent's reward in " + row)
                    .isIn(0.0, 1.0);
            rows++;
        }
        // 2 steps of 8 questions, 4 episodes each, one completion per episode.
        assertThat(rows).isGreaterThanOrEqualTo(2 * 8 * 4);
    }

    private static String answer(Matcher q) {
        int a = Integer.parseInt(q.group(1));
        int b = Integer.parseInt(q.group(3));
        return Integer.toString(
                switch (q.group(2)) {
                    case "+" -> a + b;
                    case "-" -> a - b;
                    default -> a * b;
                });
    }

    @Test
    void mistakesInUserCodeAreRefusedBeforeAnythingStarts() throws Exception {
        List<Refusal> refusals = new ArrayList<>();
        refusals.add(new Refusal(
                "a jar that does not exist",
                List.of("--classpath", run.dir().resolve("nope.jar").toString()),
                "'--classpath'",
                "nope.jar",
                "does not exist"));
        refusals.add(new Refusal(
                "the reward class without its jar",
                List.of(),
                "'rollout.workflow_kwargs.reward_fn'",
                "com.example.rollout.ExactAnswerReward",
                "not found"));
        refusals.add(new Refusal(
                "a reward class that is not a RewardFunction",
                List.of("rollout.workflow_kwargs.reward_fn=java.lang.StringBuilder"),
                "'rollout.workflow_kwargs.reward_fn'",
                "java.lang.StringBuilder"));
        refusals.add(new Refusal(
                "a workflow class that is missing",
                List.of("--classpath", userJar.toString(), "rollout.workflow=com.example.rollout.NoSuchWorkflow"),
                "'rollout.workflow'",
                "com.example.rollout.NoSuchWorkflow"));
        refusals.add(new Refusal(
                "a workflow class of the wrong type",
                List.of("--classpath", userJar.toString(), "rollout.workflow=com.example.rollout.ExactAnswerReward"),
                "'rollout.workflow'",
                "implements neither RolloutWorkflow nor AgentWorkflow"));
        refusals.add(new Refusal(
                "a kwarg the workflow does not take",
                List.of("--classpath", userJar.toString(), "rollout.workflow_kwargs.max_turns=3"),
                "'rollout.workflow_kwargs.max_turns'"));
        refusals.add(new Refusal(
                "an agent workflow without an agent program",
                List.of("rollout.workflow=agent"),
                "'rollout.agent.command'",
                "rollout.agent.mode = \"online\""));
        refusals.add(new Refusal(
                "an agent program that is not executable",
                List.of("rollout.workflow=agent", "rollout.agent.command=[\"examples/agents/no-such-agent.py\"]"),
                "'rollout.agent.command'",
                "examples/agents/no-such-agent.py is not an executable file"));
        refusals.add(new Refusal(
                "a configured workflow without a dataset",
                List.of("--classpath", userJar.toString(), "rollout.dataset.train=[]"),
                "'rollout.dataset.train'"));
        refusals.add(new Refusal(
                "an evaluation interval without an evaluation set",
                List.of("--classpath", userJar.toString(), "rollout.dataset.eval=[]"),
                "'rollout.dataset.eval'",
                "rollout.eval_every = 5"));
        refusals.add(new Refusal(
                "a model without a tokenizer",
                List.of("--classpath", userJar.toString(), "rollout.tokenizer_path=\"\""),
                "'rollout.tokenizer_path'",
                "builtin"));
        // Each refusal is a JVM of its own, mostly start-up: two at a time (2 cores), checked in order.
        for (int i = 0; i < refusals.size(); i += 2) {
            List<Refusal> pair = refusals.subList(i, Math.min(i + 2, refusals.size()));
            List<ManagedProcess> started = new ArrayList<>();
            for (Refusal r : pair) {
                started.add(start(r));
            }
            for (int k = 0; k < pair.size(); k++) {
                refused(pair.get(k), started.get(k));
            }
        }
    }

    @Test
    void aNodeLoadsTheUsersClassesFromItsClassPathBeforeReachingAServer() throws Exception {
        // No server answers at port 1: a node whose classes resolve gets past its configuration and
        // fails on the servers (exit 1); without --classpath it is refused first, naming the key (exit 2).
        List<String> args = List.of(
                "node",
                "--config",
                conf.toString(),
                "--port",
                Integer.toString(CliProcess.freePort()),
                "--gateway-port",
                "0",
                "rollout.servers=127.0.0.1:1",
                "rollout.setup_timeout=1",
                "rollout.fileroot=" + run.dir().resolve("runs"));
        ManagedProcess without = start("node-without-classpath", args.toArray(String[]::new));
        assertThat(without.awaitExit(REFUSAL_TIMEOUT)).isEqualTo(2);
        assertThat(String.join("\n", without.lines()))
                .contains("configuration error", "'rollout.workflow_kwargs.reward_fn'", "ExactAnswerReward");

        List<String> withJar = new ArrayList<>(args);
        withJar.addAll(List.of("--classpath", userJar.toString()));
        ManagedProcess with = start("node-with-classpath", withJar.toArray(String[]::new));
        int status = with.awaitExit(REFUSAL_TIMEOUT);
        String out = String.join("\n", with.lines());
        assertThat(status).as("exit status; output:\n" + out).isEqualTo(1);
        assertThat(out).contains("the node failed").doesNotContain("configuration error");
    }

    @Test
    void ctrlCEndsTheRunWithASummaryAndNoTemporaryWeightFile() throws Exception {
        ctrlC("local-ctrl-c");
    }

    @Test
    void ctrlCStopsThePythonTrainerToo() throws Exception {
        ProcessHandle trainer = ctrlC("local-ctrl-c-python", "--trainer", "python");
        assertThat(trainer.isAlive())
                .as("the Python trainer after the run exited")
                .isFalse();
    }

    /**
     * A demo run of 200 steps interrupted after step 3: exit 130, the summary, no temporary weight
     * file, and statistics that count the dumped groups.
     *
     * @return the one process the run had started (the Python trainer), or the run itself
     */
    private ProcessHandle ctrlC(String name, String... extra) throws Exception {
        Path fileroot = run.dir().resolve("runs-" + name);
        List<String> args = new ArrayList<>(
                List.of("local", "--demo", "--steps", "200", "--no-status", "rollout.fileroot=" + fileroot));
        args.addAll(List.of(extra));
        // env resets SIGINT to its default: a JVM started with SIGINT ignored (a background job of a
        // non-interactive shell may run the build) keeps ignoring it, as a shell's child would.
        ManagedProcess local =
                start(name, List.of("/usr/bin/env", "--default-signal=INT"), args.toArray(String[]::new));
        local.awaitLine(Pattern.compile("^step +3/200"), RUN_TIMEOUT);
        ProcessHandle started = ProcessHandle.of(local.pid())
                .flatMap(h -> h.children().findFirst())
                .orElseGet(() -> ProcessHandle.of(local.pid()).orElseThrow());
        local.interrupt();
        int status = local.awaitExit(Duration.ofSeconds(60));
        String out = String.join("\n", local.lines());
        assertThat(status).as("exit status after SIGINT; output:\n" + out).isEqualTo(130);
        assertThat(out).containsPattern("\nInterrupted after \\d+ of 200 steps: stopping the engine\\.\n");
        assertThat(out).contains("Done in").doesNotContain("the run failed").doesNotContain("Exception");

        Path runDir = CliProcess.onlyRunDir(fileroot.resolve("demo"));
        try (Stream<Path> files = Files.list(runDir.resolve("weights"))) {
            assertThat(files.map(p -> p.getFileName().toString()).filter(n -> !n.matches("v\\d+\\.rlm")))
                    .as("files in weights/ other than v{n}.rlm")
                    .isEmpty();
        }
        // The statistics count every finished training group; each one has its dump file.
        long statsGroups = 0;
        for (String line : Files.readAllLines(runDir.resolve("stats.jsonl"))) {
            JsonNode n = JSON.readTree(line);
            if (n.path("scope").asText().equals("rollout")) {
                statsGroups += n.path("groups").asLong();
            }
        }
        long dumpFiles;
        try (Stream<Path> files = Files.walk(runDir.resolve("rollout"))) {
            dumpFiles = files.filter(p -> p.toString().endsWith(".jsonl")).count();
        }
        assertThat(statsGroups).as("groups in stats.jsonl vs dump files").isEqualTo(dumpFiles);
        return started;
    }

    /** A run that must be refused: what is wrong, the arguments that make it so, what the refusal names. */
    private record Refusal(String what, List<String> extra, String... expected) {}

    /** Starts the refused run: the template's configuration, two steps, and the refusal's arguments. */
    private ManagedProcess start(Refusal r) throws IOException {
        List<String> args = new ArrayList<>(List.of(
                "local",
                "--config",
                conf.toString(),
                "--steps",
                "2",
                "rollout.fileroot=" + run.dir().resolve("runs")));
        args.addAll(r.extra());
        return start("refused-" + r.what().replaceAll("\\W+", "-"), args.toArray(String[]::new));
    }

    /** Exit 2 with a configuration error naming what {@code r} expects, and nothing started. */
    private static void refused(Refusal r, ManagedProcess p) throws Exception {
        String what = r.what();
        int status = p.awaitExit(REFUSAL_TIMEOUT);
        String out = String.join("\n", p.lines());
        assertThat(status).as(what + ": exit status; output:\n" + out).isEqualTo(2);
        assertThat(out).as(what).contains("configuration error").contains(r.expected());
        assertThat(out).as(what + ": nothing started").doesNotContain("model servers:");
    }

    private ManagedProcess start(String name, String... args) throws IOException {
        return CliProcess.start(run, name, args);
    }

    private ManagedProcess start(String name, List<String> launcher, String... args) throws IOException {
        return CliProcess.start(run, name, launcher, args);
    }
}
