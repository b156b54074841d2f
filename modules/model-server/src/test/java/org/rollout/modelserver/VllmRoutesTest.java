package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.rollout.modelserver.GenerateEndpointTest.concat;
import static org.rollout.modelserver.ServerClient.await;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** AReaL's vLLM-extension routes over the same engine, over real HTTP. */
class VllmRoutesTest {
    private static final int EOS = 258;
    private static final String PROMPT = "[257,117,115,101,114,10]";
    private static final int[] PROMPT_IDS = {257, 117, 115, 101, 114, 10};

    @TempDir
    Path dir;

    private ModelServer server;

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    private ServerClient start(ModelServerConfig config) throws IOException {
        server = ModelServer.start(config);
        return new ServerClient(server);
    }

    private static String completion(String extra) {
        return "{\"prompt\":" + PROMPT + ",\"top_p\":1.0,\"top_k\":100000000,\"temperature\":1.0,"
                + "\"stop_token_ids\":[256,258],\"ignore_eos\":false,\"skip_special_tokens\":true,"
                + "\"frequency_penalty\":0.0,\"return_tokens_as_token_ids\":true,\"logprobs\":0,"
                + "\"use_beam_search\":false,\"stream\":false," + extra + "}";
    }

    private static int[] tokens(JsonNode reply) {
        JsonNode t = reply.at("/choices/0/logprobs/tokens");
        int[] out = new int[t.size()];
        for (int i = 0; i < out.length; i++) {
            String s = t.get(i).asText();
            assertThat(s).startsWith("token_id:");
            out[i] = Integer.parseInt(s.substring("token_id:".length()));
        }
        return out;
    }

    @Test
    void completionsReturnTokenIdStringsWithTheModelsLogprobs() throws IOException {
        TinyLmWeights w = TinyLmWeights.seeded(3, 0.8, 0.85f);
        ServerClient c = start(ModelServerConfig.defaults().withWeights(w));
        ServerClient.Reply r =
                c.post("/v1/completions", completion("\"max_tokens\":12,\"seed\":7,\"ignore_eos\":true"));
        assertThat(r.status()).isEqualTo(200);
        JsonNode choice = r.json().at("/choices/0");
        assertThat(choice.get("finish_reason").asText()).isEqualTo("length");
        int[] out = tokens(r.json());
        assertThat(out).hasSize(12);
        JsonNode lps = choice.at("/logprobs/token_logprobs");
        double[] expected = TinyLm.sequenceLogprobs(w, concat(PROMPT_IDS, out), PROMPT_IDS.length, 1.0);
        for (int i = 0; i < out.length; i++) {
            assertThat(lps.get(i).asDouble()).isCloseTo(expected[i], within(1e-9));
        }
        assertThat(r.json().at("/usage/completion_tokens").asInt()).isEqualTo(12);
        assertThat(r.json().at("/usage/prompt_tokens").asInt()).isEqualTo(6);
        ServerClient.Reply again =
                c.post("/v1/completions", completion("\"max_tokens\":12,\"seed\":7,\"ignore_eos\":true"));
        assertThat(tokens(again.json())).as("seed reproduces").containsExactly(out);
    }

    @Test
    void stopRulesFollowVllmEosInTheLastSlotIsStopAndIgnoreEosKeepsStopIds() throws IOException {
        ServerClient c = start(ModelServerConfig.defaults()
                .withWeights(TestWeights.zero().follow(10, 'a').follow('a', EOS).build(0)));
        JsonNode last =
                c.post("/v1/completions", completion("\"max_tokens\":2")).json();
        assertThat(tokens(last)).containsExactly('a', EOS);
        assertThat(last.at("/choices/0/finish_reason").asText()).isEqualTo("stop");
        assertThat(last.at("/choices/0/stop_reason").isNull())
                .as("EOS has no stop_reason")
                .isTrue();

        server.close();
        c = start(ModelServerConfig.defaults()
                .withWeights(TestWeights.zero().favour('A').build(0)));
        String body = completion("\"max_tokens\":5")
                .replace("\"ignore_eos\":false", "\"ignore_eos\":true")
                .replace("[256,258]", "[65]");
        JsonNode stopped = c.post("/v1/completions", body).json();
        assertThat(tokens(stopped)).containsExactly('A');
        assertThat(stopped.at("/choices/0/stop_reason").asInt()).isEqualTo('A');
    }

    @Test
    void arealPauseAbortsInFlightAndCompletionsWaitUntilContinue() throws IOException {
        ServerClient c = start(ModelServerConfig.defaults()
                .withLatency(new LatencyModel(Duration.ZERO, Duration.ofMillis(1), Duration.ZERO)));
        CompletableFuture<ServerClient.Reply> running = c.postAsync(
                "/v1/completions",
                completion("\"max_tokens\":1000000,\"ignore_eos\":true").replace("[256,258]", "[]"));
        await("the completion to be decoding", () -> server.stats().tokensGenerated() > 5);
        assertThat(c.post("/areal_pause_generation", "{}").json().get("success").asBoolean())
                .isTrue();
        JsonNode aborted = ServerClient.join(running).json();
        assertThat(aborted.at("/choices/0/finish_reason").asText()).isEqualTo("abort");
        assertThat(tokens(aborted).length).isPositive();
        assertThat(aborted.at("/choices/0/logprobs/token_logprobs").size()).isEqualTo(tokens(aborted).length);

        CompletableFuture<ServerClient.Reply> blocked =
                // No stop token ids either: a sampled one would end it with "stop" before its 4 tokens.
                c.postAsync(
                        "/v1/completions",
                        completion("\"max_tokens\":4,\"ignore_eos\":true").replace("[256,258]", "[]"));
        await("the completion to wait in the queue", () -> server.stats().queued() == 1);
        assertThat(blocked).isNotDone();
        c.post("/areal_continue_generation", "{}");
        assertThat(ServerClient.join(blocked)
                        .json()
                        .at("/choices/0/finish_reason")
                        .asText())
                .isEqualTo("length");
    }

    @Test
    void arealUpdateWeightsLoadsTheFileAndServesItsVersion() throws IOException {
        ServerClient c = start(ModelServerConfig.defaults());
        Path file = dir.resolve("w5.rlm");
        TinyLmWeights.seeded(50).withVersion(5).write(file);
        ServerClient.Reply ok = c.post("/areal_update_weights", "{\"model_path\":\"" + file + "\"}");
        assertThat(ok.status()).isEqualTo(200);
        assertThat(ok.json().get("success").asBoolean()).isTrue();
        assertThat(c.get("/get_model_info").json().get("weight_version").asText())
                .isEqualTo("5");
        ServerClient.Reply bad = c.post("/areal_update_weights", "{\"model_path\":\"" + dir.resolve("none") + "\"}");
        assertThat(bad.status()).isEqualTo(400);
        assertThat(bad.json().get("message").asText())
                .contains(dir.resolve("none").toString());
        assertThat(server.weightVersion()).isEqualTo(5);
    }

    @Test
    void unsupportedVllmOptionsAreRefusedNamingThem() throws IOException {
        ServerClient c = start(ModelServerConfig.defaults());
        ServerClient.Reply text = c.post("/v1/completions", "{\"prompt\":\"hello\",\"max_tokens\":3}");
        assertThat(text.status()).isEqualTo(400);
        assertThat(text.json().at("/error/message").asText()).contains("prompt").contains("token ids");
        ServerClient.Reply top = c.post("/v1/completions", "{\"prompt\":[1],\"logprobs\":21}");
        assertThat(top.status()).isEqualTo(400);
        assertThat(top.json().at("/error/message").asText())
                .contains("logprobs = 21")
                .contains("limit of 20");
        ServerClient.Reply beam = c.post("/v1/completions", "{\"prompt\":[1],\"use_beam_search\":true}");
        assertThat(beam.json().at("/error/message").asText()).contains("use_beam_search");
    }

    @Test
    void healthAnswersOnTheSharedEngine() throws IOException {
        ServerClient c = start(ModelServerConfig.defaults());
        assertThat(c.get("/health").status()).isEqualTo(200);
    }
}
