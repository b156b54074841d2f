package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Prompt-token logprobs over real HTTP: SGLang's {@code logprob_start_len} ({@code
 * meta_info.input_token_logprobs}), vLLM's {@code echo} and {@code prompt_logprobs}; each value is
 * the model's {@code log p(prompt[t] | prompt[<t])} at the request's temperature.
 */
class PromptLogprobsTest {
    private static final int[] PROMPT = {257, 117, 115, 101, 114, 10};
    private static final String IDS = "[257,117,115,101,114,10]";
    private static final TinyLmWeights W = TinyLmWeights.seeded(3, 0.8, 0.85f);

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

    @Test
    void sglangReportsInputLogprobsFromTheStartPositionTheFirstPositionNull() throws IOException {
        ServerClient c = start();
        double[] reference = TinyLm.sequenceLogprobs(W, PROMPT, 1, 0.7);

        JsonNode all = c.post(
                        "/generate",
                        "{\"input_ids\":" + IDS + ",\"sampling_params\":{\"max_new_tokens\":0,\"temperature\":0.7},"
                                + "\"return_logprob\":true,\"logprob_start_len\":0}")
                .json();
        JsonNode list = all.at("/meta_info/input_token_logprobs");
        assertThat(list.size()).isEqualTo(PROMPT.length);
        assertThat(list.get(0).get(0).isNull()).isTrue();
        for (int t = 1; t < PROMPT.length; t++) {
            assertThat(list.get(t).get(1).asInt()).isEqualTo(PROMPT[t]);
            assertThat(list.get(t).get(0).asDouble()).isCloseTo(reference[t - 1], within(1e-9));
        }
        assertThat(all.at("/meta_info/completion_tokens").asInt()).isZero();
        assertThat(all.at("/meta_info/finish_reason/type").asText()).isEqualTo("length");

        JsonNode from3 = c.post(
                        "/generate",
                        "{\"input_ids\":" + IDS + ",\"sampling_params\":{\"max_new_tokens\":2,\"temperature\":0.7,"
                                + "\"ignore_eos\":true},"
                                + "\"return_logprob\":true,\"logprob_start_len\":3}")
                .json();
        JsonNode tail = from3.at("/meta_info/input_token_logprobs");
        assertThat(tail.size()).isEqualTo(PROMPT.length - 3);
        assertThat(tail.get(0).get(1).asInt()).isEqualTo(PROMPT[3]);
        assertThat(tail.get(0).get(0).asDouble()).isCloseTo(reference[2], within(1e-9));
        assertThat(from3.at("/meta_info/output_token_logprobs").size()).isEqualTo(2);
    }

    @Test
    void aStartBeyondThePromptIsRefusedNamingTheField() throws IOException {
        ServerClient.Reply r = start().post(
                        "/generate",
                        "{\"input_ids\":" + IDS + ",\"sampling_params\":{\"max_new_tokens\":1},"
                                + "\"return_logprob\":true,\"logprob_start_len\":6}");
        assertThat(r.status()).isEqualTo(400);
        assertThat(r.body()).contains("logprob_start_len (6) must be below the prompt length (6)");
    }

    @Test
    void vllmEchoWithoutGenerationAndPromptLogprobsCarryTheSameValues() throws IOException {
        ServerClient c = start();
        double[] reference = TinyLm.sequenceLogprobs(W, PROMPT, 1, 1.0);
        JsonNode reply = c.post(
                        "/v1/completions",
                        "{\"prompt\":" + IDS + ",\"max_tokens\":0,\"temperature\":1.0,\"echo\":true,"
                                + "\"logprobs\":0,\"prompt_logprobs\":0,\"return_tokens_as_token_ids\":true}")
                .json();
        JsonNode choice = reply.at("/choices/0");
        JsonNode echoed = choice.at("/logprobs/token_logprobs");
        assertThat(echoed.size()).isEqualTo(PROMPT.length);
        assertThat(echoed.get(0).isNull()).isTrue();
        assertThat(choice.at("/logprobs/tokens/1").asText()).isEqualTo("token_id:" + PROMPT[1]);
        JsonNode prompt = choice.get("prompt_logprobs");
        assertThat(prompt.get(0).isNull()).isTrue();
        for (int t = 1; t < PROMPT.length; t++) {
            assertThat(echoed.get(t).asDouble()).isCloseTo(reference[t - 1], within(1e-9));
            assertThat(prompt.get(t)
                            .get(Integer.toString(PROMPT[t]))
                            .get("logprob")
                            .asDouble())
                    .isCloseTo(reference[t - 1], within(1e-9));
        }
        assertThat(choice.get("text").asText())
                .as("the echoed prompt is the whole text")
                .endsWith("user\n");
    }
}
