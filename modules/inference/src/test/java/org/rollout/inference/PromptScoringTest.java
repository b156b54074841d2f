package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.inference.Bodies.utf8;

import org.junit.jupiter.api.Test;
import org.rollout.config.Backend;
import org.rollout.config.ServerAddress;

/** Reading vLLM scoring answers: each position's logprob is the sent token's entry, whatever else is listed. */
class PromptScoringTest {
    private static final ServerAddress SERVER = new ServerAddress("127.0.0.1", 8000);
    private static final String RID = "score-1";
    private static final int[] TOKENS = {257, 104, 105};

    private static float[] vllm(String promptLogprobs) {
        return PromptScoring.parse(
                        Backend.VLLM,
                        utf8("{\"choices\":[{\"prompt_logprobs\":" + promptLogprobs + "}]}"),
                        SERVER,
                        RID,
                        TOKENS)
                .logprobs();
    }

    @Test
    void anAnswerWithTopAlternativesGivesTheSentTokensLogprobs() {
        // prompt_logprobs: 2 as vLLM answers it: the token sent first, then the two most likely
        // (which may include it); the sent token need not be the most likely.
        float[] lp = vllm("[null,"
                + "{\"104\":{\"logprob\":-2.5,\"rank\":3,\"decoded_token\":\"h\"},"
                + "\"32\":{\"logprob\":-0.5,\"rank\":1,\"decoded_token\":\" \"},"
                + "\"101\":{\"logprob\":-1.5,\"rank\":2,\"decoded_token\":\"e\"}},"
                + "{\"105\":{\"logprob\":-0.25,\"rank\":1,\"decoded_token\":\"i\"},"
                + "\"33\":{\"logprob\":-2.0,\"rank\":2,\"decoded_token\":\"!\"}}]");
        assertThat(lp).containsExactly(-2.5f, -0.25f);
    }

    @Test
    void anAnswerWhoseAlternativesLackTheSentTokenIsMalformedNamingThePosition() {
        assertThatThrownBy(() -> vllm("[null,"
                        + "{\"32\":{\"logprob\":-0.5,\"rank\":1},\"101\":{\"logprob\":-1.5,\"rank\":2}},"
                        + "{\"105\":{\"logprob\":-0.25,\"rank\":1}}]"))
                .isInstanceOf(MalformedResponseException.class)
                .hasMessageContaining("choices[0].prompt_logprobs[1]")
                .hasMessageContaining("(104)");
    }
}
