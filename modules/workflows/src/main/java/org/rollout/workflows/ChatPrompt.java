package org.rollout.workflows;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.rollout.api.Tokenizer;
import org.rollout.api.WorkflowContext;

/**
 * How the built-in workflows turn a data item into prompt token ids: AReaL's {@code
 * data_extract_prompt_fn} (the chat messages under a key) and {@code get_input_ids_fn} (the chat
 * template with the generation prompt, and {@code enable_thinking} for templates that read it).
 * Stateless.
 */
final class ChatPrompt {
    /** AReaL's default prompt key. */
    static final String DEFAULT_KEY = "messages";
    /** A plain-text prompt is also accepted under this key when the default key is absent. */
    static final String TEXT_KEY = "prompt";

    private ChatPrompt() {}

    /**
     * The chat messages of {@code data}: the list under {@code key}, or a string there (or, when
     * {@code key} is the default and absent, under {@code "prompt"}) as one user message.
     *
     * @throws IllegalArgumentException naming the key and the task when the item has no usable prompt
     */
    static List<Map<String, Object>> messages(Map<String, Object> data, String key) {
        Object value = data.get(key);
        String usedKey = key;
        if (value == null && key.equals(DEFAULT_KEY) && data.get(TEXT_KEY) instanceof String) {
            value = data.get(TEXT_KEY);
            usedKey = TEXT_KEY;
        }
        if (value instanceof String text) {
            return List.of(Map.of("role", "user", "content", text));
        }
        if (value instanceof List<?> list && !list.isEmpty()) {
            List<Map<String, Object>> out = new ArrayList<>(list.size());
            for (int i = 0; i < list.size(); i++) {
                if (!(list.get(i) instanceof Map<?, ?> m)) {
                    throw new IllegalArgumentException(where() + "data item's '" + usedKey + "[" + i
                            + "]' is not a message object (a map with role and content)");
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> message = (Map<String, Object>) m;
                out.add(message);
            }
            return out;
        }
        throw new IllegalArgumentException(where() + "data item has no prompt: expected a non-empty list of chat"
                + " messages or a string under '" + key + "'"
                + (key.equals(DEFAULT_KEY) ? " (or a string under '" + TEXT_KEY + "')" : "") + ", got "
                + (value == null ? "nothing" : value.getClass().getSimpleName()) + " (keys: " + data.keySet() + ")");
    }

    /** The prompt ids: the chat template with the generation prompt. */
    static int[] inputIds(Tokenizer tokenizer, List<Map<String, Object>> messages, boolean enableThinking) {
        // Templates of thinking models (Qwen3) read enable_thinking; others ignore it, as in AReaL.
        return tokenizer.encodeChat(messages, true, Map.of("enable_thinking", enableThinking));
    }

    private static String where() {
        String key = WorkflowContext.current().episodeKey();
        return key.isEmpty() ? "" : "task " + key + ": ";
    }
}
