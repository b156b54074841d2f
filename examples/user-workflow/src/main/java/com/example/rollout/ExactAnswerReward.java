package com.example.rollout;

import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.rollout.api.RewardFunction;

/**
 * 1 when the completion's final answer, its last integer, equals the data item's {@code answer}
 * field exactly; 0 otherwise (no integer, or another one). "7", "It is 7" and "3 + 4 = 7" score 1
 * for answer "7"; "7.5", "70" and "7 or 8" score 0.
 *
 * <p>Named in the configuration as {@code workflow_kwargs.reward_fn =
 * "com.example.rollout.ExactAnswerReward"}; the engine builds it with the public no-argument
 * constructor. Stateless, so thread-safe as the engine requires.
 */
public final class ExactAnswerReward implements RewardFunction {
    private static final Pattern INTEGER = Pattern.compile("-?\\d+(\\.\\d+)?");

    public ExactAnswerReward() {}

    @Override
    public double reward(String prompt, String completion, int[] promptIds, int[] completionIds, Map<String, Object> data) {
        Object answer = data.get("answer");
        if (answer == null) {
            throw new IllegalArgumentException("the data item has no 'answer' field: " + data.keySet());
        }
        String last = finalAnswer(completion);
        return last != null && last.equals(String.valueOf(answer).strip()) ? 1.0 : 0.0;
    }

    /** The last number in {@code text} as written, or null when there is none. */
    static String finalAnswer(String text) {
        Matcher m = INTEGER.matcher(text);
        String last = null;
        while (m.find()) {
            last = m.group();
        }
        return last;
    }
}
