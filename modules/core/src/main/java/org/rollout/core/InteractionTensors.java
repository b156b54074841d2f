package org.rollout.core;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.rollout.api.BoolTensor;
import org.rollout.api.EpisodeResult;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Interaction;
import org.rollout.api.ModelResponse;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.WorkflowContractException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns agent {@link Interaction}s into trajectory rows: AReaL's {@code to_tensor_dict} (semantics §3.4)
 * and the executor's conversion of an interaction result (semantics §3.5).
 *
 * <pre>
 *   one interaction (HF)        input_tokens            output_tokens
 *     input_ids                 p p p p                 o o o
 *     loss_mask                 0 0 0 0                 1 1 1
 *     logprobs                  0 0 0 0                 l l l
 *     versions                 -1-1-1-1                 v v v
 *     turn_ids                 -1-1-1-1                 0 0 0
 *
 *   CONCAT child of a parent    parent's row    context gap     child's output_tokens
 *     loss_mask                 (as parent)     0 0             1 1
 *     versions                  (as parent)    -1-1             v v
 *     turn_ids                  (as parent)    -1-1             t t   t = parent's max turn id + 1
 * </pre>
 *
 * <p>Every row also has {@code attention_mask} all true, {@code rewards = [reward or 0]} and
 * {@code original_rewards = [originalReward, else reward, else 0]}. An interaction with
 * precomputed {@link Interaction#tensorData()} returns that instead (AReaL's {@code _cache}).
 *
 * <p><b>Dtypes differ from AReaL on purpose.</b> AReaL's interaction conversion produces int64
 * {@code input_ids}, {@code loss_mask} and {@code versions}; here they are int32 (with
 * {@code turn_ids} int32, {@code attention_mask} bool, {@code logprobs} and rewards float32), the
 * dtypes of the tensor workflows, so rows of any result kind concatenate into one batch. Newer
 * upstream code also emits {@code is_truncated} here; this conversion does not, so that its key
 * set matches the tensor workflows' of semantics §3.2.
 *
 * <p>CONCAT parents: the child's input tokens must start with the parent's whole sequence; a
 * mismatch is a {@link WorkflowContractException} naming both ids and the first differing
 * position. A child whose input is not longer than the parent's sequence ignores the parent with a
 * logged warning, as AReaL does. Parent rows are computed once per conversion, however many
 * children share them, and a chain of any depth is walked without recursion.
 *
 * <p>Errors: an interaction without tensor data (external-API mode), or with a non-finite reward,
 * is a {@link WorkflowContractException}; we do not train on text-only interactions. Stateless and
 * thread-safe.
 */
public final class InteractionTensors {
    private static final Logger log = LoggerFactory.getLogger(InteractionTensors.class);

    private InteractionTensors() {}

    /**
     * One interaction as one row [1, L] (semantics §3.4), or its precomputed tensor data.
     *
     * @throws WorkflowContractException when the interaction (or a CONCAT ancestor) has no tensor
     *     data, or a CONCAT child's input does not start with its parent's sequence
     */
    public static TensorDict toTensorDict(Interaction it) {
        return toTensorDict(it, new IdentityHashMap<>());
    }

    /**
     * An interaction result as trajectory rows: each interaction converted, concatenated with
     * padding in insertion order (semantics §3.5). An empty result gives an empty dict.
     *
     * @throws WorkflowContractException naming the task, slot and interaction id when an
     *     interaction has no tensor data or a non-finite reward, or its row cannot be built
     */
    public static TensorDict toTensorDict(EpisodeResult.Interactions result, long taskId, int slot) {
        List<TensorDict> rows = rows(result, taskId, slot);
        List<String> ids = List.copyOf(result.byId().keySet());
        return TensorDicts.concatPadded(
                rows,
                i -> "task " + taskId + " slot " + slot + " interaction '" + ids.get(i) + "'",
                WorkflowContractException::new);
    }

    /** Checks that every interaction of a result can be trained on: tensor data, finite rewards. */
    static void check(EpisodeResult.Interactions result, long taskId, int slot) {
        for (Interaction it : result.byId().values()) {
            if (!it.hasTensorData()) {
                throw new WorkflowContractException(where(taskId, slot, it)
                        + " has no tensor data (external-API mode); text-only interactions cannot be trained on");
            }
            requireFinite(it.reward(), "reward", taskId, slot, it);
            requireFinite(it.originalReward(), "original_reward", taskId, slot, it);
            requireFinite(it.rolloutReward(), "rollout_reward", taskId, slot, it);
        }
    }

    /**
     * The rows of a result, one dict per interaction in insertion order, not yet concatenated (so
     * a group merge can concatenate all slots' rows in one pass).
     */
    static List<TensorDict> rows(EpisodeResult.Interactions result, long taskId, int slot) {
        check(result, taskId, slot);
        Map<Interaction, TensorDict> memo = new IdentityHashMap<>();
        List<TensorDict> rows = new ArrayList<>(result.byId().size());
        for (Interaction it : result.byId().values()) {
            TensorDict row;
            try {
                row = toTensorDict(it, memo);
            } catch (WorkflowContractException e) {
                throw new WorkflowContractException("task " + taskId + " slot " + slot + ": " + e.getMessage(), e);
            }
            requireFiniteTensor(row, TensorDict.REWARDS, taskId, slot, it);
            requireFiniteTensor(row, TensorDict.ORIGINAL_REWARDS, taskId, slot, it);
            rows.add(row);
        }
        return rows;
    }

    private static TensorDict toTensorDict(Interaction it, Map<Interaction, TensorDict> memo) {
        // Walk up the CONCAT chain to the first ancestor whose row is known (memoised or
        // precomputed) or that has no parent, then build rows back down.
        ArrayDeque<Interaction> pending = new ArrayDeque<>();
        Interaction cur = it;
        while (!memo.containsKey(cur)) {
            if (cur.tensorData() != null) {
                memo.put(cur, cur.tensorData());
                break;
            }
            if (cur.modelResponse() == null) {
                String child = cur == it ? "" : " (CONCAT ancestor of interaction '" + it.id() + "')";
                throw new WorkflowContractException("interaction '" + cur.id() + "'" + child
                        + " has no tensor data (external-API mode); text-only interactions cannot be trained on");
            }
            pending.push(cur);
            if (!concatsParent(cur)) {
                break;
            }
            cur = cur.parent();
        }
        while (!pending.isEmpty()) {
            Interaction c = pending.pop();
            Interaction parent = concatsParent(c) ? c.parent() : null;
            memo.put(c, buildRow(c, parent == null ? null : memo.get(parent), parent));
        }
        return memo.get(it);
    }

    private static boolean concatsParent(Interaction it) {
        return it.chatTemplateType() == Interaction.ChatTemplateType.CONCAT && it.parent() != null;
    }

    private static TensorDict buildRow(Interaction it, TensorDict parentRow, Interaction parent) {
        ModelResponse resp = it.modelResponse();
        int[] input = resp.inputTokens();
        int inLen = input.length;
        int outLen = resp.outputLength();
        int len = inLen + outLen;
        int prefix = 0;
        int turnId = 0;
        if (parentRow != null) {
            int parentLen = parentWidth(it, parent, parentRow);
            if (inLen > parentLen) {
                checkPrefix(it, parent, parentRow.tensor(TensorDict.INPUT_IDS), input, parentLen);
                prefix = parentLen;
                turnId = maxValidTurnId(parentRow.tensor(TensorDict.TURN_IDS)) + 1;
            } else {
                log.warn(
                        "interaction '{}' (CONCAT) has an input of {} tokens, not longer than the {} tokens of its parent"
                                + " '{}'; ignoring the parent and treating the whole input as prompt (as AReaL does)",
                        it.id(),
                        inLen,
                        parentLen,
                        parent.id());
            }
        }

        Int32Tensor.Builder inputIds = Int32Tensor.builder(1, len);
        inputIds.copyFrom(0, input, 0, inLen);
        inputIds.copyFrom(inLen, resp.outputTokens(), 0, outLen);

        Int32Tensor.Builder lossMask = Int32Tensor.builder(1, len);
        Float32Tensor.Builder logprobs = Float32Tensor.builder(1, len);
        Int32Tensor.Builder versions = Int32Tensor.builder(1, len);
        Int32Tensor.Builder turnIds = Int32Tensor.builder(1, len);
        if (prefix > 0) {
            copyInts(parentRow.tensor(TensorDict.LOSS_MASK), lossMask, prefix);
            copyFloats(parentRow.tensor(TensorDict.LOGPROBS), logprobs, prefix);
            copyInts(parentRow.tensor(TensorDict.VERSIONS), versions, prefix);
            copyInts(parentRow.tensor(TensorDict.TURN_IDS), turnIds, prefix);
        }
        // Prompt or context positions: mask 0 and logprob 0 are the builders' zeros.
        versions.fill(prefix, inLen, -1);
        turnIds.fill(prefix, inLen, -1);
        // Generated positions.
        lossMask.fill(inLen, len, 1);
        logprobs.copyFrom(inLen, resp.outputLogprobs(), 0, outLen);
        versions.copyFrom(inLen, resp.outputVersions(), 0, outLen);
        turnIds.fill(inLen, len, turnId);

        double reward = it.reward() != null ? it.reward() : 0.0;
        double original = it.originalReward() != null ? it.originalReward() : reward;
        return TensorDict.builder()
                .put(TensorDict.INPUT_IDS, inputIds.build())
                .put(TensorDict.LOSS_MASK, lossMask.build())
                .put(TensorDict.LOGPROBS, logprobs.build())
                .put(TensorDict.VERSIONS, versions.build())
                .put(TensorDict.TURN_IDS, turnIds.build())
                .put(TensorDict.ATTENTION_MASK, BoolTensor.filled(true, 1, len))
                .put(TensorDict.REWARDS, Float32Tensor.vector((float) reward))
                .put(TensorDict.ORIGINAL_REWARDS, Float32Tensor.vector((float) original))
                .build();
    }

    /** The parent's sequence length, after checking its row has the keys a prefix needs. */
    private static int parentWidth(Interaction child, Interaction parent, TensorDict parentRow) {
        for (String key : new String[] {
            TensorDict.INPUT_IDS, TensorDict.LOSS_MASK, TensorDict.LOGPROBS, TensorDict.VERSIONS, TensorDict.TURN_IDS
        }) {
            Tensor t = parentRow.get(key);
            if (t == null || t.rank() != 2 || t.dim(0) != 1) {
                throw new WorkflowContractException("interaction '" + child.id() + "' concatenates parent '"
                        + parent.id() + "', whose row needs '" + key + "' of shape [1, L], got "
                        + (t == null ? "no such key" : t.describe()));
            }
        }
        int width = parentRow.tensor(TensorDict.INPUT_IDS).dim(1);
        for (String key :
                new String[] {TensorDict.LOSS_MASK, TensorDict.LOGPROBS, TensorDict.VERSIONS, TensorDict.TURN_IDS}) {
            if (parentRow.tensor(key).dim(1) != width) {
                throw new WorkflowContractException("interaction '" + child.id() + "' concatenates parent '"
                        + parent.id() + "', whose '" + key + "' is "
                        + parentRow.tensor(key).describe()
                        + " but whose input_ids are "
                        + parentRow.tensor(TensorDict.INPUT_IDS).describe());
            }
        }
        return width;
    }

    private static void checkPrefix(Interaction child, Interaction parent, Tensor parentIds, int[] input, int n) {
        for (int j = 0; j < n; j++) {
            long p = parentIds.getLong(j);
            if (p != input[j]) {
                throw new WorkflowContractException("interaction '" + child.id()
                        + "' (CONCAT) does not extend its parent '" + parent.id() + "': first difference at position "
                        + j + " (parent token " + p + ", child token " + input[j] + "; parent sequence has " + n
                        + " tokens, child input " + input.length + ")");
            }
        }
    }

    private static int maxValidTurnId(Tensor turnIds) {
        long max = -1;
        for (int j = 0, n = turnIds.numel(); j < n; j++) {
            max = Math.max(max, turnIds.getLong(j));
        }
        return (int) max;
    }

    private static void copyInts(Tensor src, Int32Tensor.Builder dest, int n) {
        if (src instanceof Int32Tensor i32) {
            dest.copyFrom(0, i32, 0, n);
            return;
        }
        for (int j = 0; j < n; j++) {
            dest.set(j, (int) src.getLong(j));
        }
    }

    private static void copyFloats(Tensor src, Float32Tensor.Builder dest, int n) {
        if (src instanceof Float32Tensor f32) {
            dest.copyFrom(0, f32, 0, n);
            return;
        }
        for (int j = 0; j < n; j++) {
            dest.set(j, (float) src.getDouble(j));
        }
    }

    private static void requireFinite(Double value, String field, long taskId, int slot, Interaction it) {
        if (value != null && !Double.isFinite(value)) {
            throw new WorkflowContractException(where(taskId, slot, it) + " has a non-finite " + field + ": " + value);
        }
    }

    private static void requireFiniteTensor(TensorDict row, String key, long taskId, int slot, Interaction it) {
        Tensor t = row.get(key);
        if (t == null) {
            return;
        }
        for (int k = 0, n = t.numel(); k < n; k++) {
            double v = t.getDouble(k);
            if (!Double.isFinite(v)) {
                throw new WorkflowContractException(
                        where(taskId, slot, it) + " has a non-finite value in tensor '" + key + "': " + v);
            }
        }
    }

    private static String where(long taskId, int slot, Interaction it) {
        return "task " + taskId + " slot " + slot + ": interaction '" + it.id() + "'";
    }
}
