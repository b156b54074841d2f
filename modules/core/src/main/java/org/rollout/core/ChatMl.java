package org.rollout.core;

import java.util.List;
import java.util.Map;

/**
 * The ChatML chat template (Qwen's), used by the built-in tokenizer and as the fallback for
 * Hugging Face tokenizers that ship no template.
 *
 * <pre>
 *   &lt;|im_start|&gt;system\nYou are helpful.&lt;|im_end|&gt;\n
 *   &lt;|im_start|&gt;user\nWhat is 2+2?&lt;|im_end|&gt;\n
 *   &lt;|im_start|&gt;assistant\n                       ← with addGenerationPrompt
 * </pre>
 *
 * <p>A message's {@code content} is a string, or a list of parts whose {@code text} fields are
 * joined (OpenAI's content-part form). A message without a string {@code role} is an error that
 * names its index.
 */
public final class ChatMl {
    private ChatMl() {}

    public static String render(List<Map<String, Object>> messages, boolean addGenerationPrompt) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < messages.size(); i++) {
            Map<String, Object> m = messages.get(i);
            if (m == null || !(m.get("role") instanceof String role) || role.isEmpty()) {
                throw new IllegalArgumentException("messages[" + i + "] has no string 'role'");
            }
            sb.append("<|im_start|>").append(role).append('\n');
            sb.append(contentText(m.get("content"), i));
            sb.append("<|im_end|>\n");
        }
        if (addGenerationPrompt) {
            sb.append("<|im_start|>assistant\n");
        }
        return sb.toString();
    }

    /** The text of a message's content: a string, a list of text parts, or null (empty). */
    public static String contentText(Object content, int index) {
        if (content == null) {
            return "";
        }
        if (content instanceof String s) {
            return s;
        }
        if (content instanceof List<?> parts) {
            StringBuilder sb = new StringBuilder();
            for (Object p : parts) {
                if (p instanceof Map<?, ?> part && part.get("text") instanceof String t) {
                    sb.append(t);
                } else if (p instanceof String s) {
                    sb.append(s);
                } else {
                    throw new IllegalArgumentException(
                            "messages[" + index + "].content has a part that is not text: " + p);
                }
            }
            return sb.toString();
        }
        throw new IllegalArgumentException(
                "messages[" + index + "].content must be a string or a list of text parts, got "
                        + content.getClass().getSimpleName());
    }
}
