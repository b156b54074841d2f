package org.rollout.workflows;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.Tokenizer;
import org.rollout.workflows.demo.LetterReward;

/**
 * The workflows a configuration can name by a short name in {@code rollout.workflow}:
 *
 * <pre>
 *   name         workflow                                  workflow_kwargs
 *   rlvr         {@link RLVRWorkflow}                      reward_fn (required), enable_thinking, prompt_key
 *   multi_turn   {@link MultiTurnWorkflow}                 reward_fn, max_turns, turn_discount (required), prompt_key
 *   demo         RLVRWorkflow with the letters reward      enable_thinking, prompt_key
 *   (rlvr, multi_turn and demo also take reward_timeout and reward_max_retries: the reward's limits)
 * </pre>
 *
 * <p>{@code gconfig} and {@code tokenizer} come from the configuration ({@code gconfig}, {@code
 * tokenizer_path}), not from the kwargs. Anything else in {@code rollout.workflow} is a class name
 * for the runtime's workflow resolver. Stateless and thread-safe.
 */
public final class BuiltinWorkflows {
    /** The built-in names. */
    public static final List<String> NAMES = List.of("rlvr", "multi_turn", "demo");

    private static final String KEY = "rollout.workflow";

    private BuiltinWorkflows() {}

    /** True when {@code name} is a built-in workflow name. */
    public static boolean isBuiltin(String name) {
        return NAMES.contains(name);
    }

    /**
     * A new workflow of the built-in kind {@code name}.
     *
     * @param kwargs {@code workflow_kwargs}: the keys of the table above
     * @throws InvalidConfigException for key {@code rollout.workflow} when {@code name} is not built
     *     in (listing the names, and that a class name is accepted too); for the kwarg's key when a
     *     kwarg is missing, wrong or unknown
     */
    public static RolloutWorkflow create(
            String name, GenerationConfig gconfig, Tokenizer tokenizer, Map<String, Object> kwargs) {
        Objects.requireNonNull(gconfig, "gconfig");
        Objects.requireNonNull(tokenizer, "tokenizer");
        Map<String, Object> args = new HashMap<>(kwargs == null ? Map.of() : kwargs);
        for (String fixed : List.of("gconfig", "tokenizer")) {
            if (args.containsKey(fixed)) {
                throw new InvalidConfigException(
                        "workflow_kwargs." + fixed,
                        args.get(fixed),
                        "absent: the " + fixed + " of a built-in workflow comes from the configuration ("
                                + (fixed.equals("gconfig") ? "gconfig" : "tokenizer_path") + ")");
            }
        }
        args.put("gconfig", gconfig);
        args.put("tokenizer", tokenizer);
        return switch (name == null ? "" : name) {
            case "rlvr" -> new RLVRWorkflow(args);
            case "multi_turn" -> new MultiTurnWorkflow(args);
            case "demo" -> {
                if (args.containsKey("reward_fn")) {
                    throw new InvalidConfigException(
                            "workflow_kwargs.reward_fn",
                            args.get("reward_fn"),
                            "absent: the demo workflow's reward is the letters reward; use rlvr for another");
                }
                args.put("reward_fn", new LetterReward());
                yield new RLVRWorkflow(args);
            }
            default ->
                throw new InvalidConfigException(
                        KEY,
                        name,
                        "one of " + String.join(", ", NAMES)
                                + ", or the name of a RolloutWorkflow class (with a public (Map<String, Object>)"
                                + " constructor) or of an AgentWorkflow class");
        };
    }
}
