package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ReasoningParserTest {

    @Test
    void anAnswerThatOpensAThinkingBlockIsSplitAtItsEnd() {
        ReasoningParser.Split s = ReasoningParser.split("<think>\n2+2 is 4\n</think>\n\nIt is 4.");
        assertThat(s.reasoning()).isEqualTo("2+2 is 4");
        assertThat(s.content()).isEqualTo("It is 4.");
    }

    @Test
    void aBlockOpenedByThePromptEndsTheReasoningAtItsClose() {
        ReasoningParser.Split s = ReasoningParser.split("2+2 is 4\n</think>\n\nIt is 4.", true);
        assertThat(s.reasoning()).isEqualTo("2+2 is 4");
        assertThat(s.content()).isEqualTo("It is 4.");
    }

    @Test
    void aBlockThatNeverClosesIsAllReasoning() {
        ReasoningParser.Split s = ReasoningParser.split("<think>\nstill thinking");
        assertThat(s.reasoning()).isEqualTo("still thinking");
        assertThat(s.content()).isEmpty();
    }

    @Test
    void thinkTagsInsideAnAnswerThatDidNotOpenABlockAreContent() {
        ReasoningParser.Split s = ReasoningParser.split("L<think>x</think>y");
        assertThat(s.reasoning()).isNull();
        assertThat(s.content()).isEqualTo("L<think>x</think>y");
    }

    @Test
    void aPromptEndingInAnOpenThinkTagOpensABlock() {
        assertThat(ReasoningParser.opensBlock("<|im_start|>assistant\n<think>\n"))
                .isTrue();
        assertThat(ReasoningParser.opensBlock("<think>\n\n</think>\n\n")).isFalse();
        assertThat(ReasoningParser.opensBlock("<|im_start|>assistant\n")).isFalse();
    }
}
