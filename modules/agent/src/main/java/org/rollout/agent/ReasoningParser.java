package org.rollout.agent;

import java.util.Objects;

/**
 * Splits a model's thinking block off its answer. A block counts when the answer opens it ({@code
 * <think>} first, after whitespace) or when the prompt already opened it (Qwen3's, QwQ's and
 * DeepSeek-R1's chat templates may end the prompt with {@code <think>}, so the completion holds only
 * the block's end): the text up to {@code </think>} is the reasoning, the text after it the answer.
 * A block that never closes (generation ran out) is all reasoning and no answer. Anything else is
 * all answer, even when a {@code <think>} or {@code </think>} appears inside it.
 *
 * <pre>
 *   "&lt;think&gt;\n2+2 is 4\n&lt;/think&gt;\n\nIt is 4."  → reasoning "2+2 is 4", content "It is 4."
 *   "2+2 is 4\n&lt;/think&gt;\n\nIt is 4." (prompt ends in &lt;think&gt;) → the same
 *   "It is 4. &lt;/think&gt;"                        → no reasoning, content unchanged
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

    /** {@link #split(String, boolean)} for a prompt that did not open a block. */
    static Split split(String text) {
        return split(text, false);
    }

    /**
     * @param text the answer's text
     * @param openedInPrompt whether the prompt ends inside an opened thinking block
     */
    static Split split(String text, boolean openedInPrompt) {
        Objects.requireNonNull(text, "text");
        String lead = text.stripLeading();
        String body;
        if (lead.startsWith(OPEN)) {
            body = lead.substring(OPEN.length());
        } else if (openedInPrompt) {
            body = text;
        } else {
            return new Split(null, text);
        }
        int close = body.indexOf(CLOSE);
        if (close < 0) {
            return new Split(body.strip(), "");
        }
        return new Split(
                body.substring(0, close).strip(),
                body.substring(close + CLOSE.length()).stripLeading());
    }

    /** Whether a prompt's text ends inside an opened thinking block (its last {@code <think>} is not closed). */
    static boolean opensBlock(String promptTail) {
        int open = promptTail.lastIndexOf(OPEN);
        return open >= 0 && promptTail.indexOf(CLOSE, open) < 0;
    }
}
