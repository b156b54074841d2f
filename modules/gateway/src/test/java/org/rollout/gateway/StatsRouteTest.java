package org.rollout.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.gateway.TestRollout.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.TrainingBatch;
import org.rollout.cluster.LocalRollout;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.GatewayRequestException;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.StatsPage;
import org.rollout.trainer.VersionStats;
import org.rollout.trainer.wire.GatewayJson;

/**
 * {@code GET /v1/stats} in front of a real engine (LocalRollout, scripted generations, an
 * evaluation pass every version) that writes {@code stats.jsonl}: what a trainer reads over HTTP is
 * that file's lines, number for number.
 */
class StatsRouteTest {
    private static final Duration DEADLINE = Duration.ofSeconds(60);
    private static final String TOKEN = "s3cret-stats";
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private static ClientConfig config(TrainerGateway g) {
        return ClientConfig.of(g.uri().toString())
                .withToken(TOKEN)
                .withPollWait(Duration.ofSeconds(2))
                .withRetry(Duration.ofMillis(50), Duration.ofMillis(200), Duration.ofSeconds(5));
    }

    /** The file's lines of versions ≥ {@code since}, in version order (stable), as JSON trees. */
    private static List<JsonNode> fileLines(Path file, int since) {
        List<JsonNode> out = new ArrayList<>();
        try {
            if (!Files.exists(file)) {
                return out;
            }
            for (String line : Files.readAllLines(file)) {
                JsonNode n = JSON.readTree(line);
                if (n.get("version").intValue() >= since) {
                    out.add(n);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        out.sort(Comparator.comparingInt(n -> n.get("version").intValue()));
        return out;
    }

    private static HttpResponse<String> get(HttpClient http, TrainerGateway g, String pathAndQuery, String token)
            throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(g.uri() + pathAndQuery))
                .timeout(Duration.ofSeconds(30))
                .GET();
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aTrainerReadsEachVersionsStatisticsAsStatsJsonlHasThem() throws Exception {
        TestRollout t = new TestRollout(5);
        t.statsFile = dir.resolve("stats.jsonl");
        t.evalItems = List.of(Map.of("prompt", "e0"), Map.of("prompt", "e1"));
        t.evalEvery = 1;
        try (LocalRollout rollout = t.start();
                TrainerGateway gateway =
                        TrainerGateway.start(GatewayConfig.defaults().withToken(TOKEN), rollout.client());
                RolloutClient remote = RolloutClient.connect(config(gateway));
                HttpClient http = HttpClient.newBuilder()
                        .version(HttpClient.Version.HTTP_1_1)
                        .build()) {
            for (int step = 0; step < 3; step++) {
                TrainingBatch batch = remote.nextBatch();
                remote.acknowledge(batch);
                remote.publishWeights(step + 1, Path.of("/weights/v" + (step + 1)));
            }
            // Versions 0, 1 and 2 are left behind: their training lines are written, and so are
            // the lines of the evaluation passes that started at them once those passes end.
            await("every line of versions 0..2", DEADLINE, () -> {
                try {
                    return remote.stats(0).completeBelow() >= 3;
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            });

            // The same lines as the file, read while the file did not change.
            long end = System.nanoTime() + DEADLINE.toNanos();
            List<JsonNode> before;
            JsonNode body;
            do {
                assertThat(System.nanoTime() - end)
                        .as("a moment the file holds still")
                        .isNegative();
                before = fileLines(t.statsFile, 0);
                HttpResponse<String> r = get(http, gateway, "/v1/stats?since_version=0", TOKEN);
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
                body = JSON.readTree(r.body());
                // Lines reach the file on the book's own thread: those served are in it after this.
                assertThat(rollout.stats().awaitWritten(DEADLINE)).isTrue();
            } while (!before.equals(fileLines(t.statsFile, 0)));
            List<JsonNode> served = new ArrayList<>();
            body.get("lines").forEach(served::add);
            assertThat(served).isEqualTo(before); // keys, order of versions and every number
            assertThat(body.get("complete_below").intValue()).isGreaterThanOrEqualTo(3);
            for (int v = 0; v < 3; v++) {
                int version = v;
                assertThat(served)
                        .as("version %d", v)
                        .filteredOn(n -> n.get("version").intValue() == version)
                        .extracting(n -> n.get("scope").textValue())
                        .contains(VersionStats.ROLLOUT);
            }
            // A pass still running when the next version comes skips that version's pass.
            assertThat(served).extracting(n -> n.get("scope").textValue()).contains(VersionStats.EVAL_ROLLOUT);
            JsonNode v0 = served.stream()
                    .filter(n -> n.get("version").intValue() == 0
                            && n.get("scope").textValue().equals("rollout"))
                    .findFirst()
                    .orElseThrow();
            assertThat(v0.get("accepted").longValue()).isGreaterThanOrEqualTo(t.consumerBatchSize);
            assertThat(v0.get("tokens").longValue()).isPositive();
            assertThat(v0.has("staleness_mean")).isTrue();

            // The Java client's typed records: the file's lines, parsed; from version 2 on only.
            StatsPage page = remote.stats(0);
            List<VersionStats> typed = new ArrayList<>();
            for (JsonNode n : fileLines(t.statsFile, 0)) {
                typed.add(GatewayJson.parseStatsLine(JSON.writeValueAsString(n)));
            }
            assertThat(page.lines()).startsWith(typed.subList(0, served.size()).toArray(VersionStats[]::new));
            assertThat(page.lines().stream().filter(l -> l.version() < 3).toList())
                    .isEqualTo(rollout.client().stats(0).lines().stream()
                            .filter(l -> l.version() < 3)
                            .toList());
            StatsPage from2 = remote.stats(2);
            assertThat(from2.lines())
                    .isNotEmpty()
                    .allSatisfy(l -> assertThat(l.version()).isGreaterThanOrEqualTo(2));
            assertThat(from2.lines())
                    .isEqualTo(
                            page.lines().stream().filter(l -> l.version() >= 2).toList());
            VersionStats typed0 = page.lines().get(0);
            assertThat(typed0.version()).isZero();
            assertThat(typed0.accepted()).isEqualTo(v0.get("accepted").longValue());
            assertThat(typed0.scalar("staleness_mean"))
                    .hasValue(v0.get("staleness_mean").doubleValue());
        }
    }

    @Test
    void badInputIsRefusedNamingTheParameterAndTheTokenIsRequired() throws Exception {
        TestRollout t = new TestRollout(5);
        try (LocalRollout rollout = t.start();
                TrainerGateway gateway =
                        TrainerGateway.start(GatewayConfig.defaults().withToken(TOKEN), rollout.client());
                RolloutClient remote = RolloutClient.connect(config(gateway));
                HttpClient http = HttpClient.newBuilder()
                        .version(HttpClient.Version.HTTP_1_1)
                        .build()) {
            assertThat(get(http, gateway, "/v1/stats", null).statusCode()).isEqualTo(401);
            assertThat(get(http, gateway, "/v1/stats", "wrong").statusCode()).isEqualTo(401);

            for (String bad : List.of("-1", "abc", "1.5", "")) {
                HttpResponse<String> r = get(http, gateway, "/v1/stats?since_version=" + bad, TOKEN);
                assertThat(r.statusCode()).as(bad).isEqualTo(400);
                assertThat(r.body())
                        .as(bad)
                        .isEqualTo(new String(GatewayJson.error(
                                "bad_request",
                                "query parameter 'since_version' must be an integer version >= 0, got '" + bad + "'")));
            }
            HttpResponse<String> misspelt = get(http, gateway, "/v1/stats?since=3", TOKEN);
            assertThat(misspelt.statusCode()).isEqualTo(400);
            assertThat(GatewayJson.parseError(misspelt.body().getBytes()).message())
                    .isEqualTo("unknown query parameter 'since' (GET /v1/stats takes since_version and rank)");
            HttpResponse<String> post = http.send(
                    HttpRequest.newBuilder(URI.create(gateway.uri() + "/v1/stats"))
                            .header("Authorization", "Bearer " + TOKEN)
                            .POST(HttpRequest.BodyPublishers.noBody())
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(post.statusCode()).isEqualTo(405);
            assertThat(post.headers().firstValue("Allow")).hasValue("GET");

            // Nothing is left behind yet: no lines, and nothing below version 0 to wait for.
            HttpResponse<String> none = get(http, gateway, "/v1/stats", TOKEN);
            assertThat(none.statusCode()).isEqualTo(200);
            assertThat(JSON.readTree(none.body())).isEqualTo(JSON.readTree("{\"lines\":[],\"complete_below\":0}"));

            assertThatThrownBy(() -> remote.stats(-1))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("sinceVersion must be >= 0, got -1");
            assertThat(remote.stats(5)).isEqualTo(new StatsPage(List.of(), 0));
            try (RolloutClient unauthorized =
                    RolloutClient.connect(ClientConfig.of(gateway.uri().toString()))) {
                assertThatThrownBy(() -> unauthorized.stats(0))
                        .isInstanceOfSatisfying(
                                GatewayRequestException.class,
                                e -> assertThat(e.status()).isEqualTo(401));
            }
        }
    }
}
