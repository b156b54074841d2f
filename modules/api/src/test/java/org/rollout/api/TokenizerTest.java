package org.rollout.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TokenizerTest {

    /** One id per character; the template joins the contents. */
    private static final Tokenizer PLAIN = new Tokenizer() {
        @Override
        public int[] encode(String text) {
            return text.chars().toArray();
        }

        @Override
        public String decode(int[] ids, boolean skipSpecialTokens) {
            return new String(ids, 0, ids.length);
        }

        @Override
        public int eosTokenId() {
            return 0;
        }

        @Override
        public int padTokenId() {
            return -1;
        }

        @Override
        public int vocabSize() {
            return 0x110000;
        }

        @Override
        public boolean isSpecial(int id) {
            return false;
        }

        @Override
        public String applyChatTemplate(List<Map<String, Object>> messages, boolean addGenerationPrompt) {
            StringBuilder sb = new StringBuilder();
            messages.forEach(m -> sb.append(m.get("content")).append('|'));
            return addGenerationPrompt ? sb.append('>').toString() : sb.toString();
        }

        @Override
        public String toString() {
            return "plain";
        }
    };

    private static final List<Map<String, Object>> MESSAGES = List.of(Map.of("role", "user", "content", "hi"));

    @Test
    void theDefaultTemplateIgnoresVariablesItDoesNotRead() {
        assertThat(PLAIN.applyChatTemplate(MESSAGES, true, Map.of("enable_thinking", false)))
                .isEqualTo("hi|>");
        assertThat(PLAIN.encodeChat(MESSAGES, true, Map.of("enable_thinking", false)))
                .containsExactly('h', 'i', '|', '>');
    }

    @Test
    void theDefaultTemplateAcceptsAnEmptyToolList() {
        assertThat(PLAIN.applyChatTemplate(MESSAGES, false, Map.of("tools", List.of())))
                .isEqualTo("hi|");
    }

    @Test
    void theDefaultTemplateRefusesToolsItCannotShow() {
        List<Map<String, Object>> tools = List.of(Map.of("type", "function"));
        assertThatThrownBy(() -> PLAIN.applyChatTemplate(MESSAGES, true, Map.of("tools", tools)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("the chat template of plain cannot render tools");
    }
}
