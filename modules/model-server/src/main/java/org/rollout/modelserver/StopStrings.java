package org.rollout.modelserver;

import java.util.Arrays;
import java.util.List;
import org.rollout.core.ByteLevelTokenizer;

/**
 * Stop-string matching on generated tokens, as SGLang does it: the tail of the output is decoded
 * (special tokens included, as their text) and searched for each stop string. Checked after every
 * token, so a match always involves the newest token and only a tail as long as the longest stop
 * string (in UTF-8 bytes, one byte per byte-level token, plus slack for a split character) is
 * decoded.
 */
final class StopStrings {
    private StopStrings() {}

    /** The first stop string found in the decoded tail of {@code output[0, length)}, or null. */
    static String matchAtEnd(int[] output, int length, List<String> stop, int longestStopBytes) {
        int from = Math.max(0, length - longestStopBytes - 3);
        String tail = ByteLevelTokenizer.INSTANCE.decode(Arrays.copyOfRange(output, from, length), false);
        for (String s : stop) {
            if (tail.contains(s)) {
                return s;
            }
        }
        return null;
    }

    /**
     * The response {@code text}: the decoded output, cut before a matched stop string or without a
     * matched stop token unless {@code no_stop_trim}.
     */
    static String responseText(int[] outputIds, FinishReason finish, SamplingParams params) {
        int[] ids = outputIds;
        if (!params.noStopTrim() && finish instanceof FinishReason.MatchedToken && ids.length > 0) {
            ids = Arrays.copyOf(ids, ids.length - 1);
        }
        String text = ByteLevelTokenizer.INSTANCE.decode(ids, params.skipSpecialTokens());
        if (!params.noStopTrim() && finish instanceof FinishReason.MatchedString m) {
            int at = text.indexOf(m.matched());
            if (at >= 0) {
                text = text.substring(0, at);
            }
        }
        return text;
    }
}
