package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.api.Tokenizer;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.testengine.ScriptedEngine;

/** Each family's tool-call format, with examples written as the families document them. */
class ToolCallFormatTest {

    @Test
    void aLlama3JsonAnswerIsOneCallWithItsParametersAsArguments() {
        ToolCallParser.Parsed p = ToolCallFormat.LLAMA3_JSON.parse(
                "{\"name\": \"get_current_conditions\", \"parameters\": {\"location\": \"San Francisco, CA\","
                        + " \"unit\": \"Fahrenheit\"}}");
        assertThat(p.toolCalls()).singleElement().satisfies(c -> {
            assertThat(c.name()).isEqualTo("get_current_conditions");
            assertThat(c.arguments()).isEqualTo("{\"location\":\"San Francisco, CA\",\"unit\":\"Fahrenheit\"}");
        });
        assertThat(p.content()).isNull();
    }

    @Test
    void aLlama3PythonTagAndSeveralCallsJoinedBySemicolonsAreRead() {
        ToolCallParser.Parsed p = ToolCallFormat.LLAMA3_JSON.parse(
                "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"x\": 1}}; {\"name\": \"b\", \"parameters\": {}}");
        assertThat(p.toolCalls()).extracting(ToolCallParser.ToolCall::name).containsExactly("a", "b");
    }

    @Test
    void llama3PlainTextIsContentNotACall() {
        ToolCallParser.Parsed p = ToolCallFormat.LLAMA3_JSON.parse("The weather is {mild} today.");
        assertThat(p.hasToolCalls()).isFalse();
        assertThat(p.content()).isEqualTo("The weather is {mild} today.");
    }

    @Test
    void aMistralToolCallsArrayBecomesCallsAfterTheContent() {
        ToolCallParser.Parsed p = ToolCallFormat.MISTRAL.parse(
                "Let me check. [TOOL_CALLS] [{\"name\": \"get_current_weather\", \"arguments\": {\"location\":"
                        + " \"Paris, France\", \"format\": \"celsius\"}}]");
        assertThat(p.toolCalls()).singleElement().satisfies(c -> {
            assertThat(c.name()).isEqualTo("get_current_weather");
            assertThat(c.arguments()).isEqualTo("{\"location\":\"Paris, France\",\"format\":\"celsius\"}");
        });
        assertThat(p.content()).isEqualTo("Let me check.");
    }

    @Test
    void theNewerMistralNameArgsFormIsReadCallByCall() {
        ToolCallParser.Parsed p = ToolCallFormat.MISTRAL.parse(
                "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[ARGS]{}");
        assertThat(p.toolCalls()).extracting(ToolCallParser.ToolCall::name).containsExactly("get_weather", "get_time");
        assertThat(p.toolCalls().getFirst().arguments()).isEqualTo("{\"city\":\"Paris\"}");
        assertThat(p.content()).isNull();
    }

    @Test
    void aDeepSeekV3CallWithItsFencedJsonIsRead() {
        ToolCallParser.Parsed p = ToolCallFormat.DEEPSEEK.parse(
                "I will look it up.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
                        + "```json\n{\"location\": \"Hangzhou\"}\n```<｜tool▁call▁end｜><｜tool▁call▁begin｜>function"
                        + "<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
        assertThat(p.toolCalls()).extracting(ToolCallParser.ToolCall::name).containsExactly("get_weather", "get_time");
        assertThat(p.toolCalls().getFirst().arguments()).isEqualTo("{\"location\":\"Hangzhou\"}");
        assertThat(p.content()).isEqualTo("I will look it up.");
    }

    @Test
    void aDeepSeekV31CallNamesTheFunctionBeforeTheSeparator() {
        ToolCallParser.Parsed p = ToolCallFormat.DEEPSEEK.parse(
                "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"location\": \"Tokyo\"}"
                        + "<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
        assertThat(p.toolCalls()).singleElement().satisfies(c -> {
            assertThat(c.name()).isEqualTo("get_weather");
            assertThat(c.arguments()).isEqualTo("{\"location\":\"Tokyo\"}");
        });
    }

    @Test
    void aMalformedDeepSeekCallLeavesTheTextAsContent() {
        String text = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{not json"
                + "<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
        assertThat(ToolCallFormat.DEEPSEEK.parse(text).hasToolCalls()).isFalse();
        assertThat(ToolCallFormat.DEEPSEEK.parse(text).content()).isEqualTo(text);
    }

    @Test
    void theFormatIsDetectedFromWhatTheChatTemplateRendersForAToolCall() {
        assertThat(ToolCallFormat.detect(ByteLevelTokenizer.INSTANCE)).isEqualTo(ToolCallFormat.HERMES);
        assertThat(ToolCallFormat.detect(rendering("[INST]probe[/INST][TOOL_CALLS][{\"name\": \"f\"}]</s>")))
                .isEqualTo(ToolCallFormat.MISTRAL);
        assertThat(ToolCallFormat.detect(rendering(
                        "<｜User｜>probe<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f")))
                .isEqualTo(ToolCallFormat.DEEPSEEK);
        assertThat(
                        ToolCallFormat.detect(
                                rendering(
                                        "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"f\", \"parameters\": {\"x\": 1}}")))
                .isEqualTo(ToolCallFormat.LLAMA3_JSON);
    }

    @Test
    void aTemplateThatCannotRenderToolsIsReadAsHermes() {
        Tokenizer plain = rendering(null);
        assertThat(ToolCallFormat.detect(plain)).isEqualTo(ToolCallFormat.HERMES);
    }

    @Test
    void configNamesAreTheFormatsAndAnUnknownOneIsRefused() {
        assertThat(ToolCallFormat.fromConfig("llama3_json")).isEqualTo(ToolCallFormat.LLAMA3_JSON);
        assertThat(ToolCallFormat.fromConfig("qwen25")).isEqualTo(ToolCallFormat.HERMES);
        assertThatThrownBy(() -> ToolCallFormat.fromConfig("pythonic"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("hermes, llama3_json, mistral, deepseek");
    }

    @Test
    void theProxyParsesTheConfiguredFormat() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying("{\"name\": \"add\", \"parameters\": {\"a\": 1}}");
        try (OpenAIProxy proxy = OpenAIProxy.start(
                ProxyConfig.defaults().withToolCallFormat("llama3_json"),
                engine,
                ByteLevelTokenizer.INSTANCE,
                org.rollout.api.GenerationConfig.builder()
                        .maxTokens(2048)
                        .maxNewTokens(128)
                        .build())) {
            ProxySession s = proxy.openSession("1:0", org.rollout.api.Interaction.ChatTemplateType.HF);
            ProxyHttp.Reply r = ProxyHttp.post(
                    s.baseUrl() + "/chat/completions",
                    s.apiKey(),
                    "{\"messages\": [{\"role\": \"user\", \"content\": \"1?\"}], \"tools\": [{\"type\": \"function\","
                            + " \"function\": {\"name\": \"add\"}}]}");
            assertThat(r.body().at("/choices/0/finish_reason").asText()).isEqualTo("tool_calls");
            assertThat(r.body()
                            .at("/choices/0/message/tool_calls/0/function/arguments")
                            .asText())
                    .isEqualTo("{\"a\":1}");
        }
    }

    /** A tokenizer whose chat template renders {@code text} whatever the messages (null: refuses tools). */
    private static Tokenizer rendering(String text) {
        return new Tokenizer() {
            @Override
            public int[] encode(String t) {
                return new int[0];
            }

            @Override
            public String decode(int[] ids, boolean skipSpecialTokens) {
                return "";
            }

            @Override
            public int eosTokenId() {
                return 0;
            }

            @Override
            public int padTokenId() {
                return 0;
            }

            @Override
            public int vocabSize() {
                return 1;
            }

            @Override
            public boolean isSpecial(int id) {
                return false;
            }

            @Override
            public String applyChatTemplate(List<Map<String, Object>> messages, boolean addGenerationPrompt) {
                return "";
            }

            @Override
            public String applyChatTemplate(
                    List<Map<String, Object>> messages, boolean addGenerationPrompt, Map<String, ?> variables) {
                if (text == null) {
                    throw new IllegalArgumentException("this template cannot render tools");
                }
                return text;
            }
        };
    }

    @Test
    void eachFormatsOpeningFollowedByTheRestOfACallParsesAsThatCall() {
        Map<ToolCallFormat, String> restAfterName = Map.of(
                ToolCallFormat.HERMES, "{\"x\": 1}}\n</tool_call>",
                ToolCallFormat.LLAMA3_JSON, "{\"x\": 1}}",
                ToolCallFormat.MISTRAL, "{\"x\": 1}}]",
                ToolCallFormat.DEEPSEEK, "{\"x\": 1}\n```" + ToolCallFormat.DS_CALL_END + "<｜tool▁calls▁end｜>");
        for (ToolCallFormat f : ToolCallFormat.values()) {
            ToolCallParser.Parsed p = f.parse(f.opening("add") + restAfterName.get(f));
            assertThat(p.toolCalls()).as(f.configName()).singleElement().satisfies(c -> {
                assertThat(c.name()).isEqualTo("add");
                assertThat(c.arguments()).isEqualTo("{\"x\":1}");
            });
        }
    }

    @Test
    void eachFormatsOpeningWithoutANameLeavesTheNameToTheModel() {
        Map<ToolCallFormat, String> rest = Map.of(
                ToolCallFormat.HERMES,
                "{\"name\": \"add\", \"arguments\": {}}\n</tool_call>",
                ToolCallFormat.LLAMA3_JSON,
                "add\", \"parameters\": {}}",
                ToolCallFormat.MISTRAL,
                "[{\"name\": \"add\", \"arguments\": {}}]",
                ToolCallFormat.DEEPSEEK,
                "function" + ToolCallFormat.DS_SEP + "add\n```json\n{}\n```" + ToolCallFormat.DS_CALL_END);
        for (ToolCallFormat f : ToolCallFormat.values()) {
            assertThat(f.parse(f.opening(null) + rest.get(f)).toolCalls())
                    .as(f.configName())
                    .extracting(ToolCallParser.ToolCall::name)
                    .containsExactly("add");
        }
    }
}
