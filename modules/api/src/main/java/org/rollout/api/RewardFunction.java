package org.rollout.api;

import java.util.Map;

/**
 * A verifiable reward: how good {@code completion} is as an answer to {@code prompt}, usually by
 * checking it against the ground truth in the data item (AReaL's {@code reward_fn(prompt,
 * completions, prompt_ids, completion_ids, **data)}).
 *
 * <pre>
 *   RewardFunction exact = (prompt, completion, promptIds, completionIds, data) -&gt;
 *           completion.strip().equals(data.get("answer")) ? 1.0 : 0.0;
 * </pre>
 *
 * <p>Threading: the workflows call it on a separate virtual thread per attempt (see the workflows module's {@code
 * TimedRewardFunction}), concurrently for the slots of a group, so it must be thread-safe. It may
 * block (call a grader service through {@code WorkflowContext.current().httpClient()}); an attempt
 * that takes longer than the timeout is interrupted and retried, so honour interruption.
 *
 * <p>Errors: an exception is retried; the last attempt's exception fails the episode (and so its
 * group). The value must be finite: the rollout engine refuses non-finite rewards as a contract
 * error.
 *
 * <p>A class implementing it with a public no-argument constructor can be named by its class name
 * in a workflow's {@code reward_fn} kwarg.
 */
@FunctionalInterface
public interface RewardFunction {

    /**
     * The reward of one completion.
     *
     * @param prompt the prompt text as the model saw it (the chat template applied)
     * @param completion the generated text, special tokens left out
     * @param promptIds the prompt's token ids
     * @param completionIds the generated token ids (stop tokens included)
     * @param data the episode's data item; do not modify
     */
    double reward(String prompt, String completion, int[] promptIds, int[] completionIds, Map<String, Object> data)
            throws Exception;
}
