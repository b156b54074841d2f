package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.core.ByteLevelTokenizer;

/**
 * vLLM's top logprob alternatives over real HTTP ({@code prompt_logprobs: k}, {@code logprobs: k}
 * on {@code /v1/completions}): per position the chosen token first, then the k most likely tokens
 * of the model's distribution, ranked 1..k; the chosen token's logprob is what k = 0 reports.
 */
class VllmTopLogprobsTest {
    private static final int[] PROMPT = {257, 117, 115, 101, 114, 10, 104, 105};
    private static final String IDS = "[257,117,115,101,114,10,104,105]";
    private static final TinyLmWeights W = TinyLmWeights.seeded(3, 0.8, 0.85f);
    private static final int V = TinyLmWeights.VOCAB_SIZE;

    private ModelServer server;

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    private ServerClient start() throws IOException {
        server = ModelServer.start(ModelServerConfig.defaults().withWeights(W));
        return new ServerClient(server);
    }

    private static JsonNode ok(ServerClient.Reply r) {
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        return r.json();
    }

    private static List<String> keys(JsonNode object) {
        List<String> out = new ArrayList<>();
        object.fieldNames().forEachRemaining(out::add);
        return out;
    }

    /** The 1-based place of {@code token} in {@code model}, ties by lower id. */
    private static int rank(double[] model, int token) {
        int rank = 1;
        for (int j = 0; j < V; j++) {
            if (model[j] > model[token] || (model[j] == model[token] && j < token)) {
                rank++;
            }
        }
        return rank;
    }

    private static int argmax(double[] model) {
        int best = 0;
        for (int j = 1; j < V; j++) {
            if (model[j] > model[best]) {
                best = j;
            }
        }
        return best;
    }

    private static double mass(JsonNode entries, boolean objects) {
        double sum = 0;
        for (JsonNode e : entries) {
            sum += Math.exp(objects ? e.get("logprob").asDouble() : e.asDouble());
        }
        return sum;
    }

    @Test
    void promptLogprobsOneListsThePromptTokenThenTheModelsMostLikelyToken() throws IOException {
        ServerClient c = start();
        String scoring = "{\"prompt\":" + IDS + ",\"max_tokens\":0,\"temperature\":0.7,\"echo\":true,"
                + "\"logprobs\":0,\"return_tokens_as_token_ids\":true,\"stream\":false,\"prompt_logprobs\":";
        JsonNode k0 = ok(c.post("/v1/completions", scoring + "0}")).at("/choices/0/prompt_logprobs");
        JsonNode k1 = ok(c.post("/v1/completions", scoring + "1}")).at("/choices/0/prompt_logprobs");

        assertThat(k1.size()).isEqualTo(PROMPT.length);
        assertThat(k1.get(0).isNull()).isTrue();
        int withAlternative = 0;
        for (int t = 1; t < PROMPT.length; t++) {
            String id = Integer.toString(PROMPT[t]);
            double[] model = TinyLm.nextTokenLogprobs(W, Arrays.copyOf(PROMPT, t), 0.7);
            JsonNode at = k1.get(t);
            JsonNode chosen = at.get(id);
            assertThat(keys(at).get(0)).as("the prompt token comes first").isEqualTo(id);
            assertThat(chosen.get("logprob").asDouble())
                    .as("position %d: what prompt_logprobs 0 reports", t)
                    .isEqualTo(k0.get(t).get(id).get("logprob").asDouble());
            assertThat(chosen.get("rank").asInt()).isEqualTo(rank(model, PROMPT[t]));
            assertThat(k0.get(t).get(id).get("rank").asInt()).isEqualTo(rank(model, PROMPT[t]));
            assertThat(chosen.get("decoded_token").asText())
                    .isEqualTo(ByteLevelTokenizer.INSTANCE.decode(new int[] {PROMPT[t]}, false));
            int best = argmax(model);
            if (best == PROMPT[t]) {
                assertThat(keys(at)).containsExactly(id);
                assertThat(chosen.get("rank").asInt()).isEqualTo(1);
            } else {
                withAlternative++;
                assertThat(keys(at)).containsExactly(id, Integer.toString(best));
                JsonNode top = at.get(Integer.toString(best));
                assertThat(top.get("rank").asInt()).isEqualTo(1);
                assertThat(top.get("logprob").asDouble()).isCloseTo(model[best], within(1e-9));
                assertThat(top.get("logprob").asDouble())
                        .isGreaterThanOrEqualTo(chosen.get("logprob").asDouble());
                assertThat(chosen.get("rank").asInt()).isGreaterThan(1);
            }
            assertThat(mass(at, true)).isLessThanOrEqualTo(1 + 1e-9);
        }
        assertThat(withAlternative)
                .as("positions whose token is not the model's favourite")
                .isPositive();
    }

    @Test
    void logprobsTwoListsTheSampledTokenAndTheTwoMostLikelyTokensAtEachPosition() throws IOException {
        ServerClient c = start();
        String generation = "{\"prompt\":" + IDS + ",\"max_tokens\":10,\"temperature\":0.7,\"seed\":11,"
                + "\"ignore_eos\":true,\"return_tokens_as_token_ids\":true,\"stream\":false,\"logprobs\":";
        JsonNode zero = ok(c.post("/v1/completions", generation + "0}")).at("/choices/0/logprobs");
        JsonNode two = ok(c.post("/v1/completions", generation + "2}")).at("/choices/0/logprobs");

        assertThat(two.get("tokens"))
                .as("the same seed samples the same tokens")
                .isEqualTo(zero.get("tokens"));
        assertThat(two.get("token_logprobs")).isEqualTo(zero.get("token_logprobs"));
        int n = two.get("tokens").size();
        assertThat(n).isEqualTo(10);
        int[] sequence = Arrays.copyOf(PROMPT, PROMPT.length + n);
        for (int i = 0; i < n; i++) {
            String token = two.get("tokens").get(i).asText();
            sequence[PROMPT.length + i] = Integer.parseInt(token.substring("token_id:".length()));
            double logprob = two.get("token_logprobs").get(i).asDouble();
            assertThat(keys(zero.get("top_logprobs").get(i))).containsExactly(token);
            assertThat(zero.get("top_logprobs").get(i).get(token).asDouble()).isEqualTo(logprob);

            JsonNode top = two.get("top_logprobs").get(i);
            List<String> names = keys(top);
            assertThat(names.get(0)).as("the sampled token comes first").isEqualTo(token);
            assertThat(top.get(token).asDouble()).isEqualTo(logprob);
            double[] model = TinyLm.nextTokenLogprobs(W, Arrays.copyOf(sequence, PROMPT.length + i), 0.7);
            List<Integer> expected = new ArrayList<>();
            for (int r = 0; expected.size() < 2; r++) {
                expected.add(nthMostLikely(model, r));
            }
            List<String> alternatives = new ArrayList<>();
            for (int id : expected) {
                if (!token.equals("token_id:" + id)) {
                    alternatives.add("token_id:" + id);
                }
            }
            assertThat(names.subList(1, names.size()))
                    .as("position %d: the model's two most likely, best first", i)
                    .containsExactlyElementsOf(alternatives);
            double previous = 0;
            for (String name : names.subList(1, names.size())) {
                double value = top.get(name).asDouble();
                assertThat(value).isCloseTo(model[Integer.parseInt(name.substring(9))], within(1e-9));
                assertThat(value).isLessThanOrEqualTo(previous);
                previous = value;
            }
            assertThat(top.get("token_id:" + expected.get(0)).asDouble())
                    .as("nothing above the most likely")
                    .isGreaterThanOrEqualTo(logprob);
            assertThat(mass(top, false)).isLessThanOrEqualTo(1 + 1e-9);
        }
        JsonNode offsets = two.get("text_offset");
        assertThat(offsets.size()).isEqualTo(n);
        assertThat(offsets.get(0).asInt()).isZero();
        for (int i = 1; i < n; i++) {
            assertThat(offsets.get(i).asInt() - offsets.get(i - 1).asInt())
                    .isEqualTo(two.get("tokens").get(i - 1).asText().length());
        }
    }

    private static int nthMostLikely(double[] model, int n) {
        Integer[] order = new Integer[V];
        for (int j = 0; j < V; j++) {
            order[j] = j;
        }
        Arrays.sort(order, (a, b) -> Double.compare(model[b], model[a]));
        return order[n];
    }

    @Test
    void anEchoedPromptCarriesItsPromptAlternativesInTopLogprobs() throws IOException {
        ServerClient c = start();
        JsonNode choice = ok(c.post(
                        "/v1/completions",
                        "{\"prompt\":" + IDS + ",\"max_tokens\":2,\"temperature\":1.0,\"seed\":3,\"echo\":true,"
                                + "\"ignore_eos\":true,\"logprobs\":1,\"return_tokens_as_token_ids\":true}"))
                .at("/choices/0");
        JsonNode logprobs = choice.get("logprobs");
        JsonNode prompt = choice.get("prompt_logprobs");
        assertThat(logprobs.get("tokens").size()).isEqualTo(PROMPT.length + 2);
        assertThat(logprobs.get("top_logprobs").get(0).isNull()).isTrue();
        assertThat(logprobs.get("token_logprobs").get(0).isNull()).isTrue();
        assertThat(prompt.size()).as("echo asks for the prompt's logprobs too").isEqualTo(PROMPT.length);
        for (int t = 1; t < PROMPT.length; t++) {
            JsonNode top = logprobs.get("top_logprobs").get(t);
            List<String> expected = new ArrayList<>();
            for (String id : keys(prompt.get(t))) {
                expected.add("token_id:" + id);
                assertThat(top.get("token_id:" + id).asDouble())
                        .isEqualTo(prompt.get(t).get(id).get("logprob").asDouble());
            }
            assertThat(keys(top)).containsExactlyElementsOf(expected);
            assertThat(keys(top)).hasSizeBetween(1, 2);
        }
        for (int i = PROMPT.length; i < PROMPT.length + 2; i++) {
            assertThat(keys(logprobs.get("top_logprobs").get(i))).hasSizeBetween(1, 2);
        }
    }

    @Test
    void aRequestAbortedBeforeItsPrefillAnswersAbortWithNoPromptLogprobs() throws IOException {
        ServerClient c = start();
        assertThat(c.post("/pause_generation", "{\"mode\":\"in_place\"}").status())
                .isEqualTo(200);
        CompletableFuture<ServerClient.Reply> held = c.postAsync(
                "/v1/completions",
                "{\"prompt\":" + IDS + ",\"max_tokens\":0,\"echo\":true,\"logprobs\":1,\"prompt_logprobs\":1,"
                        + "\"return_tokens_as_token_ids\":true}");
        ServerClient.await(
                "the request to be held before its prefill",
                () -> server.stats().queued() == 1);

        assertThat(c.post("/abort_request", "{\"abort_all\":true}").status()).isEqualTo(200);

        JsonNode choice = ok(ServerClient.join(held)).at("/choices/0");
        assertThat(choice.get("finish_reason").asText()).isEqualTo("abort");
        assertThat(choice.get("prompt_logprobs").isNull())
                .as("the prompt was never scored")
                .isTrue();
        JsonNode logprobs = choice.get("logprobs");
        assertThat(logprobs.get("tokens").size()).isEqualTo(PROMPT.length);
        for (int t = 0; t < PROMPT.length; t++) {
            assertThat(logprobs.get("token_logprobs").get(t).isNull()).isTrue();
            assertThat(logprobs.get("top_logprobs").get(t).isNull()).isTrue();
        }
    }

    @Test
    void countsAboveTheLimitAreRefusedNamingTheFieldAndTheLimit() throws IOException {
        ServerClient c = start();
        for (String field : List.of("logprobs", "prompt_logprobs")) {
            String body = "{\"prompt\":" + IDS + ",\"max_tokens\":1,\"" + field + "\":";
            ServerClient.Reply above = c.post("/v1/completions", body + "21}");
            assertThat(above.status()).isEqualTo(400);
            assertThat(above.json().at("/error/message").asText())
                    .startsWith(field + " = 21")
                    .contains("limit of 20");
            ServerClient.Reply whole = c.post("/v1/completions", body + "-1}");
            assertThat(whole.status()).isEqualTo(400);
            assertThat(whole.json().at("/error/message").asText())
                    .startsWith(field + " = -1")
                    .contains("whole vocabulary")
                    .contains("limit of 20");
            ServerClient.Reply negative = c.post("/v1/completions", body + "-2}");
            assertThat(negative.status()).isEqualTo(400);
            assertThat(negative.json().at("/error/message").asText()).startsWith(field + " must be");
            assertThat(c.post("/v1/completions", body + "20}").status())
                    .as("the limit itself is served")
                    .isEqualTo(200);
        }
    }
}
