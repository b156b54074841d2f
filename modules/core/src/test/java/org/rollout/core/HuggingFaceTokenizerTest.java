package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.core.TokenizerFixtures.BEGIN_OF_TEXT;
import static org.rollout.core.TokenizerFixtures.ENDOFTEXT;
import static org.rollout.core.TokenizerFixtures.EOT_ID;
import static org.rollout.core.TokenizerFixtures.HELLO;
import static org.rollout.core.TokenizerFixtures.IM_END;
import static org.rollout.core.TokenizerFixtures.IM_START;
import static org.rollout.core.TokenizerFixtures.NEWLINE;
import static org.rollout.core.TokenizerFixtures.SPACE;
import static org.rollout.core.TokenizerFixtures.THINK;
import static org.rollout.core.TokenizerFixtures.USER;
import static org.rollout.core.TokenizerFixtures.VOCAB_SIZE;
import static org.rollout.core.TokenizerFixtures.WORLD;
import static org.rollout.core.TokenizerFixtures.bareTokenizerIn;
import static org.rollout.core.TokenizerFixtures.template;
import static org.rollout.core.TokenizerFixtures.tinyDir;
import static org.rollout.core.TokenizerFixtures.write;
import static org.rollout.core.TokenizerFixtures.writeJson;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.InvalidConfigException;
import org.rollout.testing.Gen;
import org.rollout.testing.Property;

class HuggingFaceTokenizerTest {
    private static final HuggingFaceTokenizer TINY = HuggingFaceTokenizer.load(tinyDir());

    @TempDir
    Path tmp;

    private static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    private static Map<String, Object> message(String role, Object content) {
        return map("role", role, "content", content);
    }

    private HuggingFaceTokenizer tokenizerWithConfig(Map<String, ?> config) {
        Path dir = bareTokenizerIn(tmp.resolve("tok"));
        writeJson(dir.resolve(HuggingFaceTokenizer.TOKENIZER_CONFIG_JSON), config);
        return HuggingFaceTokenizer.load(dir);
    }

    // --- encode / decode ---

    @Test
    void encodesWithoutTheBosThePostProcessorWouldAdd() {
        assertThat(TINY.encode("hello world")).containsExactly(HELLO, SPACE, WORLD);
        assertThat(TINY.encode("hello world")).doesNotContain(BEGIN_OF_TEXT);
    }

    @Test
    void encodesSpecialTokenStringsAsTheirIds() {
        assertThat(TINY.encode("<|im_start|>user\nhello<|im_end|>\n"))
                .containsExactly(IM_START, USER, NEWLINE, HELLO, IM_END, NEWLINE);
    }

    @Test
    void encodesTheEmptyStringToNoIds() {
        assertThat(TINY.encode("")).isEmpty();
    }

    @Test
    void decodeOfEncodeIsTheTextForTheVocabularysCharacters() {
        Property.forAll(
                "decodeOfEncodeIsTheTextForTheVocabularysCharacters",
                200,
                Gen.strings("abcdefghijklmnopqrstuvwxyz \n.?", 0, 40),
                text -> assertThat(TINY.decode(TINY.encode(text), false)).isEqualTo(text));
    }

    @Test
    void decodeKeepsSpecialTokensUnlessSkipped() {
        int[] ids = TINY.encode("<|im_start|>user\n<think>hello<|im_end|>");
        assertThat(TINY.decode(ids, false)).isEqualTo("<|im_start|>user\n<think>hello<|im_end|>");
        assertThat(TINY.decode(ids, true)).isEqualTo("user\n<think>hello");
    }

    @Test
    void decodeRejectsIdsOutsideTheVocabularyNamingTheIdAndTheFile() {
        assertThatThrownBy(() -> TINY.decode(new int[] {HELLO, VOCAB_SIZE}, false))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("token id 107 is outside the vocabulary [0, 107) of " + TINY.tokenizerFile());
        assertThatThrownBy(() -> TINY.decode(new int[] {-1}, true)).hasMessageStartingWith("token id -1 is outside");
    }

    @Test
    void vocabSizeCountsTheAddedTokens() {
        assertThat(TINY.vocabSize()).isEqualTo(VOCAB_SIZE);
    }

    @Test
    void specialIdsAreTheAddedTokensMarkedSpecial() {
        assertThat(TINY.isSpecial(ENDOFTEXT)).isTrue();
        assertThat(TINY.isSpecial(IM_START)).isTrue();
        assertThat(TINY.isSpecial(EOT_ID)).isTrue();
        assertThat(TINY.isSpecial(THINK)).isFalse();
        assertThat(TINY.isSpecial(HELLO)).isFalse();
        assertThat(TINY.isSpecial(-1)).isFalse();
        assertThat(TINY.isSpecial(10_000)).isFalse();
    }

    @Test
    void tokenizerFileIsTheRealPathWhetherGivenTheDirectoryOrTheFile() throws Exception {
        HuggingFaceTokenizer viaFile = HuggingFaceTokenizer.load(tinyDir().resolve("tokenizer.json"));
        assertThat(viaFile.tokenizerFile())
                .isEqualTo(tinyDir().resolve("tokenizer.json").toRealPath());
        assertThat(TINY.tokenizerFile()).isEqualTo(viaFile.tokenizerFile());
        assertThat(viaFile.eosTokenId()).isEqualTo(IM_END); // the config beside the file is read too
    }

    // --- EOS and PAD ---

    @Test
    void eosAsStringAndPadAsAddedTokenObjectFromTokenizerConfig() {
        assertThat(TINY.eosTokenId()).isEqualTo(IM_END);
        assertThat(TINY.padTokenId()).isEqualTo(ENDOFTEXT);
        assertThat(TINY.specialTokens())
                .containsEntry("eos_token", "<|im_end|>")
                .containsEntry("pad_token", "<|endoftext|>")
                .doesNotContainKey("bos_token");
    }

    @Test
    void eosAsAddedTokenObjectAndPadAsString() {
        HuggingFaceTokenizer t = tokenizerWithConfig(
                map("eos_token", map("__type", "AddedToken", "content", "<|eot_id|>"), "pad_token", "<|im_end|>"));
        assertThat(t.eosTokenId()).isEqualTo(EOT_ID);
        assertThat(t.padTokenId()).isEqualTo(IM_END);
    }

    @Test
    void padIsAbsentWhenNotConfigured() {
        HuggingFaceTokenizer t = tokenizerWithConfig(map("eos_token", "<|im_end|>", "pad_token", null));
        assertThat(t.padTokenId()).isEqualTo(-1);
    }

    @Test
    void tokensMissingFromTokenizerConfigComeFromSpecialTokensMap() {
        Path dir = bareTokenizerIn(tmp.resolve("tok"));
        writeJson(dir.resolve("tokenizer_config.json"), map("model_max_length", 10));
        writeJson(
                dir.resolve("special_tokens_map.json"),
                map("eos_token", map("content", "<|eot_id|>"), "pad_token", "<|endoftext|>"));
        HuggingFaceTokenizer t = HuggingFaceTokenizer.load(dir);
        assertThat(t.eosTokenId()).isEqualTo(EOT_ID);
        assertThat(t.padTokenId()).isEqualTo(ENDOFTEXT);
    }

    @Test
    void tokenizerConfigWinsOverSpecialTokensMap() {
        Path dir = bareTokenizerIn(tmp.resolve("tok"));
        writeJson(dir.resolve("tokenizer_config.json"), map("eos_token", "<|im_end|>"));
        writeJson(dir.resolve("special_tokens_map.json"), map("eos_token", "<|eot_id|>"));
        assertThat(HuggingFaceTokenizer.load(dir).eosTokenId()).isEqualTo(IM_END);
    }

    @Test
    void withoutConfigFilesEosIsAKnownAddedTokenAndPadIsAbsent() {
        HuggingFaceTokenizer t = HuggingFaceTokenizer.load(bareTokenizerIn(tmp.resolve("tok")));
        assertThat(t.eosTokenId()).isEqualTo(ENDOFTEXT); // no "</s>"; "<|endoftext|>" is next in line
        assertThat(t.padTokenId()).isEqualTo(-1);
    }

    @Test
    void aTokenizerWithNoEosAnywhereIsRejected() {
        Path dir = tmp.resolve("noeos");
        bareTokenizerIn(dir);
        String json = TokenizerFixtures.read(dir.resolve("tokenizer.json"))
                .replace("<|endoftext|>", "<|x1|>")
                .replace("<|eot_id|>", "<|x2|>");
        write(dir.resolve("tokenizer.json"), json);
        assertThatThrownBy(() -> HuggingFaceTokenizer.load(dir))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("no EOS token: neither tokenizer_config.json nor special_tokens_map.json sets"
                        + " eos_token, and tokenizer.json has none of the added tokens [</s>, <|endoftext|>,");
    }

    @Test
    void anEosStringOutsideTheVocabularyIsRejectedNamingIt() {
        assertThatThrownBy(() -> tokenizerWithConfig(map("eos_token", "</s>")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("eos_token \"</s>\" is not in the vocabulary of tokenizer.json");
    }

    @Test
    void aTokenFieldOfAnotherTypeIsRejectedNamingFieldAndFile() {
        assertThatThrownBy(() -> tokenizerWithConfig(map("eos_token", "<|im_end|>", "pad_token", 5)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("pad_token in tokenizer_config.json must be a string or an object with a"
                        + " string \"content\", got 5");
    }

    // --- chat templates ---

    private static final String QWEN_SYSTEM_DEFAULT = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n";

    @Test
    void tinyConfigEmbedsTheQwenStyleTemplateResource() {
        assertThat(TINY.chatTemplate())
                .hasValueSatisfying(t -> assertThat(t.source()).isEqualTo(template("qwen2.5-style.jinja")));
    }

    @Test
    void qwenStyleTemplateRendersSystemUserAndGenerationPrompt() {
        String prompt = TINY.applyChatTemplate(List.of(message("system", "Be brief."), message("user", "hello")), true);
        assertThat(prompt)
                .isEqualTo("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n"
                        + "<|im_start|>assistant\n");
    }

    @Test
    void qwenStyleTemplateAddsItsDefaultSystemTurnAndNoPromptWhenNotAsked() {
        String prompt = TINY.applyChatTemplate(List.of(message("user", "hello"), message("assistant", "hi!")), false);
        assertThat(prompt)
                .isEqualTo(QWEN_SYSTEM_DEFAULT + "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\nhi!"
                        + "<|im_end|>\n");
    }

    @Test
    void qwenStyleTemplateRendersToolsToolCallsAndFoldedToolResults() {
        Map<String, Object> call = map(
                "type",
                "function",
                "function",
                map("name", "get_weather", "arguments", map("city", "Paris", "days", 2, "scale", 0.5)));
        Map<String, Object> tool = map(
                "type",
                "function",
                "function",
                map(
                        "name",
                        "get_weather",
                        "description",
                        "Weather in a city",
                        "parameters",
                        map(
                                "type",
                                "object",
                                "properties",
                                map("city", map("type", "string"), "days", map("type", "integer")),
                                "required",
                                List.of("city"))));
        List<Map<String, Object>> messages = List.of(
                message("user", "Weather in Paris?"),
                map("role", "assistant", "content", "", "tool_calls", List.of(call)),
                message("tool", "sunny"),
                message("tool", "warm"),
                message("assistant", "Sunny and warm."));

        String prompt = TINY.applyChatTemplate(messages, true, Map.of("tools", List.of(tool)));

        // Rendered by Python's jinja2 3.1.6 configured as transformers configures it.
        assertThat(prompt)
                .isEqualTo("<|im_start|>system\nYou are a helpful assistant.\n\n# Tools\n\nYou may call functions."
                        + " Their signatures are in <tools></tools>:\n<tools>\n{\"type\": \"function\", \"function\":"
                        + " {\"name\": \"get_weather\", \"description\": \"Weather in a city\", \"parameters\":"
                        + " {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\":"
                        + " {\"type\": \"integer\"}}, \"required\": [\"city\"]}}}\n</tools>\n\nReturn each call as"
                        + " JSON inside <tool_call></tool_call>.<|im_end|>\n<|im_start|>user\nWeather in Paris?"
                        + "<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\","
                        + " \"arguments\": {\"city\": \"Paris\", \"days\": 2, \"scale\": 0.5}}\n</tool_call>"
                        + "<|im_end|>\n<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n<tool_response>"
                        + "\nwarm\n</tool_response><|im_end|>\n<|im_start|>assistant\nSunny and warm.<|im_end|>\n"
                        + "<|im_start|>assistant\n");
    }

    @Test
    void encodeChatEncodesTheRenderedTemplate() {
        List<Map<String, Object>> messages = List.of(message("user", "hello"));
        assertThat(TINY.encodeChat(messages, true))
                .containsExactly(TINY.encode(TINY.applyChatTemplate(messages, true)));
        assertThat(TINY.encodeChat(messages, true)).startsWith(IM_START).endsWith(IM_START, 95, NEWLINE);
    }

    private HuggingFaceTokenizer llama() {
        return tokenizerWithConfig(map(
                "bos_token",
                "<|begin_of_text|>",
                "eos_token",
                "<|eot_id|>",
                "chat_template",
                template("llama3-style.jinja")));
    }

    @Test
    void llamaStyleTemplateStartsWithBosAndTrimsContents() {
        String prompt = llama().applyChatTemplate(
                        List.of(message("system", "  Be brief.  "), message("user", " hello ")), true);
        assertThat(prompt)
                .isEqualTo("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nToday Date: 26 Jul 2024"
                        + "\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nhello<|eot_id|>"
                        + "<|start_header_id|>assistant<|end_header_id|>\n\n");
    }

    @Test
    void llamaStyleTemplateRendersAToolCallAndAStructuredToolResultWithAGivenDate() {
        Map<String, Object> call = map(
                "type",
                "function",
                "function",
                map("name", "get_weather", "arguments", map("city", "Paris", "days", 2, "scale", 0.5)));
        List<Map<String, Object>> messages = List.of(
                message("user", "Weather?"),
                map("role", "assistant", "tool_calls", List.of(call)),
                message("tool", map("sky", "sunny", "temp", 21.5)));

        String prompt = llama().applyChatTemplate(messages, true, Map.of("date_string", "02 Dec 2026"));

        assertThat(prompt)
                .isEqualTo("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nToday Date: 02 Dec 2026"
                        + "\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWeather?<|eot_id|>"
                        + "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\","
                        + " \"parameters\": {\"city\": \"Paris\", \"days\": 2, \"scale\": 0.5}}<|eot_id|>"
                        + "<|start_header_id|>ipython<|end_header_id|>\n\n{\"sky\": \"sunny\", \"temp\": 21.5}"
                        + "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    }

    @Test
    void raiseExceptionInTheTemplateFailsNamingTheTemplateAndTheMessage() {
        Map<String, Object> call = map("function", map("name", "f", "arguments", map()));
        List<Map<String, Object>> messages =
                List.of(message("user", "x"), map("role", "assistant", "tool_calls", List.of(call, call)));
        HuggingFaceTokenizer llama = llama();
        assertThatThrownBy(() -> llama.applyChatTemplate(messages, true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(
                        "chat_template of " + llama.tokenizerFile().getParent().resolve("tokenizer_config.json")
                                + " raised an exception: This model only supports single tool-calls at once!");
    }

    @Test
    void theDefaultOfAListOfNamedTemplatesIsUsed() {
        HuggingFaceTokenizer t = tokenizerWithConfig(map(
                "eos_token",
                "<|im_end|>",
                "chat_template",
                List.of(
                        map("name", "tool_use", "template", "tools"),
                        map("name", "default", "template", "{{ messages | length }} {{ eos_token }}"))));
        assertThat(t.applyChatTemplate(List.of(message("user", "a")), false)).isEqualTo("1 <|im_end|>");
    }

    @Test
    void aListOfNamedTemplatesWithoutDefaultIsRejectedNamingThem() {
        assertThatThrownBy(() -> tokenizerWithConfig(map(
                        "eos_token",
                        "<|im_end|>",
                        "chat_template",
                        List.of(map("name", "tool_use", "template", "x"), map("name", "rag", "template", "y")))))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("chat_template in tokenizer_config.json lists templates [tool_use, rag] but none"
                        + " named \"default\"");
    }

    @Test
    void aChatTemplateOfAnotherTypeIsRejected() {
        assertThatThrownBy(() -> tokenizerWithConfig(map("eos_token", "<|im_end|>", "chat_template", 7)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("chat_template in tokenizer_config.json must be a string or a list of"
                        + " {name, template}, got NUMBER");
    }

    @Test
    void aChatTemplateJinjaFileIsPreferredOverTheConfigTemplate() {
        Path dir = bareTokenizerIn(tmp.resolve("tok"));
        writeJson(dir.resolve("tokenizer_config.json"), map("eos_token", "<|im_end|>", "chat_template", "config"));
        write(dir.resolve("chat_template.jinja"), "file:{{ messages[0].content }}");
        assertThat(HuggingFaceTokenizer.load(dir).applyChatTemplate(List.of(message("user", "hi")), true))
                .isEqualTo("file:hi");
    }

    @Test
    void aTemplateThatDoesNotParseIsRejectedAtLoad() {
        assertThatThrownBy(() -> tokenizerWithConfig(map("eos_token", "<|im_end|>", "chat_template", "{% if x %}")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("does not parse: ")
                .hasMessageContaining("endif");
    }

    @Test
    void withoutATemplateTheChatMlFallbackIsUsed() {
        HuggingFaceTokenizer t = tokenizerWithConfig(map("eos_token", "<|im_end|>"));
        List<Map<String, Object>> messages = List.of(message("user", "hello"));
        assertThat(t.chatTemplate()).isEmpty();
        assertThat(t.applyChatTemplate(messages, true)).isEqualTo(ChatMl.render(messages, true));
        assertThat(t.applyChatTemplate(messages, true, Map.of("enable_thinking", false)))
                .isEqualTo(ChatMl.render(messages, true));
    }

    @Test
    void theChatMlFallbackRefusesTools() {
        HuggingFaceTokenizer t = tokenizerWithConfig(map("eos_token", "<|im_end|>"));
        assertThatThrownBy(() -> t.applyChatTemplate(List.of(message("user", "x")), true, Map.of("tools", List.of())))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("the tokenizer at " + t.tokenizerFile()
                        + " has no chat template, and the ChatML fallback cannot render tools");
    }

    @Test
    void toStringNamesFileEosPadAndTemplate() {
        assertThat(TINY.toString())
                .startsWith("HuggingFaceTokenizer{" + TINY.tokenizerFile())
                .contains(
                        "vocab=107", "eos=<|im_end|>(101)", "pad=<|endoftext|>(99)", "chat_template=chat_template of");
    }
}
