package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ToolCallParserTest {

    @Test
    void aQwenToolCallBlockBecomesAToolCallWithCompactArguments() {
        ToolCallParser.Parsed p = ToolCallParser.parse(
                "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>");
        assertThat(p.toolCalls()).hasSize(1);
        assertThat(p.toolCalls().get(0).name()).isEqualTo("add");
        assertThat(p.toolCalls().get(0).arguments()).isEqualTo("{\"a\":1,\"b\":2}");
        assertThat(p.toolCalls().get(0).id()).matches("call_[0-9a-f]{24}");
        assertThat(p.content()).isNull();
    }

    @Test
    void textOutsideTheBlocksIsTheTrimmedContent() {
        ToolCallParser.Parsed p = ToolCallParser.parse(
                "Let me add.\n<tool_call>{\"name\":\"add\",\"arguments\":{}}</tool_call>\n<tool_call>{\"name\":\"mul\"}"
                        + "</tool_call> done");
        assertThat(p.toolCalls()).extracting(ToolCallParser.ToolCall::name).containsExactly("add", "mul");
        assertThat(p.toolCalls().get(1).arguments()).isEqualTo("{}");
        assertThat(p.content()).isEqualTo("Let me add.\n\n done");
    }

    @Test
    void stringArgumentsAreKeptAsTheyAre() {
        ToolCallParser.Parsed p = ToolCallParser.parse(
                "<tool_call>{\"name\": \"calc\", \"arguments\": \"{\\\"e\\\": \\\"1+2\\\"}\"}</tool_call>");
        assertThat(p.toolCalls().get(0).arguments()).isEqualTo("{\"e\": \"1+2\"}");
    }

    @Test
    void parametersIsAcceptedForArguments() {
        ToolCallParser.Parsed p =
                ToolCallParser.parse("<tool_call>{\"name\": \"f\", \"parameters\": {\"x\": 1}}</tool_call>");
        assertThat(p.toolCalls().get(0).arguments()).isEqualTo("{\"x\":1}");
    }

    @Test
    void aMalformedBlockStaysAsText() {
        String text = "Try <tool_call>{\"name\": \"add\", \"arguments\": {</tool_call> ok";
        ToolCallParser.Parsed p = ToolCallParser.parse(text);
        assertThat(p.hasToolCalls()).isFalse();
        assertThat(p.content()).isEqualTo(text);
    }

    @Test
    void aBlockWithoutANameStaysAsTextBesideAValidOne() {
        ToolCallParser.Parsed p = ToolCallParser.parse(
                "<tool_call>{\"arguments\": {}}</tool_call><tool_call>{\"name\": \"ok\", \"arguments\": {}}</tool_call>");
        assertThat(p.toolCalls()).extracting(ToolCallParser.ToolCall::name).containsExactly("ok");
        assertThat(p.content()).isEqualTo("<tool_call>{\"arguments\": {}}</tool_call>");
    }

    @Test
    void anUnclosedBlockStaysAsText() {
        ToolCallParser.Parsed p = ToolCallParser.parse("<tool_call>{\"name\": \"add\", \"arguments\": {}}");
        assertThat(p.hasToolCalls()).isFalse();
        assertThat(p.content()).isEqualTo("<tool_call>{\"name\": \"add\", \"arguments\": {}}");
    }

    @Test
    void plainTextIsUnchanged() {
        assertThat(ToolCallParser.parse("  hello  ").content()).isEqualTo("  hello  ");
        assertThat(ToolCallParser.parse("").content()).isEmpty();
    }
}
