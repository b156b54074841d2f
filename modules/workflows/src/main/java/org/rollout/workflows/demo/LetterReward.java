package org.rollout.workflows.demo;

import java.util.Map;
import org.rollout.api.RewardFunction;

/**
 * The reward of the letters task ({@link LetterTask}), in [0, 1]:
 *
 * <pre>
 *   c = the first 8 characters (code points) of the completion, special tokens left out
 *   reward = 0                                                     when c is empty
 *          = 0.6 · |{x ∈ c : x ∈ a–z}| / |c|  +  0.4 · |{x ∈ c : x = target}| / |c|   otherwise
 * </pre>
 *
 * <p>"q" alone scores 1, "qqqqqqqq" 1, "qa" 0.8, "abcdefgh" 0.6 (0.65 if the target is among
 * them), "Q" or "?" 0. The two terms give a learning curve with two slopes: lowercase letters are
 * about one token in ten for a freshly initialised model (26 of 263 byte-level tokens), so the
 * first term has variance in almost every group and its gradient reaches the bias at once; the
 * second needs the model to read the prompt (the context table), which comes later.
 *
 * <p>Stateless and thread-safe. A public no-arg constructor, so {@code reward_fn} may name it.
 */
public final class LetterReward implements RewardFunction {
    /** Only this many leading characters count. */
    public static final int WINDOW = 8;
    /** The weight of "is a lowercase letter". */
    public static final double LOWERCASE_WEIGHT = 0.6;
    /** The weight of "is the asked letter". */
    public static final double TARGET_WEIGHT = 0.4;

    public LetterReward() {}

    /**
     * @throws IllegalArgumentException when {@code data} has no single lowercase letter under {@code
     *     target}
     */
    @Override
    public double reward(
            String prompt, String completion, int[] promptIds, int[] completionIds, Map<String, Object> data) {
        Object target = data.get(LetterTask.TARGET_KEY);
        if (!(target instanceof String s) || s.length() != 1 || s.charAt(0) < 'a' || s.charAt(0) > 'z') {
            throw new IllegalArgumentException("the letters reward needs a lowercase letter under '"
                    + LetterTask.TARGET_KEY + "', got " + (target == null ? "nothing" : "'" + target + "'"));
        }
        return score(completion, s.charAt(0));
    }

    /** The reward of {@code completion} when {@code target} was asked for. */
    public static double score(String completion, char target) {
        int counted = 0;
        int lowercase = 0;
        int hits = 0;
        for (int i = 0; i < completion.length() && counted < WINDOW; ) {
            int cp = completion.codePointAt(i);
            i += Character.charCount(cp);
            counted++;
            if (cp >= 'a' && cp <= 'z') {
                lowercase++;
            }
            if (cp == target) {
                hits++;
            }
        }
        if (counted == 0) {
            return 0.0;
        }
        return (LOWERCASE_WEIGHT * lowercase + TARGET_WEIGHT * hits) / counted;
    }
}
