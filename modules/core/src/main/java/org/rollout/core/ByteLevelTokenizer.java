package org.rollout.core;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.rollout.api.Tokenizer;

/**
 * The built-in tokenizer: one id per byte of UTF-8 (0–255) plus named tokens from 256 on. It needs
 * no files, and the built-in model server's vocabulary is exactly this one.
 *
 * <pre>
 *   id   token            special (dropped by skip_special_tokens)
 *   256  &lt;|endoftext|&gt;    yes   the pad id
 *   257  &lt;|im_start|&gt;     yes
 *   258  &lt;|im_end|&gt;       yes   the EOS id: a ChatML turn ends here
 *   259  &lt;tool_call&gt;      no
 *   260  &lt;/tool_call&gt;     no
 *   261  &lt;think&gt;          no
 *   262  &lt;/think&gt;         no
 * </pre>
 *
 * <p>The chat template is ChatML, as Qwen's: {@code <|im_start|>{role}\n{content}<|im_end|>\n} per
 * message, then {@code <|im_start|>assistant\n} for the generation prompt. Decoding turns byte
 * sequences that are not valid UTF-8 into U+FFFD, as Hugging Face's byte-level decoders do; special
 * tokens that are skipped are dropped first, so the bytes around them decode as one run, as there.
 *
 * <p>Immutable and thread-safe; use {@link #INSTANCE}.
 */
public final class ByteLevelTokenizer implements Tokenizer {
    public static final int ENDOFTEXT = 256;
    public static final int IM_START = 257;
    public static final int IM_END = 258;
    public static final int TOOL_CALL_START = 259;
    public static final int TOOL_CALL_END = 260;
    public static final int THINK_START = 261;
    public static final int THINK_END = 262;
    public static final int VOCAB_SIZE = 263;

    /** The named tokens, indexed by {@code id - 256}. */
    private static final List<String> NAMED = List.of(
            "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<think>", "</think>");

    private static final int SPECIAL_END = IM_END; // 256..258 are special

    public static final ByteLevelTokenizer INSTANCE = new ByteLevelTokenizer();

    private ByteLevelTokenizer() {}

    @Override
    public int[] encode(String text) {
        byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        int[] out = new int[utf8.length];
        int n = 0;
        int i = 0;
        while (i < utf8.length) {
            int named = utf8[i] == '<' ? matchNamed(utf8, i) : -1;
            if (named >= 0) {
                out[n++] = 256 + named;
                i += NAMED.get(named).length();
            } else {
                out[n++] = utf8[i] & 0xFF;
                i++;
            }
        }
        return n == out.length ? out : Arrays.copyOf(out, n);
    }

    private static int matchNamed(byte[] utf8, int at) {
        for (int k = 0; k < NAMED.size(); k++) {
            String s = NAMED.get(k);
            if (at + s.length() <= utf8.length && regionEquals(utf8, at, s)) {
                return k;
            }
        }
        return -1;
    }

    private static boolean regionEquals(byte[] utf8, int at, String ascii) {
        for (int j = 0; j < ascii.length(); j++) {
            if (utf8[at + j] != (byte) ascii.charAt(j)) {
                return false;
            }
        }
        return true;
    }

    @Override
    public String decode(int[] ids, boolean skipSpecialTokens) {
        StringBuilder sb = new StringBuilder();
        ByteArrayOutputStream pending = new ByteArrayOutputStream();
        for (int id : ids) {
            if (id < 0 || id >= VOCAB_SIZE) {
                throw new IllegalArgumentException(
                        "token id " + id + " is outside the byte-level vocabulary [0, " + VOCAB_SIZE + ")");
            }
            if (id < 256) {
                pending.write(id);
                continue;
            }
            if (skipSpecialTokens && isSpecial(id)) {
                // Dropped before the bytes are decoded, as Hugging Face's decoders do: the bytes on
                // either side of a skipped token decode as one run.
                continue;
            }
            flush(pending, sb);
            sb.append(NAMED.get(id - 256));
        }
        flush(pending, sb);
        return sb.toString();
    }

    private static void flush(ByteArrayOutputStream pending, StringBuilder sb) {
        if (pending.size() == 0) {
            return;
        }
        CharsetDecoder decoder = StandardCharsets.UTF_8
                .newDecoder()
                .onMalformedInput(CodingErrorAction.REPLACE)
                .onUnmappableCharacter(CodingErrorAction.REPLACE);
        try {
            sb.append(decoder.decode(ByteBuffer.wrap(pending.toByteArray())));
        } catch (CharacterCodingException e) {
            throw new IllegalStateException("UTF-8 decoding with REPLACE cannot fail", e);
        }
        pending.reset();
    }

    @Override
    public int eosTokenId() {
        return IM_END;
    }

    @Override
    public int padTokenId() {
        return ENDOFTEXT;
    }

    @Override
    public int vocabSize() {
        return VOCAB_SIZE;
    }

    @Override
    public boolean isSpecial(int id) {
        return id >= 256 && id <= SPECIAL_END;
    }

    /** The string of token {@code id} ≥ 256, e.g. {@code <|im_end|>}. */
    public String namedToken(int id) {
        if (id < 256 || id >= VOCAB_SIZE) {
            throw new IllegalArgumentException("token id " + id + " is not a named token");
        }
        return NAMED.get(id - 256);
    }

    @Override
    public String applyChatTemplate(List<Map<String, Object>> messages, boolean addGenerationPrompt) {
        return ChatMl.render(messages, addGenerationPrompt);
    }

    /**
     * ChatML with {@code tools} (a list of OpenAI tool objects) in the system turn when the
     * variables hold a non-empty one; other variables are unused.
     */
    @Override
    @SuppressWarnings("unchecked")
    public String applyChatTemplate(
            List<Map<String, Object>> messages, boolean addGenerationPrompt, Map<String, ?> variables) {
        Object tools = variables == null ? null : variables.get("tools");
        if (tools != null && !(tools instanceof List<?>)) {
            throw new IllegalArgumentException("chat template variable 'tools' must be a list of tool objects, got "
                    + tools.getClass().getSimpleName());
        }
        return ChatMl.render(messages, (List<Map<String, Object>>) tools, addGenerationPrompt);
    }

    @Override
    public String toString() {
        return "ByteLevelTokenizer{vocab=" + VOCAB_SIZE + ", eos=<|im_end|>, pad=<|endoftext|>}";
    }
}
