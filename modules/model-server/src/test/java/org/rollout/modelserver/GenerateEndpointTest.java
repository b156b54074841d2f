package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.rollout.modelserver.ServerClient.generate;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@code POST /generate} over real HTTP: the response shape, the logprobs and every stopping rule. */
class GenerateEndpointTest {
    private static final int EOS = 258;
    private static final int[] PROMPT = {257, 117, 115, 101, 114, 10, 104, 105, 258, 10, 257, 97, 10};
    private final List<ModelServer> servers = new ArrayList<>();

    @AfterEach
    void closeServers() {
        servers.forEach(ModelServer::close);
    }

    private ServerClient start(ModelServerConfig config) throws IOException {
        ModelServer s = ModelServer.start(config);
        servers.add(s);
        return new ServerClient(s);
    }

    private ServerClient start(TinyLmWeights weights) throws IOException {
        return start(ModelServerConfig.defaults().withWeights(weights));
    }

    static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).asInt();
        }
        return out;
    }

    static int[] tokens(JsonNode reply) {
        JsonNode lps = reply.path("meta_info").path("output_token_logprobs");
        int[] out = new int[lps.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = lps.get(i).get(1).asInt();
        }
        return out;
    }

    static double[] logprobs(JsonNode reply) {
        JsonNode lps = reply.path("meta_info").path("output_token_logprobs");
        double[] out = new double[lps.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = lps.get(i).get(0).asDouble();
        }
        return out;
    }

    static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    @Test
    void responseHasSglangShapeWithOneLogprobEntryPerToken() throws IOException {
        ServerClient c = start(ModelServerConfig.defaults().withSeed(3));
        ServerClient.Reply r =
                c.post("/generate", generate("rid-1", PROMPT, "\"max_new_tokens\":12,\"sampling_seed\":1"));
        assertThat(r.status()).isEqualTo(200);
        JsonNode meta = r.json().get("meta_info");
        assertThat(meta.get("id").asText()).isEqualTo("rid-1");
        assertThat(meta.get("finish_reason").get("type").asText()).isEqualTo("length");
        assertThat(meta.get("finish_reason").get("length").asInt()).isEqualTo(12);
        assertThat(meta.get("prompt_tokens").asInt()).isEqualTo(PROMPT.length);
        assertThat(meta.get("completion_tokens").asInt()).isEqualTo(12);
        assertThat(meta.get("weight_version").asText()).isEqualTo("0");
        assertThat(meta.get("output_token_logprobs")).hasSize(12);
        assertThat(meta.get("output_token_logprobs").get(0).get(2).isNull()).isTrue();
        assertThat(ints(r.json().get("output_ids"))).containsExactly(tokens(r.json()));
        assertThat(r.json().get("text").isTextual()).isTrue();
    }

    @Test
    void reportedLogprobsAreTheModelsTemperatureScaledLogprobsOfTheSampledTokens() throws IOException {
        TinyLmWeights w = TinyLmWeights.seeded(5, 0.8, 0.85f);
        ServerClient c = start(w);
        for (double t : new double[] {1.0, 0.7}) {
            ServerClient.Reply r = c.post(
                    "/generate",
                    generate(null, PROMPT, "\"max_new_tokens\":20,\"sampling_seed\":9,\"temperature\":" + t));
            int[] out = tokens(r.json());
            double[] expected = TinyLm.sequenceLogprobs(w, concat(PROMPT, out), PROMPT.length, t);
            double[] got = logprobs(r.json());
            for (int i = 0; i < out.length; i++) {
                assertThat(got[i]).as("T=%s position %d", t, i).isCloseTo(expected[i], within(1e-9));
            }
        }
    }

    @Test
    void greedyFollowsTheArgmaxAndReportsUnscaledLogprobs() throws IOException {
        TinyLmWeights w = TinyLmWeights.seeded(6, 0.8, 0.85f);
        ServerClient c = start(w);
        String body = generate(null, PROMPT, "\"max_new_tokens\":15,\"temperature\":0.0");
        ServerClient.Reply a = c.post("/generate", body);
        ServerClient.Reply b = c.post("/generate", body);
        assertThat(tokens(a.json())).containsExactly(tokens(b.json()));
        int[] context = PROMPT;
        double[] got = logprobs(a.json());
        int[] out = tokens(a.json());
        for (int i = 0; i < out.length; i++) {
            double[] lp = TinyLm.nextTokenLogprobs(w, context, 1.0);
            int argmax = 0;
            for (int j = 1; j < lp.length; j++) {
                if (lp[j] > lp[argmax]) {
                    argmax = j;
                }
            }
            assertThat(out[i]).isEqualTo(argmax);
            assertThat(got[i]).isCloseTo(lp[argmax], within(1e-9));
            context = concat(context, new int[] {argmax});
        }
    }

    @Test
    void sameSeedSamePromptSameWeightsGiveTheSameOutput() throws IOException {
        ServerClient c = start(ModelServerConfig.defaults().withSeed(12));
        String seeded = generate(null, PROMPT, "\"max_new_tokens\":32,\"sampling_seed\":77,\"top_p\":0.9,\"top_k\":40");
        JsonNode a = c.post("/generate", seeded).json();
        JsonNode b = c.post("/generate", seeded).json();
        assertThat(tokens(a)).containsExactly(tokens(b));
        assertThat(logprobs(a)).containsExactly(logprobs(b));
        String unseeded = generate(null, PROMPT, "\"max_new_tokens\":32");
        assertThat(tokens(c.post("/generate", unseeded).json()))
                .as("without a seed each request draws its own")
                .isNotEqualTo(tokens(c.post("/generate", unseeded).json()));
    }

    @Test
    void eosEndsWithStopMatchingTheEosIdAndIsLeftOutOfText() throws IOException {
        ServerClient c = start(TestWeights.zero().favour(EOS).build(0));
        JsonNode r = c.post("/generate", generate(null, PROMPT, "\"max_new_tokens\":5"))
                .json();
        assertThat(tokens(r)).containsExactly(EOS);
        assertThat(r.at("/meta_info/finish_reason/type").asText()).isEqualTo("stop");
        assertThat(r.at("/meta_info/finish_reason/matched").asInt()).isEqualTo(EOS);
        assertThat(r.get("text").asText()).isEmpty();
    }

    @Test
    void ignoreEosGeneratesUpToMaxNewTokens() throws IOException {
        ServerClient c = start(TestWeights.zero().favour(EOS).build(0));
        JsonNode r = c.post("/generate", generate(null, PROMPT, "\"max_new_tokens\":5,\"ignore_eos\":true"))
                .json();
        assertThat(tokens(r)).containsExactly(EOS, EOS, EOS, EOS, EOS);
        assertThat(r.at("/meta_info/finish_reason/type").asText()).isEqualTo("length");
    }

    @Test
    void stopTokenIdsEndTheGenerationUnlessIgnoreEosAsInSglang() throws IOException {
        ServerClient c = start(TestWeights.zero().favour('A').build(0));
        JsonNode r = c.post("/generate", generate(null, PROMPT, "\"max_new_tokens\":5,\"stop_token_ids\":[256,65]"))
                .json();
        assertThat(tokens(r)).containsExactly('A');
        assertThat(r.at("/meta_info/finish_reason/matched").asInt()).isEqualTo('A');
        assertThat(r.get("text").asText())
                .as("the matched stop token is trimmed")
                .isEmpty();
        JsonNode ignored = c.post(
                        "/generate",
                        generate(null, PROMPT, "\"max_new_tokens\":3,\"stop_token_ids\":[65],\"ignore_eos\":true"))
                .json();
        assertThat(tokens(ignored)).containsExactly('A', 'A', 'A');
        assertThat(ignored.at("/meta_info/finish_reason/type").asText()).isEqualTo("length");
    }

    @Test
    void minNewTokensMasksEosAndStopIdsUntilReached() throws IOException {
        ServerClient c = start(TestWeights.zero().favour(EOS).build(0));
        JsonNode r = c.post(
                        "/generate",
                        generate(null, PROMPT, "\"max_new_tokens\":10,\"min_new_tokens\":3,\"stop_token_ids\":[256]"))
                .json();
        int[] out = tokens(r);
        assertThat(out).hasSize(4);
        assertThat(Arrays.copyOf(out, 3)).doesNotContain(EOS, 256);
        assertThat(out[3]).isEqualTo(EOS);
        assertThat(r.at("/meta_info/finish_reason/type").asText()).isEqualTo("stop");
        assertThat(logprobs(r)[0])
                .as("masked EOS leaves the rest near-uniform")
                .isCloseTo(-Math.log(261), within(1e-6));
    }

    @Test
    void stopStringEndsOnTheDecodedTextAndIsCutFromText() throws IOException {
        ServerClient c = start(TestWeights.zero()
                .follow('x', 'a')
                .follow('a', 'b')
                .follow('b', 'a')
                .build(0));
        JsonNode r = c.post("/generate", generate(null, new int[] {'x'}, "\"max_new_tokens\":20,\"stop\":[\"ba\"]"))
                .json();
        assertThat(tokens(r)).containsExactly('a', 'b', 'a');
        assertThat(r.at("/meta_info/finish_reason/type").asText()).isEqualTo("stop");
        assertThat(r.at("/meta_info/finish_reason/matched").asText()).isEqualTo("ba");
        assertThat(r.get("text").asText()).isEqualTo("a");
        JsonNode kept = c.post(
                        "/generate",
                        generate(null, new int[] {'x'}, "\"max_new_tokens\":20,\"stop\":\"ba\",\"no_stop_trim\":true"))
                .json();
        assertThat(kept.get("text").asText()).isEqualTo("aba");
    }

    @Test
    void maxNewTokensBoundsTheOutputAndAStopTokenInTheLastSlotReportsLengthAsSglangDoes() throws IOException {
        ServerClient c =
                start(TestWeights.zero().follow('x', 'a').follow('a', EOS).build(0));
        JsonNode r = c.post("/generate", generate(null, new int[] {'x'}, "\"max_new_tokens\":2"))
                .json();
        assertThat(tokens(r)).containsExactly('a', EOS);
        assertThat(r.at("/meta_info/finish_reason/type").asText()).isEqualTo("length");
        JsonNode zero = c.post("/generate", generate(null, new int[] {'x'}, "\"max_new_tokens\":0"))
                .json();
        assertThat(tokens(zero)).isEmpty();
        assertThat(zero.at("/meta_info/finish_reason/type").asText()).isEqualTo("length");
    }

    @Test
    void frequencyPenaltyLowersEachTokensLogitByPenaltyTimesItsCount() throws IOException {
        TinyLmWeights w = TinyLmWeights.seeded(7, 0.8, 0.85f);
        ServerClient c = start(w);
        double penalty = 1.5;
        JsonNode r = c.post(
                        "/generate",
                        generate(
                                null,
                                PROMPT,
                                "\"max_new_tokens\":25,\"sampling_seed\":3,\"frequency_penalty\":" + penalty))
                .json();
        int[] out = tokens(r);
        double[] got = logprobs(r);
        int[] counts = new int[TinyLmWeights.VOCAB_SIZE];
        int[] context = PROMPT;
        for (int i = 0; i < out.length; i++) {
            double[] logits = TinyLm.logits(w, context);
            for (int j = 0; j < logits.length; j++) {
                logits[j] -= penalty * counts[j];
            }
            double expected = logits[out[i]] - TokenSampler.logSumExp(logits, 1.0);
            assertThat(got[i]).as("position %d", i).isCloseTo(expected, within(1e-9));
            counts[out[i]]++;
            context = concat(context, new int[] {out[i]});
        }
    }

    @Test
    void sixtyFourConcurrentRequestsAllCompleteWithTheOutputsTheyGetAlone() throws IOException {
        ServerClient c = start(ModelServerConfig.defaults().withSeed(21).withMaxRunningRequests(32));
        List<String> bodies = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            int[] prompt = concat(PROMPT, new int[] {'0' + i % 10, 'a' + i % 26});
            bodies.add(generate(
                    "c" + i, prompt, "\"max_new_tokens\":" + (20 + i) + ",\"ignore_eos\":true,\"sampling_seed\":" + i));
        }
        List<CompletableFuture<ServerClient.Reply>> futures = new ArrayList<>();
        for (String b : bodies) {
            futures.add(c.postAsync("/generate", b));
        }
        for (int i = 0; i < 64; i++) {
            ServerClient.Reply concurrent = ServerClient.join(futures.get(i));
            assertThat(concurrent.status()).isEqualTo(200);
            assertThat(concurrent.json().at("/meta_info/id").asText()).isEqualTo("c" + i);
            assertThat(concurrent.json().at("/meta_info/completion_tokens").asInt())
                    .isEqualTo(20 + i);
            ServerClient.Reply alone =
                    c.post("/generate", bodies.get(i).replace("\"c" + i + "\"", "\"alone" + i + "\""));
            assertThat(tokens(concurrent.json())).containsExactly(tokens(alone.json()));
            assertThat(logprobs(concurrent.json())).containsExactly(logprobs(alone.json()));
        }
    }
}
