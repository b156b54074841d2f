package org.rollout.core;

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
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.rollout.api.Tokenizer;

/**
 * The template project's tokenizer directory ({@code examples/user-workflow/tokenizer}) is a Hugging
 * Face model directory that spells the built-in model's vocabulary: loaded through {@code
 * tokenizer_path} it encodes, renders and decodes exactly as the built-in byte-level tokenizer, so
 * the template's job runs a real Hugging Face tokenizer against the built-in model server.
 */
class TemplateTokenizerTest {
    private static final Path TEMPLATE = Path.of("../../examples/user-workflow");
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Tokenizer hf = Tokenizers.load(TEMPLATE.resolve("tokenizer").toString());
    private final Tokenizer builtin = ByteLevelTokenizer.INSTANCE;

    @Test
    void itIsAHuggingFaceTokenizerWithTheBuiltInModelsIdsAndSpecialTokens() {
        assertThat(hf).isInstanceOf(HuggingFaceTokenizer.class);
        assertThat(hf.vocabSize()).isEqualTo(builtin.vocabSize());
        assertThat(hf.eosTokenId()).isEqualTo(builtin.eosTokenId());
        assertThat(hf.padTokenId()).isEqualTo(builtin.padTokenId());
        for (int id = 0; id < builtin.vocabSize(); id++) {
            assertThat(hf.isSpecial(id)).as("special %d", id).isEqualTo(builtin.isSpecial(id));
        }
    }

    @Test
    void everyPromptOfTheTemplatesDatasetRendersAndEncodesAsTheBuiltInOne() throws IOException {
        int prompts = 0;
        for (String file : List.of("data/train.jsonl", "data/eval.jsonl")) {
            for (String line : Files.readAllLines(TEMPLATE.resolve(file), StandardCharsets.UTF_8)) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode item = JSON.readTree(line);
                List<Map<String, Object>> messages = List.of(
                        Map.of("role", "user", "content", item.get("question").asText()));
                for (boolean generationPrompt : new boolean[] {true, false}) {
                    String text = hf.applyChatTemplate(messages, generationPrompt);
                    assertThat(text).isEqualTo(builtin.applyChatTemplate(messages, generationPrompt));
                    assertThat(hf.encode(text)).as(text).isEqualTo(builtin.encode(text));
                }
                prompts++;
            }
        }
        assertThat(prompts).isGreaterThanOrEqualTo(20);
        List<Map<String, Object>> turns = List.of(
                Map.of("role", "system", "content", "Answer briefly."),
                Map.of("role", "user", "content", "Héllo, 世界 🎉?"),
                Map.of("role", "assistant", "content", "<think>\nsum</think>\n42"));
        assertThat(hf.encodeChat(turns, true)).isEqualTo(builtin.encodeChat(turns, true));
    }

    @Test
    void textAndNamedTokensEncodeAndDecodeAsTheBuiltInOne() {
        Random random = new Random(7);
        String[] pieces = {
            "What is 3 + 4?",
            " ",
            "\n",
            "\t",
            "é",
            "世界",
            "🎉",
            "\u0000",
            "<|im_end|>",
            "<|im_start|>",
            "<tool_call>",
            "</tool_call>",
            "<think>",
            "</think>",
            "<|endoftext|>",
            "<|im_",
            "<",
            "|",
            "ÿ",
            "Ā"
        };
        for (int round = 0; round < 300; round++) {
            StringBuilder sb = new StringBuilder();
            int n = random.nextInt(12);
            for (int i = 0; i < n; i++) {
                sb.append(pieces[random.nextInt(pieces.length)]);
            }
            String text = sb.toString();
            int[] ids = builtin.encode(text);
            assertThat(hf.encode(text)).as("encode %s", text).isEqualTo(ids);
            for (boolean skip : new boolean[] {false, true}) {
                assertThat(hf.decode(ids, skip)).as("decode %s", text).isEqualTo(builtin.decode(ids, skip));
            }
        }
    }

    @Test
    void whatTheBuiltInModelSamplesDecodesAsTheBuiltInOneWhereverTheBytesAreWholeCharacters() {
        // The model samples any id of its vocabulary. Runs of bytes that are valid UTF-8 and the named
        // tokens decode alike; where bytes are not valid UTF-8 each decoder puts U+FFFD, as many
        // as its library's replacement rule gives, so only the text around them is compared.
        Random random = new Random(11);
        for (int round = 0; round < 500; round++) {
            List<Integer> sampled = new ArrayList<>();
            int n = 1 + random.nextInt(40);
            for (int i = 0; i < n; i++) {
                sampled.add(random.nextInt(builtin.vocabSize()));
            }
            int[] ids = sampled.stream().mapToInt(Integer::intValue).toArray();
            for (boolean skip : new boolean[] {false, true}) {
                String expected = builtin.decode(ids, skip);
                String actual = hf.decode(ids, skip);
                assertThat(actual.replaceAll("\uFFFD+", "\uFFFD"))
                        .as("decode %s", sampled)
                        .isEqualTo(expected.replaceAll("\uFFFD+", "\uFFFD"));
            }
        }
    }
}
