package org.rollout.agent;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.rollout.api.Interaction;
import org.rollout.api.WorkflowContractException;

/**
 * Applies what an agent returned to the completions its episode recorded (semantics §8 step 4).
 *
 * <ul>
 *   <li>a finite {@link Number} (double, float, int, long, …): the reward of the last completion;
 *   <li>a {@code Map} from completion id to finite number: the reward of each named completion;
 *   <li>anything else, including null, a string, NaN or infinity, a map with a non-string key or a
 *       non-numeric or non-finite value, or a completion id the episode did not record: a {@link
 *       WorkflowContractException} saying what was returned.
 * </ul>
 *
 * <p><b>Deviation from AReaL:</b> AReaL accepts only {@code float} and {@code dict} and raises on
 * {@code int} (semantics §11.1 item 12); here every {@code Number} counts, since Java agents naturally return
 * {@code 1} or {@code 0L} and nothing is gained by refusing them. Stateless and thread-safe.
 */
public final class AgentRewards {
    private AgentRewards() {}

    /**
     * The recorded completions with the returned rewards set, in the same order.
     *
     * @param returned what the agent returned
     * @param recorded the episode's completions in recording order; may be empty only if {@code
     *     returned} names no completion
     * @param episode the episode's key, for messages
     * @throws WorkflowContractException when {@code returned} is not a reward (see above)
     */
    public static List<Interaction> apply(Object returned, List<Interaction> recorded, String episode) {
        String where = "agent episode " + episode + " returned ";
        if (returned instanceof Number n) {
            double r = finite(n, where + describe(returned) + ", which is not a finite reward");
            List<Interaction> out = new ArrayList<>(recorded);
            if (!out.isEmpty()) {
                int last = out.size() - 1;
                out.set(last, out.get(last).withReward(r));
            }
            return out;
        }
        if (returned instanceof Map<?, ?> byId) {
            Map<String, Double> rewards = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : byId.entrySet()) {
                if (!(e.getKey() instanceof String id)) {
                    throw new WorkflowContractException(where + "a map with the key " + describe(e.getKey())
                            + "; reward maps are keyed by completion id (a string)");
                }
                if (!(e.getValue() instanceof Number n)) {
                    throw new WorkflowContractException(where + "a map whose value for '" + id + "' is "
                            + describe(e.getValue()) + "; rewards must be finite numbers");
                }
                rewards.put(id, finite(n, where + "a map whose value for '" + id + "' is " + n + ", not finite"));
            }
            List<Interaction> out = new ArrayList<>(recorded.size());
            for (Interaction it : recorded) {
                Double r = rewards.remove(it.id());
                out.add(r == null ? it : it.withReward(r));
            }
            if (!rewards.isEmpty()) {
                List<String> known = recorded.stream().map(Interaction::id).toList();
                throw new WorkflowContractException(where + "rewards for completion id(s) " + rewards.keySet()
                        + " that the episode did not record (recorded: " + known + ")");
            }
            return out;
        }
        throw new WorkflowContractException(where + describe(returned)
                + "; an agent returns a reward (a finite number) or rewards per completion id"
                + " (Map<String, Number>)");
    }

    private static double finite(Number n, String message) {
        double d = n.doubleValue();
        if (!Double.isFinite(d)) {
            throw new WorkflowContractException(message);
        }
        return d;
    }

    /** What a value is, short: {@code null}, {@code the string "1.0"}, {@code a java.util.ArrayList}. */
    static String describe(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof CharSequence s) {
            String text = s.length() > 40 ? s.subSequence(0, 40) + "…" : s.toString();
            return "the string \"" + text + "\"";
        }
        if (v instanceof Number n) {
            return n + " (" + v.getClass().getSimpleName() + ")";
        }
        return "a " + v.getClass().getName();
    }
}
