package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Three node JVMs that find each other by Cluster Bootstrap with config discovery (no seed nodes),
 * through their management endpoints on 127.0.0.1: they form one cluster, the singletons run and
 * groups flow to an HTTP trainer; {@code GET /ready} follows the model servers: not ready while
 * every server is down, ready again when one returns.
 */
@Timeout(480)
class ClusterBootstrapTest {
    private static final Duration FORM_TIMEOUT = Duration.ofSeconds(120);
    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(60);
    private static final int STEPS = 3;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    @Test
    void threeNodesBootstrapOneClusterAndReadinessFollowsTheModelServers() throws Exception {
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(3)
                        .withModelServers(2)
                        .withBootstrap()
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false)) {
            // One cluster: every node's management endpoint lists the same three Up members.
            for (int i = 1; i <= 3; i++) {
                URI members = c.managementUri(i).resolve("/cluster/members");
                List<String> up = Waits.until("three Up members seen by node-" + i, FORM_TIMEOUT, () -> {
                    List<String> u = upMembers(members);
                    return u.size() == 3 ? Optional.of(u) : Optional.empty();
                });
                assertThat(up).hasSize(3);
            }
            for (int i = 1; i <= 3; i++) {
                awaitReady(c, i, true);
                assertThat(get(c.managementUri(i).resolve("/alive")).statusCode())
                        .isEqualTo(200);
            }

            // The singletons run (somewhere) and groups flow to the trainer.
            assertThat(c.singletonNode(Duration.ofSeconds(60))).isBetween(1, 3);
            Waits.untilTrue(STEPS + " training steps", Duration.ofSeconds(180), () -> {
                t.step(Duration.ofSeconds(2), true);
                return t.batchesAcknowledged() >= STEPS;
            });

            // Every model server down: no node can run groups, none is ready; it stays alive.
            c.crashServer(0);
            c.crashServer(1);
            for (int i = 1; i <= 3; i++) {
                awaitReady(c, i, false);
                assertThat(get(c.managementUri(i).resolve("/alive")).statusCode())
                        .isEqualTo(200);
            }
            // One returns: every node is ready again.
            c.restartServer(0);
            for (int i = 1; i <= 3; i++) {
                awaitReady(c, i, true);
            }
            assertThat(upMembers(c.managementUri(1).resolve("/cluster/members")))
                    .hasSize(3);
        }
    }

    private static void awaitReady(TestCluster c, int node, boolean ready) throws InterruptedException {
        URI uri = c.managementUri(node).resolve("/ready");
        Waits.untilTrue(
                "node-" + node + (ready ? " ready" : " not ready") + " (GET " + uri + ")", PROBE_TIMEOUT, () -> {
                    int status = get(uri).statusCode();
                    return ready ? status == 200 : status != 200;
                });
    }

    /** The addresses of the members whose status is Up, from {@code GET /cluster/members}. */
    static List<String> upMembers(URI members) throws IOException, InterruptedException {
        HttpResponse<String> r = get(members);
        if (r.statusCode() != 200) {
            return List.of();
        }
        JsonNode body = JSON.readTree(r.body());
        List<String> up = new ArrayList<>();
        for (JsonNode m : body.path("members")) {
            if (m.path("status").asText().equals("Up")) {
                up.add(m.path("node").asText());
            }
        }
        return up;
    }

    static HttpResponse<String> get(URI uri) throws IOException, InterruptedException {
        try {
            return HTTP.send(
                    HttpRequest.newBuilder(uri)
                            .timeout(Duration.ofSeconds(10))
                            .GET()
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (java.net.ConnectException e) {
            return new Unreachable(uri);
        }
    }

    /** A refused connection, as a response that is neither 200 nor a body. */
    private record Unreachable(URI uri) implements HttpResponse<String> {
        public int statusCode() {
            return -1;
        }

        public HttpRequest request() {
            return HttpRequest.newBuilder(uri).build();
        }

        public Optional<HttpResponse<String>> previousResponse() {
            return Optional.empty();
        }

        public java.net.http.HttpHeaders headers() {
            return java.net.http.HttpHeaders.of(Map.of(), (a, b) -> true);
        }

        public String body() {
            return "";
        }

        public Optional<javax.net.ssl.SSLSession> sslSession() {
            return Optional.empty();
        }

        public URI uri() {
            return uri;
        }

        public HttpClient.Version version() {
            return HttpClient.Version.HTTP_1_1;
        }
    }
}
