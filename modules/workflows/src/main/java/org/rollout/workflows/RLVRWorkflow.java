package org.rollout.workflows;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InferenceEngine;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.RewardFunction;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.StopReason;
import org.rollout.api.Tokenizer;
import org.rollout.api.WorkflowContext;
import org.rollout.workflows.python.PythonRewardFunction;

/**
 * Reinforcement learning with verifiable rewards, one turn (AReaL's {@code RLVRWorkflow}, semantics §3.3):
 * prompt → one generation → reward function → one trajectory row.
 *
 * <pre>
 *   data["messages"] ──chat template──► prompt ids ──generate──► completion
 *                                                                  │ decode
 *                                       reward_fn(prompt, completion, ids, data) ──► r
 *   one row:  input_ids   = prompt ++ output                        [1, L] int32
 *             loss_mask   = 0 … 0  1 … 1                            [1, L] int32
 *             logprobs    = 0 … 0  sampling logprobs                [1, L] float32
 *             versions    = -1 … -1  version of each output token   [1, L] int32
 *             turn_ids    = -1 … -1  0 … 0                          [1, L] int32
 *             attention_mask = all true                             [1, L] bool
 *             rewards     = [r]                                     [1]    float32
 *             is_truncated = [stop reason == length]                [1]    bool
 * </pre>
 *
 * <p>Use it with any tokenizer the servers' model was trained with: the built-in byte-level one
 * with the built-in model server, or a Hugging Face one ({@code Tokenizers.load(path)}) with SGLang
 * or vLLM serving that model. The group (GRPO) is made by the runtime, which runs {@code n_samples}
 * episodes of one item concurrently; this class generates one sample per episode.
 *
 * <p>Construction: directly, or by the runtime's workflow resolver through {@link
 * #RLVRWorkflow(Map)}. The reward function is run with AReaL's timeout and retries ({@link
 * TimedRewardFunction}: 15 s per attempt, 4 attempts, a timeout at the last one gives 0); pass a
 * {@code TimedRewardFunction} yourself to choose others. {@code gconfig}'s stop tokens get the
 * tokenizer's pad and EOS ids appended (AReaL's {@code new_with_stop_and_pad_token_ids}).
 *
 * <p>Errors: a data item without a prompt, a failed generation, or a reward function that fails
 * on its last attempt throws, which fails the episode's group. Records {@code reward} under the
 * episode's statistics scope.
 *
 * <p>Immutable and thread-safe: the slots of a group share one instance.
 */
public final class RLVRWorkflow implements RolloutWorkflow {
    /** The kwargs {@link #RLVRWorkflow(Map)} accepts. */
    public static final Set<String> KWARGS = WorkflowKwargs.rewardWorkflowKwargs("enable_thinking", "prompt_key");

    private final TimedRewardFunction rewardFn;
    private final GenerationConfig gconfig;
    private final Tokenizer tokenizer;
    private final boolean enableThinking;
    private final String promptKey;

    /**
     * @param rewardFn the reward; wrapped in {@link TimedRewardFunction#withDefaults} unless it is one
     * @param gconfig sampling parameters; {@code n_samples} is the group size and is replaced by 1 per request
     * @param tokenizer the model's tokenizer: chat template, decoding, EOS and pad ids
     * @param enableThinking passed to chat templates that read {@code enable_thinking}
     */
    public RLVRWorkflow(
            RewardFunction rewardFn, GenerationConfig gconfig, Tokenizer tokenizer, boolean enableThinking) {
        this(rewardFn, gconfig, tokenizer, enableThinking, ChatPrompt.DEFAULT_KEY);
    }

    /**
     * The runtime's constructor. Keys: {@code gconfig} (a {@link GenerationConfig}), {@code
     * tokenizer} (a {@link Tokenizer}, or a path for {@code Tokenizers.load}), {@code reward_fn}
     * (a {@link RewardFunction}, or a class name / {@code pkg.Class#FIELD} / {@code
     * python:module.path:function} string, the last a {@link PythonRewardFunction}), optional
     * {@code enable_thinking} (default false) and {@code prompt_key} (default {@code messages}),
     * and the reward's limits {@code reward_timeout} (seconds per attempt, default 15) and {@code
     * reward_max_retries} (default 3).
     *
     * @throws org.rollout.api.InvalidConfigException naming a missing, wrong or unknown key
     */
    public RLVRWorkflow(Map<String, Object> kwargs) {
        this(new WorkflowKwargs("RLVRWorkflow", kwargs, KWARGS));
    }

    private RLVRWorkflow(WorkflowKwargs k) {
        this(
                k.timedReward("reward_fn"),
                k.gconfig("gconfig"),
                k.tokenizer("tokenizer"),
                k.bool("enable_thinking", false),
                k.string("prompt_key", ChatPrompt.DEFAULT_KEY));
    }

    private RLVRWorkflow(
            RewardFunction rewardFn,
            GenerationConfig gconfig,
            Tokenizer tokenizer,
            boolean enableThinking,
            String promptKey) {
        Objects.requireNonNull(rewardFn, "reward_fn");
        this.rewardFn = rewardFn instanceof TimedRewardFunction t ? t : TimedRewardFunction.withDefaults(rewardFn);
        this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
        this.gconfig = Objects.requireNonNull(gconfig, "gconfig")
                .withStopAndPadTokenIds(tokenizer.padTokenId(), tokenizer.eosTokenId());
        this.enableThinking = enableThinking;
        this.promptKey = Objects.requireNonNull(promptKey, "prompt_key");
    }

    /** The same workflow reading its prompt from {@code key} of each data item. */
    public RLVRWorkflow withPromptKey(String key) {
        return new RLVRWorkflow(rewardFn, gconfig, tokenizer, enableThinking, key);
    }

    /** The sampling parameters sent, with the tokenizer's stop ids appended. */
    public GenerationConfig gconfig() {
        return gconfig;
    }

    public Tokenizer tokenizer() {
        return tokenizer;
    }

    public TimedRewardFunction rewardFunction() {
        return rewardFn;
    }

    @Override
    public EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) throws Exception {
        // 1. The prompt: the item's chat messages through the chat template.
        List<Map<String, Object>> messages = ChatPrompt.messages(data, promptKey);
        int[] inputIds = ChatPrompt.inputIds(tokenizer, messages, enableThinking);

        // 2. One sample, with a fresh rid: the group's other samples are other episodes.
        ModelResponse response = engine.generate(ModelRequest.of(inputIds, gconfig.withNSamples(1)));

        // 3. The reward, on the decoded texts (the prompt with its special tokens, as the model saw it).
        String prompt = tokenizer.decode(inputIds, false);
        String completion = tokenizer.decode(response.outputTokens(), gconfig.skipSpecialTokens());
        double reward = rewardFn.reward(prompt, completion, response.inputTokens(), response.outputTokens(), data);
        WorkflowContext.current().stats().scalar("reward", reward);

        // 4. One row: the prompt as context, the output as turn 0.
        TrajectoryRow row = new TrajectoryRow();
        row.appendContext(response.inputTokens());
        row.appendOutput(response, 0);
        return EpisodeResult.trajectory(row.toTensorDict(reward, response.stopReason() == StopReason.LENGTH));
    }

    @Override
    public String toString() {
        return "RLVRWorkflow{reward_fn=" + rewardFn.function() + ", tokenizer=" + tokenizer + ", enable_thinking="
                + enableThinking + ", prompt_key=" + promptKey + "}";
    }
}
