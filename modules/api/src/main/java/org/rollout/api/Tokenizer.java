package org.rollout.api;

import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * Text to token ids and back, plus the chat template that turns OpenAI-style messages into a
 * prompt. The engine itself works on token ids only; workflows use a tokenizer to build prompts and
 * decode completions, and the dumper to write readable text.
 *
 * <p>Implementations in the engine: the built-in byte-level tokenizer (256 byte ids plus named
 * special tokens, ChatML template) and the Hugging Face {@code tokenizer.json} tokenizer chosen by
 * {@code tokenizer_path}. Thread-safe.
 */
public interface Tokenizer {

    /** Token ids for {@code text}; special-token strings such as {@code <|im_end|>} map to their ids. */
    int[] encode(String text);

    /** The text of {@code ids}; with {@code skipSpecialTokens} special tokens are left out. */
    String decode(int[] ids, boolean skipSpecialTokens);

    /** The end-of-sequence id generation stops on. */
    int eosTokenId();

    /** The padding id, or −1 when the tokenizer has none. */
    int padTokenId();

    /** The number of token ids (the largest id + 1). */
    int vocabSize();

    /** True when {@code id} is a special token. */
    boolean isSpecial(int id);

    /**
     * The prompt text for {@code messages} (each a map with {@code role} and {@code content}),
     * ending with the assistant header when {@code addGenerationPrompt}.
     */
    String applyChatTemplate(List<Map<String, Object>> messages, boolean addGenerationPrompt);

    /**
     * The prompt text for {@code messages} with extra chat-template variables, as Hugging Face's
     * {@code apply_chat_template(..., **kwargs)}: {@code tools} (OpenAI's list of
     * {@code {"type": "function", "function": {…}}}) and model-specific switches such as
     * {@code enable_thinking}. A template ignores the variables it does not read.
     *
     * <p>The default ignores every variable except {@code tools}: a non-empty tool list is an
     * {@link IllegalArgumentException}, because the plain template cannot show tools to the model.
     *
     * @param variables template variables by name; null or empty for none
     * @throws IllegalArgumentException when the template cannot render the messages or the tools
     */
    default String applyChatTemplate(
            List<Map<String, Object>> messages, boolean addGenerationPrompt, Map<String, ?> variables) {
        Object tools = variables == null ? null : variables.get("tools");
        if (tools != null && !(tools instanceof Collection<?> c && c.isEmpty())) {
            throw new IllegalArgumentException("the chat template of " + this + " cannot render tools");
        }
        return applyChatTemplate(messages, addGenerationPrompt);
    }

    /** {@code encode(applyChatTemplate(messages, addGenerationPrompt))}. */
    default int[] encodeChat(List<Map<String, Object>> messages, boolean addGenerationPrompt) {
        return encode(applyChatTemplate(messages, addGenerationPrompt));
    }

    /** {@code encode(applyChatTemplate(messages, addGenerationPrompt, variables))}. */
    default int[] encodeChat(
            List<Map<String, Object>> messages, boolean addGenerationPrompt, Map<String, ?> variables) {
        return encode(applyChatTemplate(messages, addGenerationPrompt, variables));
    }
}
