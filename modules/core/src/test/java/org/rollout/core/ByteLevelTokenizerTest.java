package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.testing.Gen;
import org.rollout.testing.Property;

class ByteLevelTokenizerTest {
    private final ByteLevelTokenizer tok = ByteLevelTokenizer.INSTANCE;

    @Test
    void encodesAsciiAsBytesAndNamedTokensAsSingleIds() {
        assertThat(tok.encode("hi<|im_end|>")).containsExactly('h', 'i', ByteLevelTokenizer.IM_END);
        assertThat(tok.encode("<tool_call>x</tool_call>"))
                .containsExactly(ByteLevelTokenizer.TOOL_CALL_START, 'x', ByteLevelTokenizer.TOOL_CALL_END);
    }

    @Test
    void encodesMultiByteUtf8AsOneIdPerByte() {
        assertThat(tok.encode("é")).containsExactly(0xC3, 0xA9);
    }

    @Test
    void skipSpecialTokensDropsOnlySpecialOnes() {
        int[] ids = tok.encode("<|im_start|>a<tool_call>b<|im_end|>");
        assertThat(tok.decode(ids, true)).isEqualTo("a<tool_call>b");
        assertThat(tok.decode(ids, false)).isEqualTo("<|im_start|>a<tool_call>b<|im_end|>");
    }

    @Test
    void theBytesAroundASkippedSpecialTokenDecodeAsOneRun() {
        // "é" is C3 A9: split by a skipped <|endoftext|> it is still one character, as in Hugging Face.
        int[] ids = {0xC3, ByteLevelTokenizer.ENDOFTEXT, 0xA9};
        assertThat(tok.decode(ids, true)).isEqualTo("é");
        assertThat(tok.decode(ids, false)).isEqualTo("\uFFFD<|endoftext|>\uFFFD");
    }

    @Test
    void invalidUtf8DecodesToReplacementCharacter() {
        assertThat(tok.decode(new int[] {'a', 0xFF, 'b'}, false)).isEqualTo("a\uFFFDb");
    }

    @Test
    void decodeRejectsIdsOutsideTheVocabularyNamingTheId() {
        assertThatThrownBy(() -> tok.decode(new int[] {1, 999}, false)).hasMessageContaining("token id 999");
    }

    @Test
    void eosIsImEndAndPadIsEndOfText() {
        assertThat(tok.eosTokenId()).isEqualTo(258);
        assertThat(tok.padTokenId()).isEqualTo(256);
        assertThat(tok.vocabSize()).isEqualTo(263);
    }

    @Test
    void chatTemplateIsChatMl() {
        String prompt = tok.applyChatTemplate(
                List.of(Map.of("role", "system", "content", "Be brief."), Map.of("role", "user", "content", "2+2?")),
                true);
        assertThat(prompt)
                .isEqualTo("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n"
                        + "<|im_start|>assistant\n");
    }

    @Test
    void chatTemplateJoinsTextPartsAndNamesABadMessage() {
        assertThat(tok.applyChatTemplate(
                        List.of(Map.of("role", "user", "content", List.of(Map.of("type", "text", "text", "a"), "b"))),
                        false))
                .isEqualTo("<|im_start|>user\nab<|im_end|>\n");
        assertThatThrownBy(() -> tok.applyChatTemplate(List.of(Map.of("content", "x")), false))
                .hasMessage("messages[0] has no string 'role'");
    }

    @Test
    void encodeThenDecodeIsIdentityForAnyString() {
        // Any well-formed string: an unpaired surrogate has no UTF-8 encoding, so no byte-level round trip.
        Property.forAll(
                "encodeThenDecodeIsIdentityForAnyString",
                1_000,
                Gen.unicodeStrings(0, 255),
                text -> assertThat(tok.decode(tok.encode(text), false)).isEqualTo(text));
    }

    @Test
    void rendersToolsPassedAsATemplateVariableIntoTheSystemTurn() {
        List<Map<String, Object>> messages = List.of(Map.of("role", "user", "content", "1+2?"));
        List<Map<String, Object>> tools = List.of(Map.of("type", "function", "function", Map.of("name", "add")));
        assertThat(tok.applyChatTemplate(messages, true, Map.of("tools", tools, "enable_thinking", false)))
                .isEqualTo(ChatMl.render(messages, tools, true))
                .contains("\"name\": \"add\"");
    }
}
