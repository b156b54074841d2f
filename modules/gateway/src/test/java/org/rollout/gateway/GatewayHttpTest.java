package org.rollout.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.InvalidConfigException;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.GatewayRequestException;
import org.rollout.trainer.RolloutClient;

/** The gateway's HTTP surface over 127.0.0.1, in front of a fake engine: auth, TLS, and every error body. */
class GatewayHttpTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);
    private static final String TOKEN = "s3cret-t0ken";

    private final HttpClient http =
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final List<AutoCloseable> toClose = new ArrayList<>();
    private final FakeEngine engine = new FakeEngine();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        http.close();
    }

    private TrainerGateway start(GatewayConfig config) throws IOException {
        TrainerGateway g = TrainerGateway.start(config, engine);
        toClose.add(g);
        return g;
    }

    private record Answer(int status, String body, java.net.http.HttpHeaders headers) {}

    private Answer send(TrainerGateway g, String method, String path, String body, String... headers)
            throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(g.uri() + path))
                .method(
                        method,
                        body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (headers.length > 0) {
            b.headers(headers);
        }
        HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return new Answer(r.statusCode(), r.body(), r.headers());
    }

    private static String error(String code, String message) {
        return "{\"error\":{\"message\":\"" + message + "\",\"code\":\"" + code + "\"}}";
    }

    @Test
    void bindsTheLoopbackAddressByDefault() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        assertThat(g.address().getAddress().getHostAddress()).isEqualTo("127.0.0.1");
        assertThat(g.uri()).isEqualTo(URI.create("http://127.0.0.1:" + g.port()));
    }

    @Test
    void statsFromAnEngineWithoutStatisticsIs501NamingIt() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        Answer a = send(g, "GET", "/v1/stats?since_version=0", null);
        assertThat(a.status()).isEqualTo(501);
        assertThat(a.body()).isEqualTo(error("not_implemented", "FakeEngine has no per-version statistics"));
    }

    @Test
    void healthAnswersWithoutAToken() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults().withToken(TOKEN));
        Answer a = send(g, "GET", "/health", null);
        assertThat(a.status()).isEqualTo(200);
        assertThat(a.body()).isEqualTo("{\"status\":\"ok\"}");
    }

    @Test
    void withATokenEveryOtherEndpointRefusesARequestWithoutOne() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults().withToken(TOKEN));
        String[][] endpoints = {
            {"POST", "/v1/batches/next?wait=0"},
            {"POST", "/v1/batches/1/ack"},
            {"POST", "/v1/weights"},
            {"GET", "/v1/status"}
        };
        for (String[] e : endpoints) {
            Answer a = send(g, e[0], e[1], e[0].equals("POST") ? "{}" : null);
            assertThat(a.status()).as(e[1]).isEqualTo(401);
            assertThat(a.body())
                    .as(e[1])
                    .isEqualTo(
                            error("unauthorized", "this gateway requires an 'Authorization: Bearer <token>' header"));
            assertThat(a.headers().firstValue("WWW-Authenticate")).hasValue("Bearer realm=\"rollout\"");
        }
        assertThat(engine.pulls).hasValue(0);
    }

    @Test
    void aWrongTokenIsRefused() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults().withToken(TOKEN));
        Answer a = send(g, "GET", "/v1/status", null, "Authorization", "Bearer s3cret-t0keN");
        assertThat(a.status()).isEqualTo(401);
        assertThat(a.body()).isEqualTo(error("unauthorized", "the bearer token does not match"));
    }

    @Test
    void anotherAuthorizationSchemeCountsAsNoToken() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults().withToken(TOKEN));
        Answer a = send(g, "GET", "/v1/status", null, "Authorization", "Basic dXNlcjpwYXNz");
        assertThat(a.status()).isEqualTo(401);
        assertThat(a.body())
                .isEqualTo(error("unauthorized", "this gateway requires an 'Authorization: Bearer <token>' header"));
    }

    @Test
    void theRightTokenIsAccepted() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults().withToken(TOKEN));
        Answer a = send(g, "GET", "/v1/status", null, "Authorization", "Bearer " + TOKEN);
        assertThat(a.status()).isEqualTo(200);
        assertThat(a.body()).startsWith("{\"version\":3,");
    }

    @Test
    void aClientWithTheWrongTokenGetsAGatewayRequestException() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults().withToken(TOKEN));
        try (RolloutClient c =
                RolloutClient.connect(ClientConfig.of(g.uri().toString()).withToken("wrong"))) {
            assertThatThrownBy(c::status)
                    .isInstanceOf(GatewayRequestException.class)
                    .hasMessage("could not read status: the trainer gateway at " + g.uri()
                            + " answered HTTP 401 unauthorized: the bearer token does not match");
        }
        try (RolloutClient c =
                RolloutClient.connect(ClientConfig.of(g.uri().toString()).withToken(TOKEN))) {
            assertThat(c.status()).isEqualTo(FakeEngine.STATUS);
        }
    }

    @Test
    void anUnknownEndpointIs404ListingTheEndpoints() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        Answer a = send(g, "GET", "/v1/batches", null);
        assertThat(a.status()).isEqualTo(404);
        assertThat(a.body())
                .isEqualTo(error(
                        "not_found",
                        "no endpoint GET /v1/batches (endpoints: POST /v1/batches/next, POST /v1/batches/{id}/ack, POST /v1/leases/renew,"
                                + " POST /v1/weights, GET /v1/status, GET /v1/stats, GET|POST /v1/servers, DELETE"
                                + " /v1/servers/{host:port}, GET /health)"));
    }

    @Test
    void withoutAServerListTheServersRoutesAre404AndStillNeedTheToken() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults().withToken("t0ken"));
        assertThat(send(g, "GET", "/v1/servers", null).status()).isEqualTo(401);
        Answer a = send(g, "GET", "/v1/servers", null, "Authorization", "Bearer t0ken");
        assertThat(a.status()).isEqualTo(404);
        assertThat(a.body()).contains("this gateway has no inference server list");
    }

    @Test
    void anAddOrDrainThatAMajorityDidNotConfirmIs503SoThatTheCallerRepeatsItElsewhere() throws Exception {
        ServerDirectory unconfirmed = new ServerDirectory() {
            @Override
            public java.util.List<Entry> list() {
                return java.util.List.of();
            }

            @Override
            public boolean add(String address) {
                throw new NotReplicatedException(
                        "adding inference server " + address + " did not reach a majority of nodes within PT3S");
            }

            @Override
            public boolean drain(String address, java.time.Duration handOverAfter) {
                throw new NotReplicatedException(
                        "draining inference server " + address + " did not reach a majority of nodes within PT3S");
            }
        };
        TrainerGateway g = TrainerGateway.start(
                GatewayConfig.defaults(), engine, new GatewayExtras(null, null, java.util.Map.of(), unconfirmed));
        toClose.add(g);
        String tail = "; it holds on this node only and is lost if this node is downed: repeat it through another"
                + " node's gateway";
        Answer add = send(g, "POST", "/v1/servers", "{\"address\":\"127.0.0.1:9\"}");
        assertThat(add.status()).isEqualTo(503);
        assertThat(add.body())
                .isEqualTo(error(
                        "not_replicated",
                        "adding inference server 127.0.0.1:9 did not reach a majority of nodes within PT3S" + tail));
        Answer drain = send(g, "DELETE", "/v1/servers/127.0.0.1:9", null);
        assertThat(drain.status()).isEqualTo(503);
        assertThat(drain.body())
                .isEqualTo(error(
                        "not_replicated",
                        "draining inference server 127.0.0.1:9 did not reach a majority of nodes within PT3S" + tail));
    }

    @Test
    void theWrongMethodIs405WithTheAllowedOne() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        Answer a = send(g, "GET", "/v1/batches/next", null);
        assertThat(a.status()).isEqualTo(405);
        assertThat(a.body()).isEqualTo(error("method_not_allowed", "/v1/batches/next takes POST, not GET"));
        assertThat(a.headers().firstValue("Allow")).hasValue("POST");
    }

    @Test
    void aWaitThatIsNotANumberIs400() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        Answer a = send(g, "POST", "/v1/batches/next?wait=soon", null);
        assertThat(a.status()).isEqualTo(400);
        assertThat(a.body())
                .isEqualTo(error("bad_request", "query parameter 'wait' must be a number of seconds >= 0, got 'soon'"));
        Answer negative = send(g, "POST", "/v1/batches/next?wait=-1", null);
        assertThat(negative.body())
                .isEqualTo(error("bad_request", "query parameter 'wait' must be a number of seconds >= 0, got '-1'"));
        assertThat(engine.pulls).hasValue(0);
    }

    @Test
    void aPullUnderALeaseNamesItsHolderAndARenewalAnswersTheBatchesItCovers() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        assertThat(send(g, "POST", "/v1/batches/next?wait=0&lease=15&holder=host%3A12%3Aab", null)
                        .status())
                .isEqualTo(204);
        assertThat(engine.lastLease)
                .isEqualTo(new org.rollout.trainer.BatchLease("host:12:ab", Duration.ofSeconds(15)));
        Answer renewed = send(g, "POST", "/v1/leases/renew", "{\"holder\":\"host:12:ab\",\"lease\":15}");
        assertThat(renewed.status()).isEqualTo(200);
        assertThat(renewed.body()).isEqualTo("{\"holder\":\"host:12:ab\",\"lease_seconds\":15.0,\"batch_ids\":[7]}");
        assertThat(engine.lastRenewal.holder()).isEqualTo("host:12:ab");
    }

    @Test
    void aLeaseWithoutAHolderOrOutOfBoundsIs400NamingTheParameter() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        assertThat(send(g, "POST", "/v1/batches/next?wait=0&lease=15", null).body())
                .isEqualTo(error(
                        "bad_request",
                        "query parameter 'lease' needs 'holder', the name the trainer renews its lease under"));
        assertThat(send(g, "POST", "/v1/batches/next?wait=0&lease=0&holder=h", null)
                        .body())
                .isEqualTo(error(
                        "bad_request",
                        "query parameter 'lease' must be a number of seconds above 0 and at most 3600, got '0'"));
        Answer badRenewal = send(g, "POST", "/v1/leases/renew", "{\"lease\":15}");
        assertThat(badRenewal.status()).isEqualTo(400);
        assertThat(badRenewal.body()).contains("'holder'");
        assertThat(engine.pulls).hasValue(0);
    }

    @Test
    void noBatchWithinTheWaitIs204() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        Answer a = send(g, "POST", "/v1/batches/next?wait=0.5", null);
        assertThat(a.status()).isEqualTo(204);
        assertThat(engine.lastWait).isEqualTo(Duration.ofMillis(500));
    }

    @Test
    void aLongerWaitIsCappedAtMaxPollWait() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults().withMaxPollWait(Duration.ofSeconds(1)));
        assertThat(send(g, "POST", "/v1/batches/next?wait=3600", null).status()).isEqualTo(204);
        assertThat(engine.lastWait).isEqualTo(Duration.ofSeconds(1));
    }

    @Test
    void aPullWithoutAWaitDoesNotWait() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        assertThat(send(g, "POST", "/v1/batches/next", null).status()).isEqualTo(204);
        assertThat(engine.lastWait).isEqualTo(Duration.ZERO);
    }

    @Test
    void aBatchIdThatIsNotAnIntegerIs400() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        Answer a = send(g, "POST", "/v1/batches/seven/ack", null);
        assertThat(a.status()).isEqualTo(400);
        assertThat(a.body()).isEqualTo(error("bad_request", "batch id must be an integer, got 'seven'"));
    }

    @Test
    void anAcknowledgementOfABatchNeverHandedOutHereIsNotKnown() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        Answer a = send(g, "POST", "/v1/batches/12/ack", null);
        assertThat(a.status()).isEqualTo(200);
        assertThat(a.body()).isEqualTo("{\"batch_id\":12,\"known\":false}");
    }

    @Test
    void anAcknowledgementOfABatchHandedOutElsewhereRetiresTheTaskIdsItCarries() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        Answer a = send(g, "POST", "/v1/batches/12/ack", "{\"task_ids\":[5,6]}");
        assertThat(a.status()).isEqualTo(200);
        assertThat(a.body()).isEqualTo("{\"batch_id\":12,\"known\":false}");
        assertThat(engine.lastAckBatch).isEqualTo(12);
        assertThat(engine.lastAckTaskIds).containsExactly(5L, 6L);
    }

    @Test
    void anAcknowledgementWhoseTaskIdsAreNotAListOfIdsIs400() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        Answer a = send(g, "POST", "/v1/batches/12/ack", "{\"task_ids\":[5,\"six\"]}");
        assertThat(a.status()).isEqualTo(400);
        assertThat(a.body())
                .isEqualTo(error(
                        "bad_request",
                        "batch 12: acknowledgement request: field 'task_ids' must be an integer, got \\\"six\\\""));
        assertThat(engine.lastAckBatch).isEqualTo(-1);
    }

    @Test
    void aPublishBodyThatIsNotJsonIs400() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        Answer a = send(g, "POST", "/v1/weights", "version=1");
        assertThat(a.status()).isEqualTo(400);
        assertThat(a.body()).startsWith("{\"error\":{\"message\":\"publish request: the body is not JSON: ");
        assertThat(a.body()).endsWith("\",\"code\":\"bad_request\"}}");
    }

    @Test
    void aPublishWithoutAVersionIs400NamingTheField() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        Answer a = send(g, "POST", "/v1/weights", "{\"path\":\"/w/v1.rlm\"}");
        assertThat(a.status()).isEqualTo(400);
        assertThat(a.body())
                .isEqualTo(error("bad_request", "publish request: field 'version' must be an integer, got null"));
    }

    @Test
    void aPublishWithARelativePathIs400() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        Answer a = send(g, "POST", "/v1/weights", "{\"version\":1,\"path\":\"w/v1.rlm\"}");
        assertThat(a.status()).isEqualTo(400);
        assertThat(a.body())
                .isEqualTo(error(
                        "bad_request",
                        "publish request: field 'path' must be absolute, got 'w/v1.rlm' (the servers read the file; a"
                                + " relative path would resolve against the engine's working directory)"));
    }

    @Test
    void aPublishAnswersThePublishResult() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        Answer a = send(g, "POST", "/v1/weights", "{\"version\":4,\"path\":\"/w/v4.rlm\"}");
        assertThat(a.status()).isEqualTo(200);
        assertThat(a.body())
                .isEqualTo("{\"version\":4,\"update_time_ms\":3.0,\"servers_updated\":1,\"server_failures\":{}}");
    }

    @Test
    void aRequestBodyAbove64KiBIs413() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        Answer a = send(g, "POST", "/v1/weights", "x".repeat(GatewayHandler.MAX_REQUEST_BYTES + 1));
        assertThat(a.status()).isEqualTo(413);
        assertThat(a.body()).isEqualTo(error("payload_too_large", "request bodies are limited to 65536 bytes"));
    }

    @Test
    void anEngineFailureIs500WithTheEnginesMessage() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        engine.failure = new IllegalStateException("could not read status within PT30S");
        Answer a = send(g, "GET", "/v1/status", null);
        assertThat(a.status()).isEqualTo(500);
        assertThat(a.body()).isEqualTo(error("engine_error", "could not read status within PT30S"));
    }

    @Test
    void closingTheGatewayAnswersAWaitingPull503() throws Exception {
        TrainerGateway g = TrainerGateway.start(GatewayConfig.defaults(), engine);
        engine.blockPulls = true;
        CompletableFuture<HttpResponse<String>> pull = http.sendAsync(
                HttpRequest.newBuilder(URI.create(g.uri() + "/v1/batches/next?wait=30"))
                        .POST(HttpRequest.BodyPublishers.noBody())
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(engine.pullStarted.await(DEADLINE.toSeconds(), TimeUnit.SECONDS))
                .isTrue();
        g.close();
        HttpResponse<String> r = pull.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(r.body()).isEqualTo(error("unavailable", "the trainer gateway is shutting down"));
    }

    @Test
    void servesHttpsWithAKeyStoreAndAClientThatTrustsIt(@TempDir Path dir) throws Exception {
        Path store = TestKeyStores.selfSigned(dir, "changeit");
        TrainerGateway g =
                start(GatewayConfig.defaults().withTls(store, "changeit").withToken(TOKEN));
        assertThat(g.uri().getScheme()).isEqualTo("https");
        try (RolloutClient c = RolloutClient.connect(
                ClientConfig.of(g.uri().toString()).withToken(TOKEN).withTrustStore(store, "changeit"))) {
            assertThat(c.status()).isEqualTo(FakeEngine.STATUS);
        }
    }

    @Test
    void aKeyStoreThatDoesNotOpenIsAConfigurationErrorNamingIt(@TempDir Path dir) throws Exception {
        Path store = TestKeyStores.selfSigned(dir, "changeit");
        assertThatThrownBy(() -> start(GatewayConfig.defaults().withTls(store, "wrong")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageStartingWith("invalid value for 'gateway.key_store': \"" + store
                        + "\" (allowed: a readable PKCS12 or JKS key store whose key opens with"
                        + " gateway.key_store_password (");
    }

    @Test
    void aTokenWithSpacesIsAConfigurationErrorThatDoesNotShowIt() {
        assertThatThrownBy(() -> GatewayConfig.defaults().withToken("my secret"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'gateway.token': \"(9 characters)\" (allowed: printable ASCII without"
                        + " spaces, or unset for no authentication)");
    }

    @Test
    void aKeyStoreWithoutAPasswordIsAConfigurationError() {
        assertThatThrownBy(() -> GatewayConfig.defaults().withTls(Path.of("/etc/gw.p12"), null))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'gateway.key_store_password': null (allowed: the password of"
                        + " gateway.key_store /etc/gw.p12)");
    }

    @Test
    void theConfigNeverShowsTheTokenOrPassword() {
        String s = GatewayConfig.defaults()
                .withToken(TOKEN)
                .withTls(Path.of("/etc/gw.p12"), "pa55word")
                .toString();
        assertThat(s).doesNotContain(TOKEN).doesNotContain("pa55word").contains("token=(set)");
    }

    @Test
    void bodiesAreUtf8Json() throws Exception {
        TrainerGateway g = start(GatewayConfig.defaults());
        HttpResponse<byte[]> r = http.send(
                HttpRequest.newBuilder(URI.create(g.uri() + "/v1/status")).build(),
                HttpResponse.BodyHandlers.ofByteArray());
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
        assertThat(new String(r.body(), StandardCharsets.UTF_8)).contains("\"tokens_generated\":60");
    }
}
