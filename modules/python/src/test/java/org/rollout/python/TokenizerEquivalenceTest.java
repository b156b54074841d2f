package org.rollout.python;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.rollout.api.Tokenizer;
import org.rollout.core.Tokenizers;
import org.rollout.workflows.demo.LetterTask;

/**
 * The tokenizer a Python workflow is given ({@code EngineTokenizer}, asking the engine over the
 * worker pool's socket) gives exactly the engine's ids and texts, both ways, for every prompt of
 * the demo (the 26 letters) and of the template's datasets: encode, the chat template with a
 * generation prompt (as text and as ids, also through {@code hf_utils.apply_chat_template} and with
 * {@code enable_thinking}), {@code __call__}, decode with and without special tokens, and the
 * special ids. Real Python ({@code /usr/bin/python3}), real Unix socket.
 */
class TokenizerEquivalenceTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path ROOT =
            Path.of(System.getProperty("user.dir"), "..", "..").toAbsolutePath().normalize();

    static List<String> prompts() throws IOException {
        List<String> prompts = new ArrayList<>();
        for (char c = 'a'; c <= 'z'; c++) {
            prompts.add(LetterTask.prompt(c));
        }
        for (String f : List.of("train.jsonl", "eval.jsonl")) {
            for (String line : Files.readAllLines(
                    ROOT.resolve("examples/user-workflow/data").resolve(f))) {
                if (!line.isBlank()) {
                    prompts.add(JSON.readTree(line).path("question").asText());
                }
            }
        }
        return prompts;
    }

    @ParameterizedTest
    @ValueSource(strings = {"examples/user-workflow/tokenizer", "builtin"})
    void pythonGetsTheEnginesIdsAndTextsForEveryPrompt(String tokenizerPath) throws Exception {
        Tokenizer engine = Tokenizers.load(
                tokenizerPath.equals("builtin")
                        ? tokenizerPath
                        : ROOT.resolve(tokenizerPath).toString());
        List<String> prompts = prompts();
        assertThat(prompts).hasSize(26 + 60);
        JsonNode got;
        try (TokenizerServer server = new TokenizerServer(engine)) {
            ProcessBuilder pb = new ProcessBuilder(
                    PythonWorkflowTest.PYTHON,
                    PythonWorkflowTest.TOYS.resolve("tokenize_prompts.py").toString());
            pb.environment().put("PYTHONPATH", PythonWorkflowTest.CLIENT.toString());
            pb.environment().put("ROLLOUT_TOKENIZER_SOCKET", server.socket().toString());
            pb.redirectError(ProcessBuilder.Redirect.INHERIT);
            Process p = pb.start();
            p.getOutputStream().write(JSON.writeValueAsBytes(Map.of("prompts", prompts)));
            p.getOutputStream().close();
            byte[] out = p.getInputStream().readAllBytes();
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).isZero();
            got = JSON.readTree(new String(out, StandardCharsets.UTF_8));
        }
        assertThat(got.path("eos").asInt()).isEqualTo(engine.eosTokenId());
        assertThat(got.path("vocab").asInt()).isEqualTo(engine.vocabSize());
        if (engine.padTokenId() < 0) {
            assertThat(got.path("pad").isNull()).isTrue();
        } else {
            assertThat(got.path("pad").asInt()).isEqualTo(engine.padTokenId());
        }
        for (int i = 0; i < prompts.size(); i++) {
            String prompt = prompts.get(i);
            JsonNode row = got.path("rows").get(i);
            List<Map<String, Object>> messages = List.of(Map.of("role", "user", "content", prompt));
            String chatText = engine.applyChatTemplate(messages, true);
            int[] chatIds = engine.encode(engine.applyChatTemplate(messages, true, Map.of("enable_thinking", false)));
            assertThat(WireResults.ints(row.path("encode")))
                    .as("encode %s", prompt)
                    .isEqualTo(engine.encode(prompt));
            assertThat(WireResults.ints(row.path("call")))
                    .as("__call__ %s", prompt)
                    .isEqualTo(engine.encode(prompt));
            assertThat(row.path("chat_text").asText())
                    .as("chat text %s", prompt)
                    .isEqualTo(chatText);
            assertThat(WireResults.ints(row.path("chat_ids")))
                    .as("chat ids %s", prompt)
                    .isEqualTo(chatIds);
            assertThat(WireResults.ints(row.path("chat_ids_hf_utils"))).isEqualTo(chatIds);
            assertThat(row.path("decode_chat").asText()).isEqualTo(engine.decode(chatIds, false));
            assertThat(row.path("decode_chat_skip").asText()).isEqualTo(engine.decode(chatIds, true));
        }
    }
}
