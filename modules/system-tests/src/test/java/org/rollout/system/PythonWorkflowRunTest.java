package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The AReaL-style Python workflows of {@code examples/python-workflows} (rlvr.py and multi_turn.py,
 * imports pointing at rollout_client.areal) run from their configuration files through {@code
 * rollout local} as a user runs them, in worker pools of real Python processes, and learn the
 * letters task: the mean reward of the last five steps is at least 0.5 and twice the first five's.
 * Every dumped reward is the Python reward of the dumped completion, and the per-token versions are
 * those the engine recorded, including generations that weight updates interrupted ({@code
 * --simulate-gpu}).
 */
class PythonWorkflowRunTest {
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(420);
    private static final Pattern MEAN_REWARD =
            Pattern.compile("mean reward: first 5 steps (\\d+\\.\\d+), last 5 steps (\\d+\\.\\d+)");
    private static final Pattern LETTER = Pattern.compile("Reply with the letter ([a-z])");
    private static final ObjectMapper JSON = new ObjectMapper();

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    private String learn(String name, String conf, int steps, String... more) throws Exception {
        return learn(name, conf, steps, null, more);
    }

    /**
     * Runs {@code conf} for {@code steps} and checks that the reward climbed; {@code whileRunning}
     * (when given) gets the run's /metrics address as soon as the banner prints it.
     */
    private String learn(String name, String conf, int steps, MetricsCheck whileRunning, String... more)
            throws Exception {
        Path fileroot = run.dir().resolve(name);
        List<String> args = new java.util.ArrayList<>(List.of(
                "local",
                "--config",
                CliProcess.REPO_ROOT.resolve(conf).toString(),
                "--steps",
                Integer.toString(steps),
                "--no-status",
                "rollout.python.executable=/usr/bin/python3",
                "rollout.fileroot=" + fileroot));
        args.addAll(List.of(more));
        ManagedProcess local = CliProcess.start(run, name, args.toArray(String[]::new));
        if (whileRunning != null) {
            Matcher metrics = local.awaitLine(Pattern.compile("metrics: (http://\\S+/metrics)"), RUN_TIMEOUT);
            whileRunning.check(java.net.URI.create(metrics.group(1)));
        }
        int status = local.awaitExit(RUN_TIMEOUT);
        String out = String.join("\n", local.lines());
        assertThat(status).as("exit status; output:\n" + out).isZero();
        Matcher m = MEAN_REWARD.matcher(out);
        assertThat(m.find()).as("the summary's mean rewards in:\n" + out).isTrue();
        double first = Double.parseDouble(m.group(1));
        double last = Double.parseDouble(m.group(2));
        TestCluster.log(name + ": mean reward first 5 steps " + first + ", last 5 steps " + last);
        assertThat(last).as("mean reward of the last five steps").isGreaterThanOrEqualTo(0.5);
        assertThat(last).as("last five against first five (%s)", first).isGreaterThanOrEqualTo(2 * first);
        assertThat(out).doesNotContain("died");
        return out;
    }

    /** What a test checks on a run's /metrics while it runs. */
    @FunctionalInterface
    interface MetricsCheck {
        void check(java.net.URI metrics) throws Exception;
    }

    /** Scrapes {@code metrics} until a line matches {@code line}, within {@code within}; returns that line. */
    static String awaitMetric(java.net.URI metrics, Pattern line, Duration within) throws Exception {
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        long deadline = System.nanoTime() + within.toNanos();
        while (true) {
            String body = http.send(
                            java.net.http.HttpRequest.newBuilder(metrics)
                                    .timeout(Duration.ofSeconds(10))
                                    .build(),
                            java.net.http.HttpResponse.BodyHandlers.ofString())
                    .body();
            Matcher m = line.matcher(body);
            if (m.find()) {
                return m.group();
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no line matching " + line + " on " + metrics + " within " + within);
            }
            Thread.sleep(500);
        }
    }

    /** The letters reward, as examples/python-workflows/letters.py computes it from the dumped completion. */
    static double lettersReward(String completion, char target) {
        String text = completion.replaceAll("<\\|[^|<>]*\\|>", "");
        int n = 0;
        int lower = 0;
        int hits = 0;
        for (int i = 0; i < text.length() && n < 8; ) {
            int cp = text.codePointAt(i);
            i += Character.charCount(cp);
            n++;
            lower += cp >= 'a' && cp <= 'z' ? 1 : 0;
            hits += cp == target ? 1 : 0;
        }
        return n == 0 ? 0.0 : (0.6 * lower + 0.4 * hits) / n;
    }

    @Test
    void theRlvrExampleLearnsWithGenerationsInterruptedByWeightUpdates() throws Exception {
        String out = learn("python-rlvr", "examples/python-workflows/letters.conf", 25, "--simulate-gpu");
        assertThat(out).contains("local run of the python:rlvr:RLVRWorkflow workflow with reward_fn letters.reward");
        Path runDir = CliProcess.onlyRunDir(run.dir().resolve("python-rlvr/python-letters"));
        int rows = 0;
        int interrupted = 0;
        for (JsonNode row : CliProcess.dumpRows(runDir.resolve("rollout"))) {
            Matcher q = LETTER.matcher(row.get("prompt").asText());
            assertThat(q.find()).as("a letters prompt in " + row).isTrue();
            assertThat(row.get("reward").asDouble())
                    .as("reward of " + row)
                    .isCloseTo(
                            lettersReward(
                                    row.get("completion").asText(), q.group(1).charAt(0)),
                            org.assertj.core.data.Offset.offset(1e-6));
            // Every generated token has the version it was generated with: non-decreasing runs that
            // cover the completion, between 0 and the last version.
            int covered = 0;
            int previous = -1;
            for (JsonNode span : row.get("version_rle")) {
                int version = span.get(0).asInt();
                assertThat(version).as("versions of " + row).isBetween(Math.max(previous, 0), 25);
                previous = version;
                covered += span.get(1).asInt();
            }
            assertThat(covered)
                    .as("tokens with a version in " + row)
                    .isEqualTo(row.get("seqlen").asInt() - row.get("prompt_len").asInt());
            interrupted += row.get("version_rle").size() > 1 ? 1 : 0;
            rows++;
        }
        assertThat(rows).isGreaterThanOrEqualTo(25 * 26 * 8);
        assertThat(interrupted)
                .as("completions generated across a weight update")
                .isPositive();
        TestCluster.log("python-rlvr: " + interrupted + " of " + rows + " completions span a weight update");
    }

    @Test
    void aPythonAgentLearnsBehindTheProxyInThePool() throws Exception {
        String out = learn("python-agent", "examples/python-workflows/letters-agent.conf", 25);
        assertThat(out).contains("local run of the python:letters_agent:LettersAgent workflow");
        Path runDir = CliProcess.onlyRunDir(run.dir().resolve("python-agent/python-letters-agent"));
        int rows = 0;
        int exact = 0;
        for (JsonNode row : CliProcess.dumpRows(runDir.resolve("rollout"))) {
            Matcher q = LETTER.matcher(row.get("prompt").asText());
            assertThat(q.find()).as("a letters prompt in " + row).isTrue();
            // The proxy recorded the completion; the agent's reward is the letters reward of the reply's
            // content, which is the completion's text where it holds no markup (reasoning, a tool call
            // or a special token, which the proxy takes out) and no bytes that are not UTF-8 (decoded
            // piecewise around such tokens).
            String completion = row.get("completion").asText();
            if (!completion.contains("<") && !completion.contains("\uFFFD")) {
                exact++;
                assertThat(row.get("reward").asDouble())
                        .as("reward of " + row)
                        .isCloseTo(
                                lettersReward(completion, q.group(1).charAt(0)),
                                org.assertj.core.data.Offset.offset(1e-6));
            }
            rows++;
        }
        assertThat(rows).isGreaterThanOrEqualTo(25 * 26 * 8);
        assertThat(exact).as("rows whose reward was checked against their text").isGreaterThan(rows / 4);
    }

    @Test
    void theMultiTurnExampleLearnsAndItsStatisticsReachTheRunsStats() throws Exception {
        String[] scraped = new String[1];
        learn(
                "python-multi-turn",
                "examples/python-workflows/letters-multi-turn.conf",
                25,
                metrics -> scraped[0] = awaitMetric(
                        metrics,
                        Pattern.compile(
                                "rollout_workflow_stat\\{(?=[^}]*key=\"num_turns\")(?=[^}]*scope=\"rollout\")[^}]*} ([0-9.]+)"),
                        Duration.ofSeconds(60)));
        TestCluster.log("python-multi-turn: " + scraped[0]);
        Path runDir = CliProcess.onlyRunDir(run.dir().resolve("python-multi-turn/python-letters-multi-turn"));
        // num_turns is recorded by the Python workflow's stats_tracker only.
        int withTurns = 0;
        for (String line : Files.readAllLines(runDir.resolve("stats.jsonl"))) {
            JsonNode s = JSON.readTree(line);
            if (s.path("scope").asText().equals("rollout") && s.has("num_turns")) {
                assertThat(s.get("num_turns").asDouble()).isBetween(1.0, 2.0);
                withTurns++;
            }
        }
        assertThat(withTurns).as("rollout lines of stats.jsonl with num_turns").isGreaterThanOrEqualTo(10);
    }
}
