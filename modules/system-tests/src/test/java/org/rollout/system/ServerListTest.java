package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;

/**
 * Two node JVMs and two model servers under a training job; a third model server (in this JVM) is
 * added through node 1's gateway and used by node 2's engine, and a configured server drained
 * through node 2's gateway leaves node 1's pool, while the trainer's checks hold.
 */
@Timeout(300)
class ServerListTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    private static JsonNode send(String gateway, String method, String path, String body) throws Exception {
        HttpResponse<String> r = HTTP.send(
                HttpRequest.newBuilder(URI.create(gateway + path))
                        .timeout(Duration.ofSeconds(20))
                        .method(
                                method,
                                body == null
                                        ? HttpRequest.BodyPublishers.noBody()
                                        : HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        JsonNode json = JSON.readTree(r.body());
        assertThat(r.statusCode())
                .as("%s %s%s: %s", method, gateway, path, r.body())
                .isLessThan(300);
        return json;
    }

    private static Optional<JsonNode> listed(String gateway, String address) throws Exception {
        for (JsonNode s : send(gateway, "GET", "/v1/servers", null).path("servers")) {
            if (s.path("address").asText().equals(address)) {
                return Optional.of(s);
            }
        }
        return Optional.empty();
    }

    @Test
    void aServerAddedThroughOneNodeIsUsedByAnotherAndADrainedOneLeavesEveryNode() throws Exception {
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(2)
                        .withModelServers(2)
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false);
                ModelServer extra =
                        ModelServer.start(ModelServerConfig.defaults().withWeightsPath(c.weights()))) {
            String node1 = c.gatewayUrls().get(0);
            String node2 = c.gatewayUrls().get(1);
            String added = "127.0.0.1:" + extra.port();
            String drained = listed(node1, "127.0.0.1:" + c.serverPort(0))
                    .orElseThrow()
                    .path("address")
                    .asText();
            t.startMonitor(Duration.ofMillis(500));
            Waits.untilTrue("3 training steps before the server joins", Duration.ofSeconds(120), () -> {
                t.step(Duration.ofSeconds(2), true);
                return t.batchesAcknowledged() >= 3;
            });

            send(node1, "POST", "/v1/servers", "{\"address\":\"" + added + "\"}");
            JsonNode usedOnNode2 =
                    Waits.until("node 2's engine to send segments to " + added, Duration.ofSeconds(90), () -> {
                        t.step(Duration.ofMillis(500), true);
                        return listed(node2, added)
                                .filter(s -> s.path("requests").asLong() > 0);
                    });
            assertThat(usedOnNode2.path("state").asText()).isEqualTo("active");
            assertThat(extra.weightVersion())
                    .as("the added server serves the fleet's weights, not its launch weights")
                    .isPositive();

            send(node2, "DELETE", "/v1/servers/" + drained + "?hand_over_after=10", null);
            Waits.untilTrue("the drained server to leave node 1's pool", Duration.ofSeconds(60), () -> {
                t.step(Duration.ofMillis(500), true);
                return listed(node1, drained).isEmpty()
                        && listed(node2, drained).isEmpty();
            });
            int before = t.batchesAcknowledged();
            Waits.untilTrue("5 more steps without it", Duration.ofSeconds(120), () -> {
                t.step(Duration.ofSeconds(2), true);
                return t.batchesAcknowledged() >= before + 5;
            });
            t.drain(Duration.ofSeconds(90));

            RunReport report = RunReport.of(run.testName(), c, t, new Faults())
                    .with("server added through node 1, used by node 2", added)
                    .with("server drained through node 2", drained);
            report.printAndAssertClean();
        }
    }
}
