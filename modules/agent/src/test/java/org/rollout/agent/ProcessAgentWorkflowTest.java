package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.Interaction;
import org.rollout.api.WorkflowContext;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.testengine.ScriptedEngine;

/** Agents as processes: a single-file Java program that calls the proxy, and bash scripts that fail. */
class ProcessAgentWorkflowTest {
    private static final String JAVA =
            Path.of(System.getProperty("java.home"), "bin", "java").toString();

    /** Reads its data item, asks the proxy once with plain HttpClient, prints a log line and the reward. */
    private static final String JAVA_AGENT = """
            import java.net.URI;
            import java.net.http.*;
            public class Agent {
                public static void main(String[] args) throws Exception {
                    String data = new String(System.in.readAllBytes()).strip();
                    String content = data.replace("\\\\", "\\\\\\\\").replace("\\"", "\\\\\\"");
                    String body = "{\\"model\\": \\"m\\", \\"messages\\": [{\\"role\\": \\"user\\", \\"content\\": \\""
                            + content + "\\"}]}";
                    HttpRequest req = HttpRequest.newBuilder(URI.create(System.getenv("OPENAI_BASE_URL") + "/chat/completions"))
                            .header("Authorization", "Bearer " + System.getenv("OPENAI_API_KEY"))
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString(body)).build();
                    HttpResponse<String> r = HttpClient.newHttpClient().send(req, HttpResponse.BodyHandlers.ofString());
                    System.err.println("task " + System.getenv("ROLLOUT_TASK_ID") + " slot " + System.getenv("ROLLOUT_SAMPLE_IDX"));
                    if (r.statusCode() != 200) {
                        System.err.println("proxy said " + r.statusCode() + ": " + r.body());
                        System.exit(2);
                    }
                    System.out.println("log: the model answered");
                    System.out.println(0.75);
                }
            }
            """;

    @TempDir
    Path dir;

    private OpenAIProxy proxy;
    private ScriptedEngine engine;

    @BeforeEach
    void start() throws Exception {
        engine = ScriptedEngine.replying("the answer");
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults(),
                engine,
                ByteLevelTokenizer.INSTANCE,
                GenerationConfig.builder().maxNewTokens(32).build());
    }

    @AfterEach
    void stop() {
        proxy.close();
    }

    private ProcessAgentWorkflow script(String body, Duration timeout) throws Exception {
        Path file = dir.resolve("agent.sh");
        Files.writeString(file, body);
        return new ProcessAgentWorkflow(proxy, AgentOptions.defaults(), List.of("bash", file.toString()), dir, timeout);
    }

    private static EpisodeResult run(ProcessAgentWorkflow w, Map<String, Object> data) throws Exception {
        WorkflowContext ctx =
                WorkflowContext.builder().taskId(21).sampleIdx(1).groupSize(2).build();
        return WorkflowContext.callWith(ctx, () -> w.runEpisode(null, data));
    }

    @Test
    void aJavaProgramTalksToItsSessionAndItsLastStdoutLineIsTheReward() throws Exception {
        Files.writeString(dir.resolve("Agent.java"), JAVA_AGENT);
        ProcessAgentWorkflow w = new ProcessAgentWorkflow(
                proxy, AgentOptions.defaults(), List.of(JAVA, "Agent.java"), dir, Duration.ofSeconds(90));
        EpisodeResult r = run(w, Map.of("question", "2+2?"));

        Interaction it =
                ((EpisodeResult.Interactions) r).byId().values().iterator().next();
        assertThat(it.reward()).isEqualTo(0.75);
        assertThat(it.messages().getFirst().get("content")).isEqualTo("{\"question\":\"2+2?\"}");
        assertThat(it.outputMessages().getFirst().get("content")).isEqualTo("the answer");
        assertThat(proxy.openSessions()).isZero();
    }

    @Test
    void aTimeoutKillsTheProcessTreeAndRejectsWithTheStderrTail() throws Exception {
        Path pids = dir.resolve("pids");
        ProcessAgentWorkflow w = script(
                "echo started >&2\nsleep 60 &\necho $! > " + pids + "\necho $$ >> " + pids + "\nwait\n",
                Duration.ofSeconds(2));
        EpisodeResult r = run(w, Map.of());
        assertThat(r).isEqualTo(EpisodeResult.rejected("agent process timed out after 2 s; stderr: started\n"));
        for (String pid : Files.readAllLines(pids)) {
            BuiltInModel.await(
                    "process " + pid + " to be gone",
                    Duration.ofSeconds(20),
                    () -> ProcessHandle.of(Long.parseLong(pid.strip()))
                            .map(h -> !h.isAlive())
                            .orElse(true));
        }
    }

    @Test
    void aNonZeroExitRejectsWithTheExitCodeAndTheStderrTail() throws Exception {
        ProcessAgentWorkflow w = script("echo 'boom: no such tool' >&2\nexit 3\n", Duration.ofSeconds(30));
        assertThat(run(w, Map.of()))
                .isEqualTo(EpisodeResult.rejected("agent process exited with 3; stderr: boom: no such tool\n"));
    }

    @Test
    void onlyTheLast2KiBOfStderrAreQuoted() throws Exception {
        ProcessAgentWorkflow w =
                script("head -c 5000 /dev/zero | tr '\\0' 'x' >&2\necho -n END >&2\nexit 1\n", Duration.ofSeconds(30));
        String reason = ((EpisodeResult.Rejected) run(w, Map.of())).reason();
        String tail = reason.substring(reason.indexOf("stderr: ") + "stderr: ".length());
        assertThat(tail).startsWith("…").endsWith("xxxEND");
        assertThat(tail.length()).isEqualTo(1 + ProcessAgentWorkflow.STDERR_TAIL_BYTES);
    }

    @Test
    void aLastLineThatIsNotARewardRejectsQuotingIt() throws Exception {
        ProcessAgentWorkflow w = script("cat > /dev/null\necho 0.5\necho done\n", Duration.ofSeconds(30));
        assertThat(run(w, Map.of()))
                .isEqualTo(EpisodeResult.rejected("agent process's last stdout line is not a reward (a number or"
                        + " {\"completion_id\": number}): 'done'"));
    }

    @Test
    void noStdoutRejectsSayingWhatWasExpected() throws Exception {
        ProcessAgentWorkflow w = script("echo quiet >&2\n", Duration.ofSeconds(30));
        assertThat(((EpisodeResult.Rejected) run(w, Map.of())).reason())
                .isEqualTo("agent process printed no reward on stdout (expected a number or {\"completion_id\": number}"
                        + " on the last line); stderr: quiet\n");
    }

    @Test
    void aRewardLineMayMapCompletionIdsToNumbers() throws Exception {
        assertThat(ProcessAgentWorkflow.reward("x\n{\"chatcmpl-1\": 1, \"chatcmpl-2\": 0.5}\n\n", ""))
                .isEqualTo(Map.of("chatcmpl-1", 1.0, "chatcmpl-2", 0.5));
        assertThatThrownBy(() -> ProcessAgentWorkflow.reward("{\"chatcmpl-1\": \"high\"}", ""))
                .isInstanceOf(EpisodeRejectedException.class)
                .hasMessageEndingWith("'{\"chatcmpl-1\": \"high\"}'");
    }

    @Test
    void theEnvironmentCarriesTheSessionAndTheEpisode() throws Exception {
        Path env = dir.resolve("env");
        ProcessAgentWorkflow w = script(
                "echo \"$OPENAI_BASE_URL $ROLLOUT_TASK_ID $ROLLOUT_SAMPLE_IDX ${#OPENAI_API_KEY}\" > " + env
                        + "\ncat > " + dir.resolve("stdin") + "\necho 1\n",
                Duration.ofSeconds(30));
        assertThat(run(w, Map.of("k", "v"))).isEqualTo(EpisodeResult.rejected("no completions"));
        assertThat(Files.readString(env).strip()).isEqualTo(proxy.baseUrl() + "/s/21:1/v1 21 1 43");
        assertThat(Files.readString(dir.resolve("stdin")).strip()).isEqualTo("{\"k\":\"v\"}");
    }

    @Test
    void aProgramThatCannotStartIsRejectedNamingIt() throws Exception {
        ProcessAgentWorkflow w = new ProcessAgentWorkflow(
                proxy, AgentOptions.defaults(), List.of(dir.resolve("missing").toString()), dir, Duration.ofSeconds(5));
        assertThat(((EpisodeResult.Rejected) run(w, Map.of())).reason())
                .startsWith("agent process [" + dir.resolve("missing") + "] could not start: ");
    }
}
