package org.rollout.agent;

import java.util.Objects;

/**
 * Splits a model's thinking block off its answer: the text before {@code </think>} (without a
 * leading {@code <think>}) is the reasoning, the text after it the answer. This is the form of
 * Qwen3, QwQ and DeepSeek-R1, whose chat templates may open the block in the prompt, so the
 * completion holds only its end. An opened block that never closes (generation ran out) is all
 * reasoning and no answer. Text without {@code </think>} and not starting with {@code <think>} is
 * all answer.
 *
 * <pre>
 *   "&lt;think&gt;\n2+2 is 4\n&lt;/think&gt;\n\nIt is 4."  → reasoning "2+2 is 4", content "It is 4."
 * </pre>
 *
 * <p>Only the returned texts are split: the recorded interaction keeps the generated tokens, the
 * thinking block included, exactly as sampled. Stateless.
 */
final class ReasoningParser {
    static final String OPEN = "<think>";
    static final String CLOSE = "</think>";

    private ReasoningParser() {}

    /** @param reasoning the thinking text, stripped, or null when there is no block */
    record Split(String reasoning, String content) {}

    static Split split(String text) {
        Objects.requireNonNull(text, "text");
        int close = text.indexOf(CLOSE);
        String lead = text.stripLeading();
        if (close < 0) {
            if (lead.startsWith(OPEN)) {
                return new Split(lead.substring(OPEN.length()).strip(), "");
            }
            return new Split(null, text);
        }
        String before = text.substring(0, close).stripLeading();
        if (before.startsWith(OPEN)) {
            before = before.substring(OPEN.length());
        }
        return new Split(before.strip(), text.substring(close + CLOSE.length()).stripLeading());
    }
}
