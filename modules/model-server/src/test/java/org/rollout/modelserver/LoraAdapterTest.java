package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * LoRA adapters on the built-in server over real HTTP: SGLang's {@code /load_lora_adapter} and
 * {@code lora_path}, vLLM's {@code /v1/load_lora_adapter} and {@code model}; an adapter (A·B added
 * to the bigram matrix) changes the outputs, and its tokens' logprobs are the adapted model's.
 */
class LoraAdapterTest {
    private static final String IDS = "[257,76,111,114,97,10]";
    private static final int[] PROMPT = {257, 76, 111, 114, 97, 10};
    private static final TinyLmWeights BASE = TinyLmWeights.seeded(3, 0.5, 0.85f);

    @TempDir
    Path dir;

    private ModelServer server;

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    private ServerClient start() throws IOException {
        server = ModelServer.start(ModelServerConfig.defaults().withWeights(BASE));
        return new ServerClient(server);
    }

    private static String generate(String lora) {
        return "{\"input_ids\":" + IDS + ",\"sampling_params\":{\"max_new_tokens\":20,\"temperature\":1.0,"
                + "\"ignore_eos\":true,\"sampling_seed\":9},\"return_logprob\":true"
                + (lora == null ? "" : ",\"lora_path\":\"" + lora + "\"") + "}";
    }

    private static int[] tokens(JsonNode reply) {
        JsonNode ids = reply.get("output_ids");
        int[] out = new int[ids.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ids.get(i).asInt();
        }
        return out;
    }

    @Test
    void anAdapterChangesTheOutputsAndItsLogprobsAreTheAdaptedModels() throws IOException {
        ServerClient c = start();
        LoraAdapter a1 = LoraAdapter.seeded(1, 4, 0.5, 1.0f);
        LoraAdapter a2 = LoraAdapter.seeded(2, 4, 0.5, 1.0f);
        a1.write(dir.resolve("a1.json"));
        a2.write(dir.resolve("a2.json"));
        assertThat(c.post(
                                "/load_lora_adapter",
                                "{\"lora_name\":\"a1\",\"lora_path\":\"" + dir.resolve("a1.json") + "\"}")
                        .status())
                .isEqualTo(200);
        assertThat(c.post(
                                "/v1/load_lora_adapter",
                                "{\"lora_name\":\"a2\",\"lora_path\":\"" + dir.resolve("a2.json") + "\"}")
                        .status())
                .isEqualTo(200);

        int[] base = tokens(c.post("/generate", generate(null)).json());
        JsonNode adapted = c.post("/generate", generate("a1")).json();
        int[] withA1 = tokens(adapted);
        int[] withA2 = tokens(c.post("/generate", generate("a2")).json());

        assertThat(withA1).isNotEqualTo(base).isNotEqualTo(withA2);
        int[] sequence = GenerateEndpointTest.concat(PROMPT, withA1);
        double[] expected = TinyLm.sequenceLogprobs(a1.applyTo(BASE), sequence, PROMPT.length, 1.0);
        JsonNode lps = adapted.at("/meta_info/output_token_logprobs");
        for (int i = 0; i < withA1.length; i++) {
            assertThat(lps.get(i).get(0).asDouble()).isCloseTo(expected[i], within(1e-6));
        }

        // vLLM names the adapter as the model; the same seed gives the same tokens.
        JsonNode v = c.post(
                        "/v1/completions",
                        "{\"prompt\":" + IDS + ",\"max_tokens\":20,\"temperature\":1.0,\"ignore_eos\":true,\"seed\":9,"
                                + "\"model\":\"a1\",\"logprobs\":0,\"return_tokens_as_token_ids\":true}")
                .json();
        JsonNode vt = v.at("/choices/0/logprobs/tokens");
        for (int i = 0; i < withA1.length; i++) {
            assertThat(vt.get(i).asText()).isEqualTo("token_id:" + withA1[i]);
        }
    }

    @Test
    void anUnloadedOrUnknownAdapterIsRefusedNamingTheField() throws IOException {
        ServerClient c = start();
        LoraAdapter.seeded(1, 2, 0.5, 1.0f).write(dir.resolve("a1.json"));
        c.post("/load_lora_adapter", "{\"lora_name\":\"a1\",\"lora_path\":\"" + dir.resolve("a1.json") + "\"}");
        assertThat(c.post("/generate", generate("a1")).status()).isEqualTo(200);
        assertThat(c.post("/unload_lora_adapter", "{\"lora_name\":\"a1\"}").status())
                .isEqualTo(200);

        ServerClient.Reply gone = c.post("/generate", generate("a1"));
        assertThat(gone.status()).isEqualTo(400);
        assertThat(gone.body()).contains("lora_path 'a1' is not a loaded LoRA adapter (loaded: [])");
        ServerClient.Reply again = c.post("/unload_lora_adapter", "{\"lora_name\":\"a1\"}");
        assertThat(again.status()).isEqualTo(400);
        assertThat(again.body()).contains("lora_name 'a1' is not a loaded LoRA adapter");
        ServerClient.Reply missing = c.post(
                "/load_lora_adapter", "{\"lora_name\":\"x\",\"lora_path\":\"" + dir.resolve("none.json") + "\"}");
        assertThat(missing.status()).isEqualTo(400);
        assertThat(missing.body()).contains("LoRA adapter " + dir.resolve("none.json"));
    }
}
