package org.rollout.workflows;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InferenceEngine;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.RewardFunction;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.StopReason;
import org.rollout.api.Tokenizer;
import org.rollout.api.WorkflowContext;

/**
 * Retry with feedback (AReaL's {@code MultiTurnWorkflow}, semantics §3.3): while the answer earns no reward
 * and turns remain, tell the model it was wrong and let it try again in the same conversation; the
 * reward of a later success is discounted per extra turn.
 *
 * <pre>
 *   turn 0:  prompt                                   ──generate──► out₀  reward r₀
 *   r₀ == 0 and 1 &lt; max_turns:
 *   turn 1:  prompt out₀ [EOS] feedback-user-turn     ──generate──► out₁  reward r₁   discount = γ
 *   …        until r_t != 0 or t == max_turns
 *   final reward = r_last × γ^(turns − 1)                            (γ = turn_discount)
 *
 *   one row:  prompt (context) out₀ (turn 0) [EOS] feedback (context) out₁ (turn 1) …
 *             context: loss_mask 0, logprob 0, version -1, turn id -1
 *             output of turn t: loss_mask 1, its logprobs, its versions, turn id t
 *             rewards [final reward], is_truncated [the last turn stopped on length]
 * </pre>
 *
 * <p>The feedback turn is the user message {@value #FEEDBACK} in the chat template's form for a
 * user turn that follows an assistant turn, ending with the generation prompt. It is tokenised once,
 * at construction, as the difference between the template of {@code [assistant]} and of {@code
 * [assistant, user]}: appending tokens avoids re-tokenising the conversation (which could tokenise
 * the model's output differently) and leaves out the system prompt some templates add.
 *
 * <p>Records {@code reward} (the final, discounted one) and {@code num_turns}. Errors as {@link
 * RLVRWorkflow}. Immutable and thread-safe.
 */
public final class MultiTurnWorkflow implements RolloutWorkflow {
    /** The kwargs {@link #MultiTurnWorkflow(Map)} accepts. */
    public static final Set<String> KWARGS =
            WorkflowKwargs.rewardWorkflowKwargs("max_turns", "turn_discount", "prompt_key");

    /** The feedback the model gets after an answer without reward. */
    public static final String FEEDBACK =
            "Your answer is either wrong or not parsed correctly. Please try to answer it again.";

    private static final String PLACEHOLDER_ANSWER = "some random message.";

    private final TimedRewardFunction rewardFn;
    private final GenerationConfig gconfig;
    private final Tokenizer tokenizer;
    private final int maxTurns;
    private final double turnDiscount;
    private final String promptKey;
    private final int[] feedbackIds;

    /**
     * @param rewardFn the reward; wrapped in {@link TimedRewardFunction#withDefaults} unless it is one
     * @param gconfig sampling parameters, as in {@link RLVRWorkflow}
     * @param tokenizer the model's tokenizer
     * @param maxTurns at most this many generations, &gt; 0
     * @param turnDiscount the factor per extra turn, in (0, 1]
     * @throws InvalidConfigException for {@code max_turns} or {@code turn_discount} out of range
     * @throws IllegalArgumentException when the tokenizer's chat template does not render a
     *     conversation as a prefix of the same conversation with one more turn
     */
    public MultiTurnWorkflow(
            RewardFunction rewardFn, GenerationConfig gconfig, Tokenizer tokenizer, int maxTurns, double turnDiscount) {
        this(rewardFn, gconfig, tokenizer, maxTurns, turnDiscount, ChatPrompt.DEFAULT_KEY);
    }

    /**
     * The runtime's constructor. Keys as {@link RLVRWorkflow#RLVRWorkflow(Map)} (without {@code
     * enable_thinking}), plus the required {@code max_turns} (integer &gt; 0) and {@code
     * turn_discount} (number in (0, 1]).
     *
     * @throws InvalidConfigException naming a missing, wrong or unknown key
     */
    public MultiTurnWorkflow(Map<String, Object> kwargs) {
        this(new WorkflowKwargs("MultiTurnWorkflow", kwargs, KWARGS));
    }

    private MultiTurnWorkflow(WorkflowKwargs k) {
        this(
                k.timedReward("reward_fn"),
                k.gconfig("gconfig"),
                k.tokenizer("tokenizer"),
                k.integer("max_turns", MAX_TURNS_ALLOWED),
                k.number("turn_discount", TURN_DISCOUNT_ALLOWED),
                k.string("prompt_key", ChatPrompt.DEFAULT_KEY));
    }

    private static final String MAX_TURNS_ALLOWED = "an integer > 0";
    private static final String TURN_DISCOUNT_ALLOWED = "a number in (0, 1]";

    private MultiTurnWorkflow(
            RewardFunction rewardFn,
            GenerationConfig gconfig,
            Tokenizer tokenizer,
            int maxTurns,
            double turnDiscount,
            String promptKey) {
        if (maxTurns <= 0) {
            throw new InvalidConfigException("max_turns", maxTurns, MAX_TURNS_ALLOWED);
        }
        if (!(turnDiscount > 0 && turnDiscount <= 1)) {
            throw new InvalidConfigException("turn_discount", turnDiscount, TURN_DISCOUNT_ALLOWED);
        }
        Objects.requireNonNull(rewardFn, "reward_fn");
        this.rewardFn = rewardFn instanceof TimedRewardFunction t ? t : TimedRewardFunction.withDefaults(rewardFn);
        this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
        this.gconfig = Objects.requireNonNull(gconfig, "gconfig")
                .withStopAndPadTokenIds(tokenizer.padTokenId(), tokenizer.eosTokenId());
        this.maxTurns = maxTurns;
        this.turnDiscount = turnDiscount;
        this.promptKey = Objects.requireNonNull(promptKey, "prompt_key");
        this.feedbackIds = feedbackIds(tokenizer);
    }

    /** The tokens of the feedback user turn plus the generation prompt, as the template renders them. */
    static int[] feedbackIds(Tokenizer tokenizer) {
        Map<String, Object> answer = Map.of("role", "assistant", "content", PLACEHOLDER_ANSWER);
        Map<String, Object> feedback = Map.of("role", "user", "content", FEEDBACK);
        int[] before = tokenizer.encodeChat(List.of(answer), false);
        int[] after = tokenizer.encodeChat(List.of(answer, feedback), true);
        if (after.length <= before.length || !Arrays.equals(before, 0, before.length, after, 0, before.length)) {
            throw new IllegalArgumentException("the chat template of " + tokenizer + " does not render [assistant]"
                    + " as a prefix of [assistant, user]: MultiTurnWorkflow cannot append a feedback turn to a"
                    + " conversation with it");
        }
        return Arrays.copyOfRange(after, before.length, after.length);
    }

    /** The same workflow reading its prompt from {@code key} of each data item. */
    public MultiTurnWorkflow withPromptKey(String key) {
        return new MultiTurnWorkflow(rewardFn, gconfig, tokenizer, maxTurns, turnDiscount, key);
    }

    /** The feedback turn's token ids (a copy). */
    public int[] feedbackTokenIds() {
        return feedbackIds.clone();
    }

    public int maxTurns() {
        return maxTurns;
    }

    public double turnDiscount() {
        return turnDiscount;
    }

    /** The sampling parameters sent, with the tokenizer's stop ids appended. */
    public GenerationConfig gconfig() {
        return gconfig;
    }

    @Override
    public EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) throws Exception {
        int[] inputIds = ChatPrompt.inputIds(tokenizer, ChatPrompt.messages(data, promptKey), false);
        int eos = tokenizer.eosTokenId();
        TrajectoryRow row = new TrajectoryRow();
        int turn = 0;
        double reward = 0.0;
        double discount = 1.0;
        ModelResponse response = null;
        while (reward == 0.0 && turn < maxTurns) {
            response = engine.generate(ModelRequest.of(inputIds, gconfig.withNSamples(1)));
            String prompt = tokenizer.decode(inputIds, false);
            String completion = tokenizer.decode(response.outputTokens(), gconfig.skipSpecialTokens());
            reward = rewardFn.reward(prompt, completion, response.inputTokens(), response.outputTokens(), data);

            // The prompt is the row so far plus what this turn added before generating (the first
            // prompt, or EOS and the feedback turn): that delta is context, the output is turn t.
            int[] prompted = response.inputTokens();
            int[] sofar = row.tokens();
            if (prompted.length < sofar.length || !Arrays.equals(prompted, 0, sofar.length, sofar, 0, sofar.length)) {
                throw new IllegalStateException("turn " + turn + ": the engine answered for a prompt that does not"
                        + " extend the conversation so far (" + prompted.length + " prompt tokens, " + sofar.length
                        + " in the conversation)");
            }
            row.appendContext(Arrays.copyOfRange(prompted, sofar.length, prompted.length));
            row.appendOutput(response, turn);
            turn++;

            if (reward == 0.0 && turn < maxTurns) {
                int[] output = response.outputTokens();
                // As AReaL: an output that does not end with EOS (cut on length) gets one, to close
                // the assistant turn; an empty output gets none.
                boolean closeTurn = output.length > 0 && output[output.length - 1] != eos;
                int[] next = Arrays.copyOf(
                        prompted, prompted.length + output.length + (closeTurn ? 1 : 0) + feedbackIds.length);
                int at = prompted.length;
                System.arraycopy(output, 0, next, at, output.length);
                at += output.length;
                if (closeTurn) {
                    next[at++] = eos;
                }
                System.arraycopy(feedbackIds, 0, next, at, feedbackIds.length);
                inputIds = next;
                discount *= turnDiscount;
            }
        }
        double finalReward = reward * discount;
        WorkflowContext.current().stats().scalar("reward", finalReward);
        WorkflowContext.current().stats().scalar("num_turns", turn);
        return EpisodeResult.trajectory(row.toTensorDict(finalReward, response.stopReason() == StopReason.LENGTH));
    }

    @Override
    public String toString() {
        return "MultiTurnWorkflow{reward_fn=" + rewardFn.function() + ", tokenizer=" + tokenizer + ", max_turns="
                + maxTurns + ", turn_discount=" + turnDiscount + ", prompt_key=" + promptKey + "}";
    }
}
