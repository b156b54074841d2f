package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.rollout.modelserver.GenerateEndpointTest.concat;
import static org.rollout.modelserver.GenerateEndpointTest.logprobs;
import static org.rollout.modelserver.GenerateEndpointTest.tokens;
import static org.rollout.modelserver.ServerClient.await;
import static org.rollout.modelserver.ServerClient.generate;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Pause, continue, abort, weight updates, info endpoints, errors and connection handling over real
 * HTTP. Long requests run under a 1 ms-per-step latency model with a huge token budget, so they are
 * certainly still running when the test acts on them; every wait is on a server counter, bounded.
 */
class ControlEndpointsTest {
    private static final int[] PROMPT = {257, 117, 115, 101, 114, 10, 104, 105};
    private static final String LONG = "\"max_new_tokens\":1000000,\"ignore_eos\":true,\"sampling_seed\":5";
    private static final LatencyModel ONE_MS_STEPS =
            new LatencyModel(Duration.ZERO, Duration.ofMillis(1), Duration.ZERO);

    @TempDir
    Path dir;

    private ModelServer server;
    private ServerClient client;

    @BeforeEach
    void start() throws IOException {
        server = ModelServer.start(ModelServerConfig.defaults()
                .withSeed(1)
                .withLatency(ONE_MS_STEPS)
                .withMaxRunningRequests(8));
        client = new ServerClient(server);
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private CompletableFuture<ServerClient.Reply> longRequest(String rid) {
        long before = server.stats().tokensGenerated();
        CompletableFuture<ServerClient.Reply> f = client.postAsync("/generate", generate(rid, PROMPT, LONG));
        await("rid " + rid + " to be decoding", () -> server.stats().tokensGenerated() >= before + 5);
        return f;
    }

    private static void assertPartialAbort(ServerClient.Reply r, String rid) {
        assertThat(r.status()).isEqualTo(200);
        JsonNode meta = r.json().get("meta_info");
        assertThat(meta.get("id").asText()).isEqualTo(rid);
        assertThat(meta.at("/finish_reason/type").asText()).isEqualTo("abort");
        int n = meta.get("completion_tokens").asInt();
        assertThat(n).isBetween(1, 999_999);
        assertThat(meta.get("output_token_logprobs")).hasSize(n);
        assertThat(r.json().get("output_ids")).hasSize(n);
    }

    @Test
    void pauseInAbortModeReturnsPartialOutputAndHoldsNewRequestsUntilContinue() {
        CompletableFuture<ServerClient.Reply> running = longRequest("long");
        ServerClient.Reply pause = client.post("/pause_generation", "{}");
        assertThat(pause.status()).isEqualTo(200);
        assertThat(pause.json().get("success").asBoolean()).isTrue();
        assertThat(server.stats().running())
                .as("abort mode has ended in-flight requests when it returns")
                .isZero();
        assertPartialAbort(ServerClient.join(running), "long");

        CompletableFuture<ServerClient.Reply> held =
                client.postAsync("/generate", generate("held", PROMPT, "\"max_new_tokens\":5,\"ignore_eos\":true"));
        await("the new request to be queued", () -> server.stats().queued() == 1);
        assertThat(server.stats().paused()).isTrue();
        assertThat(server.stats().pauseMode()).isEqualTo("abort");
        assertThat(held).isNotDone();

        assertThat(client.post("/continue_generation", "{}")
                        .json()
                        .get("success")
                        .asBoolean())
                .isTrue();
        ServerClient.Reply done = ServerClient.join(held);
        assertThat(done.json().at("/meta_info/finish_reason/type").asText()).isEqualTo("length");
        assertThat(done.json().at("/meta_info/completion_tokens").asInt()).isEqualTo(5);
    }

    @Test
    void inPlacePauseKeepsRunningRequestsWhichContinueAfterResume() {
        CompletableFuture<ServerClient.Reply> running = longRequest("kept");
        assertThat(client.post("/pause_generation", "{\"mode\":\"in_place\"}").status())
                .isEqualTo(200);
        ModelServerStats paused = server.stats();
        assertThat(paused.paused()).isTrue();
        assertThat(paused.pauseMode()).isEqualTo("in_place");
        assertThat(paused.running()).isEqualTo(1);
        assertThat(running).isNotDone();
        CompletableFuture<ServerClient.Reply> held =
                client.postAsync("/generate", generate("new", PROMPT, "\"max_new_tokens\":3,\"ignore_eos\":true"));
        await("the new request to be queued", () -> server.stats().queued() == 1);

        client.post("/continue_generation", "{}");
        await("decoding to resume", () -> server.stats().tokensGenerated() > paused.tokensGenerated() + 5);
        assertThat(ServerClient.join(held)
                        .json()
                        .at("/meta_info/completion_tokens")
                        .asInt())
                .isEqualTo(3);
        client.post("/abort_request", "{\"rid\":\"kept\"}");
        ServerClient.Reply r = ServerClient.join(running);
        assertPartialAbort(r, "kept");
        assertThat(r.json().at("/meta_info/completion_tokens").asLong())
                .as("tokens from before the pause and after it")
                .isGreaterThan(5);
    }

    @Test
    void pauseRejectsAnUnknownModeNamingIt() {
        ServerClient.Reply r = client.post("/pause_generation", "{\"mode\":\"sideways\"}");
        assertThat(r.status()).isEqualTo(400);
        assertThat(r.json().get("success").asBoolean()).isFalse();
        assertThat(r.json().get("message").asText()).contains("mode 'sideways'");
    }

    @Test
    void abortByRidEndsThatRequestOnlyAndUnknownRidsSucceed() {
        CompletableFuture<ServerClient.Reply> a = longRequest("a");
        CompletableFuture<ServerClient.Reply> b = longRequest("b");
        ServerClient.Reply abort = client.post("/abort_request", "{\"rid\":\"a\"}");
        assertThat(abort.json().get("success").asBoolean()).isTrue();
        assertPartialAbort(ServerClient.join(a), "a");
        assertThat(b).isNotDone();
        assertThat(server.stats().running()).isEqualTo(1);
        assertThat(client.post("/abort_request", "{\"rid\":\"nobody\"}")
                        .json()
                        .get("success")
                        .asBoolean())
                .isTrue();
        client.post("/abort_request", "{\"rid\":\"b\"}");
        assertPartialAbort(ServerClient.join(b), "b");
    }

    @Test
    void abortAllEndsRunningRequestsWithPartialOutputAndQueuedOnesBeforePrefill() throws IOException {
        server.close();
        server = ModelServer.start(
                ModelServerConfig.defaults().withLatency(ONE_MS_STEPS).withMaxRunningRequests(1));
        client = new ServerClient(server);
        CompletableFuture<ServerClient.Reply> running = longRequest("running");
        CompletableFuture<ServerClient.Reply> queued = client.postAsync("/generate", generate("queued", PROMPT, LONG));
        await(
                "the second request to queue behind max_running_requests=1",
                () -> server.stats().queued() == 1);
        assertThat(client.post("/abort_request", "{\"abort_all\":true}").status())
                .isEqualTo(200);
        assertPartialAbort(ServerClient.join(running), "running");
        JsonNode q = ServerClient.join(queued).json();
        assertThat(q.at("/meta_info/finish_reason/type").asText()).isEqualTo("abort");
        assertThat(q.at("/meta_info/finish_reason/message").asText()).isEqualTo("Abort before prefill");
        assertThat(q.at("/meta_info/completion_tokens").asInt()).isZero();
        assertThat(server.stats().requestsAborted()).isEqualTo(2);
    }

    @Test
    void abortRequestWithoutRidOrAbortAllIsRefusedNamingRid() {
        ServerClient.Reply r = client.post("/abort_request", "{}");
        assertThat(r.status()).isEqualTo(400);
        assertThat(r.json().get("message").asText()).contains("rid");
    }

    @Test
    void updateWeightsFromDiskChangesTheServedVersionAndTheLogprobs() throws IOException {
        TinyLmWeights first = server.weights();
        TinyLmWeights second = TinyLmWeights.seeded(99, 0.5, 0.85f).withVersion(7);
        Path file = dir.resolve("weights-v7.rlm");
        second.write(file);
        String body = generate(null, PROMPT, "\"max_new_tokens\":10,\"sampling_seed\":4,\"ignore_eos\":true");
        JsonNode before = client.post("/generate", body).json();
        assertThat(before.at("/meta_info/weight_version").asText()).isEqualTo("0");

        ServerClient.Reply update = client.post(
                "/update_weights_from_disk", "{\"model_path\":\"" + file + "\",\"abort_all_requests\":true}");
        assertThat(update.status()).isEqualTo(200);
        assertThat(update.json().get("success").asBoolean()).isTrue();
        JsonNode info = client.get("/get_model_info").json();
        assertThat(info.get("weight_version").asText()).isEqualTo("7");
        assertThat(info.get("model_path").asText())
                .isEqualTo(file.toAbsolutePath().toString());

        JsonNode after = client.post("/generate", body).json();
        assertThat(after.at("/meta_info/weight_version").asText()).isEqualTo("7");
        assertThat(logprobs(after)).isNotEqualTo(logprobs(before));
        double[] expected = TinyLm.sequenceLogprobs(second, concat(PROMPT, tokens(after)), PROMPT.length, 1.0);
        for (int i = 0; i < expected.length; i++) {
            assertThat(logprobs(after)[i]).isCloseTo(expected[i], within(1e-9));
        }
        double[] old = TinyLm.sequenceLogprobs(first, concat(PROMPT, tokens(before)), PROMPT.length, 1.0);
        assertThat(logprobs(before)[0]).isCloseTo(old[0], within(1e-9));

        client.post("/update_weights_from_disk", "{\"model_path\":\"" + file + "\",\"weight_version\":\"12\"}");
        assertThat(server.weightVersion()).isEqualTo(12);
        assertThat(server.weights()).isEqualTo(second.withVersion(12));
    }

    @Test
    void updateWithAbortAllRequestsAbortsInFlightUnderTheOldVersion() throws IOException {
        Path file = dir.resolve("w.rlm");
        TinyLmWeights.seeded(2).withVersion(3).write(file);
        CompletableFuture<ServerClient.Reply> running = longRequest("old");
        client.post("/update_weights_from_disk", "{\"model_path\":\"" + file + "\",\"abort_all_requests\":true}");
        ServerClient.Reply r = ServerClient.join(running);
        assertPartialAbort(r, "old");
        assertThat(r.json().at("/meta_info/weight_version").asText()).isEqualTo("0");
        assertThat(server.weightVersion()).isEqualTo(3);
    }

    @Test
    void badWeightFileIsA400NamingThePathAndTheServedVersionStays() throws IOException {
        Path file = dir.resolve("broken.rlm");
        Files.write(file, "definitely not weights".getBytes(StandardCharsets.UTF_8));
        ServerClient.Reply r = client.post("/update_weights_from_disk", "{\"model_path\":\"" + file + "\"}");
        assertThat(r.status()).isEqualTo(400);
        assertThat(r.json().get("success").asBoolean()).isFalse();
        assertThat(r.json().get("message").asText()).contains(file.toString()).contains("wrong magic");
        Path missing = dir.resolve("missing.rlm");
        assertThat(client.post("/update_weights_from_disk", "{\"model_path\":\"" + missing + "\"}")
                        .json()
                        .get("message")
                        .asText())
                .contains(missing.toString())
                .contains("cannot read");
        assertThat(server.weightVersion()).isZero();
        ServerClient.Reply badVersion =
                client.post("/update_weights_from_disk", "{\"model_path\":\"" + file + "\",\"weight_version\":\"v3\"}");
        assertThat(badVersion.status()).isEqualTo(400);
        assertThat(badVersion.json().get("message").asText()).contains("weight_version");
    }

    @Test
    void healthIs200WithAnEmptyBody() {
        ServerClient.Reply r = client.get("/health");
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.body()).isEmpty();
    }

    @Test
    void modelInfoDescribesTheModel() {
        JsonNode info = client.get("/get_model_info").json();
        assertThat(info.get("model_path").asText()).isEqualTo("builtin:tiny-lm?seed=1");
        assertThat(info.get("tokenizer_path").asText()).isEqualTo("builtin:byte-level");
        assertThat(info.get("is_generation").asBoolean()).isTrue();
        assertThat(info.get("weight_version").asText()).isEqualTo("0");
        assertThat(info.get("vocab_size").asInt()).isEqualTo(263);
    }

    @Test
    void serverInfoCountsRequestsTokensAbortsAndBusyTime() {
        for (int i = 0; i < 3; i++) {
            client.post("/generate", generate(null, PROMPT, "\"max_new_tokens\":4,\"ignore_eos\":true"));
        }
        CompletableFuture<ServerClient.Reply> running = longRequest("counted");
        JsonNode live = client.get("/get_server_info").json();
        assertThat(live.get("running_requests").asInt()).isEqualTo(1);
        assertThat(live.get("queued_requests").asInt()).isZero();
        assertThat(live.get("requests_total").asLong()).isEqualTo(4);
        assertThat(live.get("busy_fraction").asDouble()).isBetween(0.0, 1.0).isPositive();
        client.post("/abort_request", "{\"rid\":\"counted\"}");
        int partial = ServerClient.join(running)
                .json()
                .at("/meta_info/completion_tokens")
                .asInt();
        JsonNode info = client.get("/get_server_info").json();
        assertThat(info.get("running_requests").asInt()).isZero();
        assertThat(info.get("requests_finished").asLong()).isEqualTo(3);
        assertThat(info.get("requests_aborted").asLong()).isEqualTo(1);
        assertThat(info.get("tokens_generated").asLong()).isEqualTo(12 + partial);
        assertThat(info.get("weight_version").asText()).isEqualTo("0");
        assertThat(info.get("paused").asBoolean()).isFalse();
        assertThat(info.at("/latency_model/decode_base_us").asDouble()).isEqualTo(1000.0);
    }

    @Test
    void unknownPathIsA404JsonErrorNamingThePath() {
        ServerClient.Reply r = client.get("/v2/nothing");
        assertThat(r.status()).isEqualTo(404);
        assertThat(r.json().at("/error/message").asText()).contains("GET /v2/nothing");
    }

    @Test
    void wrongMethodIsA405NamingTheRightOne() {
        ServerClient.Reply r = client.get("/generate");
        assertThat(r.status()).isEqualTo(405);
        assertThat(r.json().at("/error/message").asText()).contains("use POST");
    }

    @Test
    void badJsonIsA400SayingSo() {
        ServerClient.Reply r = client.post("/generate", "{\"input_ids\": [1, 2");
        assertThat(r.status()).isEqualTo(400);
        assertThat(r.json().at("/error/message").asText()).contains("not valid JSON");
    }

    @Test
    void badFieldsAreA400NamingTheField() {
        assertThat(message(client.post("/generate", "{\"input_ids\":[1,263]}"))).contains("input_ids[1] = 263");
        assertThat(message(client.post("/generate", "{}"))).contains("input_ids is required");
        assertThat(message(client.post("/generate", "{\"input_ids\":[1],\"sampling_params\":{\"top_p\":0}}")))
                .contains("sampling_params.top_p must be in (0, 1]");
        assertThat(message(client.post("/generate", "{\"input_ids\":[1],\"sampling_params\":{\"top_k\":0}}")))
                .contains("sampling_params.top_k");
        assertThat(message(client.post("/generate", "{\"input_ids\":[1],\"sampling_params\":{\"max_tokens\":5}}")))
                .contains("unknown field 'sampling_params.max_tokens'");
        assertThat(message(client.post("/generate", "{\"text\":\"hi\"}"))).contains("text prompts are not supported");
        assertThat(message(client.post(
                        "/generate",
                        "{\"input_ids\":[1],\"sampling_params\":{\"max_new_tokens\":2,\"min_new_tokens\":3}}")))
                .contains("sampling_params.min_new_tokens (3) exceeds max_new_tokens (2)");
        assertThat(message(client.post("/generate", "{\"input_ids\":[1],\"stream\":true}")))
                .contains("stream = true is not supported");
    }

    private static String message(ServerClient.Reply r) {
        assertThat(r.status()).isEqualTo(400);
        return r.json().at("/error/message").asText();
    }

    @Test
    void aRidAlreadyInFlightIsA400NamingIt() {
        CompletableFuture<ServerClient.Reply> running = longRequest("twice");
        ServerClient.Reply dup = client.post("/generate", generate("twice", PROMPT, "\"max_new_tokens\":1"));
        assertThat(dup.status()).isEqualTo(400);
        assertThat(dup.json().at("/error/message").asText()).contains("rid 'twice' is already in flight");
        client.post("/abort_request", "{\"rid\":\"twice\"}");
        assertPartialAbort(ServerClient.join(running), "twice");
    }

    @Test
    void aClientThatDisconnectsFreesItsSlot() throws IOException {
        long tokens = server.stats().tokensGenerated();
        byte[] body = generate("gone", PROMPT, LONG).getBytes(StandardCharsets.UTF_8);
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            OutputStream out = s.getOutputStream();
            out.write(("POST /generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                            + body.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.write(body);
            out.flush();
            await("the request to be decoding", () -> server.stats().tokensGenerated() > tokens + 5);
        }
        await("the disconnected request to be aborted", () -> server.stats().requestsAborted() == 1);
        assertThat(server.stats().running()).isZero();
    }

    @Test
    void chunkedRequestBodiesAndKeepAliveWork() throws IOException {
        byte[] body = generate("chunked", PROMPT, "\"max_new_tokens\":3,\"ignore_eos\":true")
                .getBytes(StandardCharsets.UTF_8);
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            for (int round = 0; round < 2; round++) {
                out.write("POST /generate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                        .getBytes(StandardCharsets.US_ASCII));
                int half = body.length / 2;
                out.write((Integer.toHexString(half) + "\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(body, 0, half);
                out.write(("\r\n" + Integer.toHexString(body.length - half) + "\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.write(body, half, body.length - half);
                out.write("\r\n0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                String head = readHead(in);
                assertThat(head).startsWith("HTTP/1.1 200 OK");
                int length = Integer.parseInt(head.replaceAll("(?s).*Content-Length: (\\d+).*", "$1"));
                String json = new String(in.readNBytes(length), StandardCharsets.UTF_8);
                assertThat(json).contains("\"completion_tokens\":3");
            }
        }
    }

    @Test
    void http10ClientsGetTheirAnswerAndTheConnectionCloses() throws IOException {
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.getOutputStream().write("GET /health HTTP/1.0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            String all = new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
            assertThat(all)
                    .startsWith("HTTP/1.1 200 OK")
                    .contains("Connection: close")
                    .endsWith("\r\n\r\n");
        }
    }

    @Test
    void aMalformedRequestLineIsA400AndTheConnectionCloses() throws IOException {
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.getOutputStream().write("NONSENSE\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            String all = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(all).startsWith("HTTP/1.1 400 Bad Request").contains("malformed request line: NONSENSE");
        }
    }

    private static String readHead(InputStream in) throws IOException {
        StringBuilder sb = new StringBuilder();
        while (!sb.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("connection closed inside the response head: " + sb);
            }
            sb.append((char) b);
        }
        return sb.toString();
    }

    @Test
    void clientsOfferingAnHttp2UpgradeOrExpectingContinueAreServedOverHttp11() throws Exception {
        java.net.http.HttpClient defaultClient = java.net.http.HttpClient.newHttpClient();
        java.net.http.HttpResponse<String> health = defaultClient.send(
                java.net.http.HttpRequest.newBuilder(java.net.URI.create(server.baseUrl() + "/health"))
                        .timeout(ServerClient.TIMEOUT)
                        .build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(health.version()).isEqualTo(java.net.http.HttpClient.Version.HTTP_1_1);
        java.net.http.HttpResponse<String> generated = defaultClient.send(
                java.net.http.HttpRequest.newBuilder(java.net.URI.create(server.baseUrl() + "/generate"))
                        .timeout(ServerClient.TIMEOUT)
                        .expectContinue(true)
                        .POST(java.net.http.HttpRequest.BodyPublishers.ofString(
                                generate("continue", PROMPT, "\"max_new_tokens\":2,\"ignore_eos\":true")))
                        .build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertThat(generated.statusCode()).isEqualTo(200);
        assertThat(generated.body()).contains("\"completion_tokens\":2");
    }

    @Test
    void gracefulCloseAnswersInFlightRequestsWithAbort() {
        CompletableFuture<ServerClient.Reply> running = longRequest("closing");
        server.close();
        ServerClient.Reply r = ServerClient.join(running);
        assertPartialAbort(r, "closing");
        assertThat(r.json().at("/meta_info/finish_reason/message").asText()).contains("shutting down");
        assertThat(server.isRunning()).isFalse();
    }

    @Test
    void crashResetsConnectionsAndNeverAnswersInFlightRequests() {
        CompletableFuture<ServerClient.Reply> running = longRequest("lost");
        server.crash();
        assertThat(running)
                .failsWithin(ServerClient.TIMEOUT)
                .withThrowableThat()
                .withRootCauseInstanceOf(IOException.class);
        assertThat(client.postAsync("/generate", generate(null, PROMPT, "\"max_new_tokens\":1")))
                .as("nothing listens any more")
                .failsWithin(ServerClient.TIMEOUT);
    }
}
