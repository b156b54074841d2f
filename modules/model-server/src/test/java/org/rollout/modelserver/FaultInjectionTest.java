package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.modelserver.ServerClient.await;
import static org.rollout.modelserver.ServerClient.generate;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Every fault kind, set through the admin endpoint or the Java API, over real HTTP. */
class FaultInjectionTest {
    private static final int[] PROMPT = {257, 117, 115, 101, 114, 10};
    private static final String SMALL = generate(null, PROMPT, "\"max_new_tokens\":4,\"ignore_eos\":true");

    private ModelServer server;
    private ServerClient client;

    @BeforeEach
    void start() throws IOException {
        server = ModelServer.start(ModelServerConfig.defaults());
        client = new ServerClient(server);
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private void setFaults(String json) {
        ServerClient.Reply r = client.post("/_admin/faults", json);
        assertThat(r.status()).as(r.body()).isEqualTo(200);
    }

    @Test
    void errorRateOneAnswersEveryGenerationWith500() {
        setFaults("{\"error_rate\":1.0}");
        ServerClient.Reply r = client.post("/generate", SMALL);
        assertThat(r.status()).isEqualTo(500);
        assertThat(r.json().at("/error/message").asText()).contains("injected fault");
        assertThat(client.get("/health").status())
                .as("only generation endpoints fail")
                .isEqualTo(200);
        setFaults("{}");
        assertThat(client.post("/generate", SMALL).status()).isEqualTo(200);
    }

    private List<Integer> statuses(int n) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(client.post("/generate", SMALL).status());
        }
        return out;
    }

    @Test
    void seededErrorRateStrikesTheSameRequestsEachTimeThePlanIsSet() {
        setFaults("{\"error_rate\":0.5,\"seed\":42}");
        List<Integer> first = statuses(30);
        setFaults("{\"error_rate\":0.5,\"seed\":42}");
        List<Integer> second = statuses(30);
        assertThat(second).isEqualTo(first);
        assertThat(first).contains(200, 500);
    }

    @Test
    void hangHoldsRequestsUnansweredUntilTheFaultIsCleared() {
        server.setFaults(FaultPlan.NONE.withHang(true));
        CompletableFuture<ServerClient.Reply> held = client.postAsync("/generate", SMALL);
        await("the request to be held", () -> server.stats().hungRequests() == 1);
        assertThat(client.get("/get_server_info").json().get("hung_requests").asInt())
                .isEqualTo(1);
        assertThat(held).isNotDone();
        server.clearFaults();
        ServerClient.Reply r = ServerClient.join(held);
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.json().at("/meta_info/completion_tokens").asInt()).isEqualTo(4);
        assertThat(server.stats().hungRequests()).isZero();
    }

    @Test
    void hungRequestsAreDroppedUnansweredWhenTheServerCloses() {
        setFaults("{\"hang\":true}");
        CompletableFuture<ServerClient.Reply> held = client.postAsync("/generate", SMALL);
        await("the request to be held", () -> server.stats().hungRequests() == 1);
        server.close();
        assertThat(held)
                .failsWithin(ServerClient.TIMEOUT)
                .withThrowableThat()
                .withRootCauseInstanceOf(IOException.class);
    }

    @Test
    void crashAfterTwoServesTwoThenStopsListeningAndResetsConnections() {
        setFaults("{\"crash_after\":2}");
        assertThat(client.post("/generate", SMALL).status()).isEqualTo(200);
        assertThat(client.post("/generate", SMALL).status()).isEqualTo(200);
        assertThat(client.postAsync("/generate", SMALL))
                .failsWithin(ServerClient.TIMEOUT)
                .withThrowableThat()
                .withRootCauseInstanceOf(IOException.class);
        assertThat(server.isRunning()).isFalse();
        assertThat(new ServerClient(server).postAsync("/generate", SMALL))
                .as("connection refused afterwards")
                .failsWithin(ServerClient.TIMEOUT);
    }

    @Test
    void slowAddsTheDelayBeforeEachGenerationResponse() {
        server.setFaults(FaultPlan.NONE.withSlow(Duration.ofMillis(300)));
        long t0 = System.nanoTime();
        assertThat(client.post("/generate", SMALL).status()).isEqualTo(200);
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
    }

    private ServerClient.Reply malformed(String kind, String path, String body) {
        setFaults("{\"malformed_rate\":1.0,\"malformed_kind\":\"" + kind + "\"}");
        ServerClient.Reply r = client.post(path, body);
        assertThat(r.status()).isEqualTo(200);
        return r;
    }

    @Test
    void malformedNotJsonIsNotParseable() {
        ServerClient.Reply r = malformed("not_json", "/generate", SMALL);
        assertThat(r.json()).isNull();
        assertThat(r.body()).isNotBlank();
    }

    @Test
    void malformedTruncatedJsonIsAPrefixOfAResponse() {
        ServerClient.Reply r = malformed("truncated_json", "/generate", SMALL);
        assertThat(r.json()).isNull();
        assertThat(r.body()).startsWith("{\"text\":");
    }

    @Test
    void malformedCountMismatchHasOneLogprobEntryFewerThanTokens() {
        JsonNode r = malformed("count_mismatch", "/generate", SMALL).json();
        assertThat(r.at("/meta_info/completion_tokens").asInt()).isEqualTo(4);
        assertThat(r.get("output_ids")).hasSize(4);
        assertThat(r.at("/meta_info/output_token_logprobs")).hasSize(3);
        JsonNode v = malformed(
                        "count_mismatch",
                        "/v1/completions",
                        "{\"prompt\":[1,2],\"max_tokens\":4,\"ignore_eos\":true,\"logprobs\":0}")
                .json();
        assertThat(v.at("/choices/0/logprobs/tokens")).hasSize(4);
        assertThat(v.at("/choices/0/logprobs/token_logprobs")).hasSize(3);
    }

    @Test
    void malformedUnknownFinishReasonIsCancelled() {
        JsonNode r = malformed("unknown_finish_reason", "/generate", SMALL).json();
        assertThat(r.at("/meta_info/finish_reason/type").asText()).isEqualTo("cancelled");
    }

    @Test
    void malformedMissingMetaInfoDropsIt() {
        JsonNode r = malformed("missing_meta_info", "/generate", SMALL).json();
        assertThat(r.has("meta_info")).isFalse();
        assertThat(r.has("output_ids")).isTrue();
    }

    @Test
    void adminEndpointReportsThePlanAndRefusesBadFieldsNamingThem() {
        server.setFaults(FaultPlan.NONE.withErrorRate(0.25).withSeed(9));
        JsonNode plan = client.get("/_admin/faults").json();
        assertThat(plan.get("error_rate").asDouble()).isEqualTo(0.25);
        assertThat(plan.get("seed").asLong()).isEqualTo(9);
        assertThat(plan.get("crash_after").isNull()).isTrue();
        ServerClient.Reply bad = client.post("/_admin/faults", "{\"error_rate\":2}");
        assertThat(bad.status()).isEqualTo(400);
        assertThat(bad.json().get("message").asText()).contains("error_rate must be in [0, 1]");
        ServerClient.Reply unknown = client.post("/_admin/faults", "{\"explode\":true}");
        assertThat(unknown.json().get("message").asText()).contains("unknown field 'explode'");
        ServerClient.Reply kind = client.post("/_admin/faults", "{\"malformed_kind\":\"odd\"}");
        assertThat(kind.json().get("message").asText()).contains("malformed_kind 'odd'");
        assertThat(server.faults().errorRate())
                .as("a refused plan changes nothing")
                .isEqualTo(0.25);
    }

    @Test
    void faultsConfiguredAtStartUpApplyFromTheFirstRequest() throws IOException {
        server.close();
        server = ModelServer.start(ModelServerConfig.defaults().withFaults(FaultPlan.NONE.withErrorRate(1.0)));
        client = new ServerClient(server);
        assertThat(client.post("/generate", SMALL).status()).isEqualTo(500);
    }
}
