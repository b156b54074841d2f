package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.modelserver.GenerateEndpointTest.tokens;
import static org.rollout.modelserver.ServerClient.await;
import static org.rollout.modelserver.ServerClient.generate;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Simulated output lengths over HTTP: where generations end, across a pause and abort and a resume. */
class OutputLengthsTest {
    private static final int[] PROMPT = {257, 117, 115, 101, 114, 10, 104, 105};
    private static final String EVERY_TOKEN_STOPS = "\"stop_token_ids\":"
            + Arrays.toString(IntStream.range(0, TinyLmWeights.VOCAB_SIZE).toArray())
                    .replace(" ", "");
    private ModelServer server;

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    private ServerClient start(ModelServerConfig config) throws IOException {
        server = ModelServer.start(config.withSeed(3));
        return new ServerClient(server);
    }

    private static OutputLengths fixed(int n) {
        return new OutputLengths(new LengthDistribution.Fixed(n), 0);
    }

    @Test
    void aGenerationEndsWithLengthAtItsDrawnLengthWhateverStopTokensSay() throws IOException {
        ServerClient client = start(ModelServerConfig.defaults().withOutputLengths(fixed(7)));
        JsonNode r = client.post(
                        "/generate",
                        generate("a", PROMPT, "\"max_new_tokens\":100,\"sampling_seed\":1," + EVERY_TOKEN_STOPS))
                .json();
        assertThat(tokens(r)).hasSize(7);
        assertThat(r.at("/meta_info/finish_reason/type").asText()).isEqualTo("length");
    }

    @Test
    void withoutSimulatedLengthsTheSameRequestStopsAtItsFirstToken() throws IOException {
        ServerClient client = start(ModelServerConfig.defaults());
        JsonNode r = client.post(
                        "/generate",
                        generate("a", PROMPT, "\"max_new_tokens\":100,\"sampling_seed\":1," + EVERY_TOKEN_STOPS))
                .json();
        assertThat(tokens(r)).hasSize(1);
        assertThat(r.at("/meta_info/finish_reason/type").asText()).isEqualTo("stop");
    }

    @Test
    void maxNewTokensCapsTheDrawnLength() throws IOException {
        ServerClient client = start(ModelServerConfig.defaults().withOutputLengths(fixed(50)));
        JsonNode r = client.post("/generate", generate("a", PROMPT, "\"max_new_tokens\":5"))
                .json();
        assertThat(tokens(r)).hasSize(5);
        assertThat(r.at("/meta_info/finish_reason/type").asText()).isEqualTo("length");
    }

    /** Starts rid {@code rid} (a drawn 300 tokens at 1 ms per step), aborts it mid-way, returns its partial output. */
    private int[] abortedMidway(ServerClient client, String rid) {
        long before = server.stats().tokensGenerated();
        CompletableFuture<ServerClient.Reply> first =
                client.postAsync("/generate", generate(rid, PROMPT, "\"max_new_tokens\":1000"));
        await("rid " + rid + " to be decoding", () -> server.stats().tokensGenerated() >= before + 5);
        // An in-place pause holds the sequence where it is, so the abort surely finds it running.
        client.post("/pause_generation", "{\"mode\":\"in_place\"}");
        client.post("/abort_request", "{\"rid\":\"" + rid + "\"}");
        JsonNode aborted = ServerClient.join(first).json();
        client.post("/continue_generation", "{}");
        assertThat(aborted.at("/meta_info/finish_reason/type").asText()).isEqualTo("abort");
        int[] partial = tokens(aborted);
        assertThat(partial.length).isBetween(5, 299);
        return partial;
    }

    private ServerClient startSlowWithFixed300() throws IOException {
        return start(ModelServerConfig.defaults()
                .withLatency(new LatencyModel(Duration.ZERO, Duration.ofMillis(1), Duration.ZERO))
                .withOutputLengths(fixed(300)));
    }

    @Test
    void aResumedGenerationEndsAtTheTotalLengthDrawnBeforeItsInterruption() throws IOException {
        ServerClient client = startSlowWithFixed300();
        int[] partial = abortedMidway(client, "r");
        int[] extended =
                IntStream.concat(Arrays.stream(PROMPT), Arrays.stream(partial)).toArray();
        JsonNode resumed = client.post("/generate", generate("r", extended, "\"max_new_tokens\":1000"))
                .json();
        assertThat(tokens(resumed)).as("the rest of the drawn 300").hasSize(300 - partial.length);
        assertThat(resumed.at("/meta_info/finish_reason/type").asText()).isEqualTo("length");
    }

    @Test
    void aRestartFromTheOriginalPromptAfterAnAbortIsANewGenerationWithAFullDraw() throws IOException {
        ServerClient client = startSlowWithFixed300();
        abortedMidway(client, "r");
        JsonNode restarted = client.post("/generate", generate("r", PROMPT, "\"max_new_tokens\":1000"))
                .json();
        assertThat(tokens(restarted)).hasSize(300);
    }

    @Test
    void serverInfoReportsTheSimulatedLengths() throws IOException {
        ServerClient client = start(ModelServerConfig.defaults()
                .withOutputLengths(new OutputLengths(new LengthDistribution.Pareto(64, 1.5), 9)));
        JsonNode info = client.get("/get_server_info").json();
        assertThat(info.at("/output_lengths/distribution").asText()).isEqualTo("pareto:min=64,alpha=1.5");
        assertThat(info.at("/output_lengths/seed").asLong()).isEqualTo(9);
        server.close();
        JsonNode off =
                start(ModelServerConfig.defaults()).get("/get_server_info").json();
        assertThat(off.get("output_lengths").isNull()).isTrue();
    }
}
