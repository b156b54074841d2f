package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Online mode as a user runs it, every part a real process: {@code rollout local} configured for
 * online sessions with a plain-Python client answering them, and {@code rollout proxy} on its own
 * over a {@code rollout model-server}, driven over HTTP by the test as an external client.
 */
@Timeout(300)
class OnlineAgentTest {
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(180);
    private static final Pattern QUESTION = Pattern.compile("What is (\\d) ([-+*]) (\\d)\\?");
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String ADMIN_KEY = "areal-admin-key";

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Test
    void anOnlineRunFromConfigurationTrainsOnSessionsThatAClientAnswers() throws Exception {
        Path fileroot = run.dir().resolve("runs-online");
        int proxyPort = CliProcess.freePort();
        ManagedProcess local = CliProcess.start(
                run,
                "local-online",
                "local",
                "--config",
                CliProcess.REPO_ROOT.resolve("examples/agents/online.conf").toString(),
                "--steps",
                "2",
                "--no-status",
                "rollout.agent.proxy_port=" + proxyPort,
                "rollout.fileroot=" + fileroot);
        String claimUrl = "http://127.0.0.1:" + proxyPort + "/online/claim";
        local.awaitLine(
                Pattern.compile("online sessions: clients claim them with POST " + Pattern.quote(claimUrl)),
                RUN_TIMEOUT);
        ManagedProcess client = ManagedProcess.start(
                "online-client",
                List.of(
                        "/usr/bin/python3",
                        "examples/agents/online_client.py",
                        "--proxy",
                        "http://127.0.0.1:" + proxyPort,
                        "--idle",
                        "5"),
                Map.of(),
                CliProcess.REPO_ROOT,
                run.dir().resolve("online-client.log"));
        run.register(client);

        int status = local.awaitExit(RUN_TIMEOUT);
        String out = String.join("\n", local.lines());
        assertThat(status).as("exit status; output:\n" + out).isZero();
        assertThat(out).contains("local run of the agent workflow").contains("Done in");
        assertThat(client.awaitExit(Duration.ofSeconds(60)))
                .as("client exit; output:\n" + String.join("\n", client.lines()))
                .isZero();
        // Sessions still open when the run took its last batch are closed by it (the client counts
        // them apart); every other session is answered without an error.
        Matcher answered = client.awaitLine(
                Pattern.compile("answered (\\d+) session\\(s\\), \\d+ closed by the run before their reward, 0 failed"),
                Duration.ofSeconds(5));
        // 2 steps of 4 questions with 2 sessions each.
        assertThat(Integer.parseInt(answered.group(1))).isGreaterThanOrEqualTo(2 * 4 * 2);

        List<JsonNode> rows = CliProcess.dumpRows(
                CliProcess.onlyRunDir(fileroot.resolve("online-agent")).resolve("rollout"));
        assertThat(rows).hasSizeGreaterThanOrEqualTo(2 * 4 * 2);
        for (JsonNode row : rows) {
            assertThat(QUESTION.matcher(row.get("prompt").asText()).find())
                    .as("the session's question (its data item), rendered by the chat template, in " + row)
                    .isTrue();
            assertThat(row.get("reward").asDouble())
                    .as("the client's reward in " + row)
                    .isIn(0.0, 1.0);
        }
    }

    @Test
    void theStandaloneProxyWritesTheRowsOfEachRewardedSession() throws Exception {
        int serverPort = modelServer();
        int proxyPort = CliProcess.freePort();
        Path fileroot = run.dir().resolve("runs-proxy");
        ManagedProcess proxy = CliProcess.start(
                run,
                "proxy",
                "proxy",
                "--servers",
                "127.0.0.1:" + serverPort,
                "--sessions",
                "2",
                "--episodes",
                "3",
                "rollout.agent.proxy_port=" + proxyPort,
                "rollout.tokenizer_path=builtin",
                "rollout.dataset.train=[\"examples/user-workflow/data/train.jsonl\"]",
                "rollout.fileroot=" + fileroot);
        proxy.awaitLine(Pattern.compile("^proxy listening on http://127\\.0\\.0\\.1:" + proxyPort), RUN_TIMEOUT);
        String base = "http://127.0.0.1:" + proxyPort;

        // A claim without the admin key is refused and takes no session.
        assertThat(post(base + "/online/claim", "{\"timeout\": 1}", "wrong-key").statusCode())
                .isEqualTo(401);

        Set<String> questions = new HashSet<>();
        List<Integer> completionTokens = new ArrayList<>();
        Object[] rewards = {"1.0", "0.0", null};
        for (Object reward : rewards) {
            HttpResponse<String> claim = post(base + "/online/claim", "{\"timeout\": 30}", ADMIN_KEY);
            assertThat(claim.statusCode()).as(claim.body()).isEqualTo(200);
            JsonNode session = JSON.readTree(claim.body());
            String question = session.path("data").path("question").asText();
            assertThat(QUESTION.matcher(question).find())
                    .as("the session carries a dataset item: " + session)
                    .isTrue();
            questions.add(question);
            String sessionBase = session.get("base_url").asText();
            String key = session.get("api_key").asText();
            HttpResponse<String> chat = post(
                    sessionBase + "/chat/completions",
                    JSON.writeValueAsString(Map.of(
                            "model", "rollout", "messages", List.of(Map.of("role", "user", "content", question)))),
                    key);
            assertThat(chat.statusCode()).as(chat.body()).isEqualTo(200);
            JsonNode completion = JSON.readTree(chat.body());
            completionTokens.add(completion.at("/usage/completion_tokens").asInt());
            // A malformed reward is refused and the session stays open for a good one.
            assertThat(post(sessionBase + "/reward", "{\"reward\": \"high\"}", key)
                            .statusCode())
                    .isEqualTo(400);
            String body = reward != null
                    ? "{\"reward\": " + reward + "}"
                    : "{\"reward\": {\"" + completion.get("id").asText() + "\": 0.25}}";
            HttpResponse<String> rewarded = post(sessionBase + "/reward", body, key);
            assertThat(rewarded.statusCode()).as(rewarded.body()).isEqualTo(200);
        }

        int status = proxy.awaitExit(RUN_TIMEOUT);
        String out = String.join("\n", proxy.lines());
        assertThat(status).as("exit status; output:\n" + out).isZero();
        assertThat(out).containsPattern("Done in [0-9.]+ s: 3 session\\(s\\) rewarded, 3 row\\(s\\) under ");

        List<JsonNode> rows = CliProcess.dumpRows(
                CliProcess.onlyRunDir(fileroot.resolve("proxy")).resolve("rollout"));
        assertThat(rows).hasSize(3);
        assertThat(rows.stream().map(r -> r.get("reward").asDouble())).containsExactlyInAnyOrder(1.0, 0.0, 0.25);
        for (JsonNode row : rows) {
            assertThat(questions.stream()
                            .anyMatch(q -> row.get("prompt").asText().contains(q)))
                    .as("a claimed session's question in " + row)
                    .isTrue();
        }
        // Each row holds the tokens the client was served (its text is a decoding of them).
        assertThat(rows.stream()
                        .map(r -> r.get("seqlen").asInt() - r.get("prompt_len").asInt()))
                .as("completion lengths of the rows against the completions' usage")
                .containsExactlyInAnyOrderElementsOf(completionTokens);
    }

    @Test
    void ctrlCClosesTheWaitingSessionsAndSummarises() throws Exception {
        int serverPort = modelServer();
        int proxyPort = CliProcess.freePort();
        ManagedProcess proxy = CliProcess.start(
                run,
                "proxy-ctrl-c",
                List.of("/usr/bin/env", "--default-signal=INT"),
                "proxy",
                "--servers",
                "127.0.0.1:" + serverPort,
                "rollout.agent.proxy_port=" + proxyPort,
                "rollout.tokenizer_path=builtin",
                "rollout.fileroot=" + run.dir().resolve("runs-ctrl-c"));
        proxy.awaitLine(Pattern.compile("^proxy listening on "), RUN_TIMEOUT);
        // A client holds a session when the signal comes.
        assertThat(post("http://127.0.0.1:" + proxyPort + "/online/claim", "{\"timeout\": 30}", ADMIN_KEY)
                        .statusCode())
                .isEqualTo(200);
        proxy.interrupt();
        int status = proxy.awaitExit(Duration.ofSeconds(60));
        String out = String.join("\n", proxy.lines());
        assertThat(status).as("exit status after SIGINT; output:\n" + out).isEqualTo(130);
        assertThat(out)
                .contains("Interrupted: closing the proxy.")
                .containsPattern("Done in [0-9.]+ s: 0 session\\(s\\) rewarded, 0 row\\(s\\)")
                .doesNotContain("Exception");
    }

    @Test
    void aProxyWithoutModelServersIsRefusedNamingTheKey() throws Exception {
        ManagedProcess proxy = CliProcess.start(
                run,
                "proxy-no-servers",
                "proxy",
                "rollout.fileroot=" + run.dir().resolve("runs-none"));
        int status = proxy.awaitExit(Duration.ofSeconds(60));
        String out = String.join("\n", proxy.lines());
        assertThat(status).as("exit status; output:\n" + out).isEqualTo(2);
        assertThat(out)
                .contains("configuration error")
                .contains("rollout.servers")
                .contains("--servers");
    }

    /** A built-in model server in its own JVM; its port once it listens. */
    private int modelServer() throws IOException, InterruptedException {
        int port = CliProcess.freePort();
        ManagedProcess server =
                CliProcess.start(run, "model-server", "model-server", "--port", Integer.toString(port), "--seed", "1");
        server.awaitLine(Pattern.compile("^model server listening on http://127\\.0\\.0\\.1:" + port), RUN_TIMEOUT);
        return port;
    }

    private HttpResponse<String> post(String url, String body, String bearer) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create(url))
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer " + bearer)
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
        return http.send(request, HttpResponse.BodyHandlers.ofString());
    }
}
