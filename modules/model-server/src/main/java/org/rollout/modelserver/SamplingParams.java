package org.rollout.modelserver;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.rollout.core.ByteLevelTokenizer;

/**
 * The validated sampling parameters of one generation request, in SGLang's terms. Built by the
 * request parsers ({@link GenerateRequests}), which reject bad values naming the field.
 *
 * @param dialect whose stopping rules apply (they differ in two places, see {@link Dialect})
 * @param maxNewTokens the most tokens to generate; 0 finishes at once with {@code length}
 * @param minNewTokens EOS and {@code stopTokenIds} are masked until this many tokens exist
 * @param temperature below {@link TinyLm#GREEDY_BELOW} means greedy
 * @param topP nucleus mass in (0, 1]
 * @param topK −1 or ≥ V means no top-k truncation
 * @param frequencyPenalty subtracted from a logit once per earlier occurrence in the output
 * @param stop stop strings, matched on the decoded text of the generated tokens
 * @param stopTokenIds extra stop ids (besides EOS)
 * @param ignoreEos EOS does not end the generation (in SGLang, stop ids do not either)
 * @param skipSpecialTokens whether {@code text} leaves out special tokens
 * @param noStopTrim when false, {@code text} is cut before a matched stop string or stop token
 * @param seed the sampling seed, or null for a random one
 */
record SamplingParams(
        Dialect dialect,
        int maxNewTokens,
        int minNewTokens,
        double temperature,
        double topP,
        int topK,
        double frequencyPenalty,
        List<String> stop,
        int[] stopTokenIds,
        boolean ignoreEos,
        boolean skipSpecialTokens,
        boolean noStopTrim,
        Long seed) {

    static final int EOS = ByteLevelTokenizer.IM_END;

    /**
     * Whose stopping rules: SGLang checks {@code max_new_tokens} before stop tokens (a stop token
     * sampled as the last allowed token finishes with {@code length}) and lets {@code ignore_eos}
     * disable {@code stop_token_ids} too; vLLM checks stop tokens first and {@code ignore_eos} only
     * ignores EOS.
     */
    enum Dialect {
        SGLANG,
        VLLM
    }

    SamplingParams {
        stop = List.copyOf(stop);
        stopTokenIds = stopTokenIds.clone();
    }

    boolean greedy() {
        return temperature < TinyLm.GREEDY_BELOW;
    }

    /** True when sampling {@code token} ends the generation as a stop token. */
    boolean isStopToken(int token) {
        if (token == EOS && !ignoreEos) {
            return true;
        }
        if (ignoreEos && dialect == Dialect.SGLANG) {
            return false;
        }
        for (int id : stopTokenIds) {
            if (id == token) {
                return true;
            }
        }
        return false;
    }

    /** True when the length limit is checked before stop tokens (SGLang). */
    boolean lengthCheckedFirst() {
        return dialect == Dialect.SGLANG;
    }

    /** The longest stop string in UTF-8 bytes (0 without stop strings). */
    int longestStopBytes() {
        int max = 0;
        for (String s : stop) {
            max = Math.max(max, s.getBytes(StandardCharsets.UTF_8).length);
        }
        return max;
    }
}
