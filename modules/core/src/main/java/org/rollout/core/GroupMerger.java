package org.rollout.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.rollout.api.EpisodeResult;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Interaction;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.WorkflowContractException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides what one prompt group of {@code G} slot results becomes: AReaL's grouped-rollout
 * decision procedure (semantics §5.3) merged with the later refinements of semantics §5.6 and §5.8 [C].
 *
 * <pre>
 *   slots 0..G-1 ─► 1 validate every usable slot ──── contract error ──► WorkflowContractException
 *                   2 U == 0                      ──► Dropped "no usable slots (...)"
 *                   3 U &lt; G and drop_incomplete   ──► Dropped "incomplete group: ..."
 *                   4 U &lt; M                       ──► Dropped "... below min_usable_group_size=M"
 *                   5 mixed result kinds          ──► WorkflowContractException
 *                   6 duplicate completion ids    ──► WorkflowContractException
 *                   7 reward normalisation        ──► Dropped (missing row reward) or contract error
 *                   8 rows of every usable slot, concatenated with padding in slot order
 *                   9                             ──► Merged(rows, slot boundaries, references)
 * </pre>
 *
 * <p>Usage: the group actor collects its slots' results in slot order (a slot that returned
 * nothing is {@code null} or {@link EpisodeResult.Rejected}) and calls {@link #merge} once. A
 * {@link WorkflowContractException} is never turned into a quiet drop: it propagates, and the
 * caller rejects the group and reports the error loudly (semantics §5.8).
 *
 * <p>Where this differs from AReaL, deliberately:
 *
 * <ul>
 *   <li>Rollout-time normalisation runs over the usable slots only ([C]), for tensor results as
 *       well as interaction results (AReaL [B] skips tensor results), with one reference reward
 *       per slot ({@code rollout_reward}, or the common row reward) and each row normalised
 *       with the group's center and divisor ({@link RewardNormalizer}).
 *   <li>Multi-row slots are legal ([C]); the slot row counts travel in the outcome instead of
 *       AReaL [B]'s slot-cardinality error.
 *   <li>Mixed result kinds and duplicate completion ids across slots are contract errors (AReaL
 *       fails obscurely on the first and silently overwrites on the second).
 *   <li>Structural checks (row counts, widths, finite rewards) always run; they are cheap.
 * </ul>
 *
 * <p>Stateless and thread-safe; it never mutates its inputs.
 */
public final class GroupMerger {
    private static final Logger log = LoggerFactory.getLogger(GroupMerger.class);

    /** The reason given to a slot that returned nothing at all. */
    public static final String RETURNED_NONE = "returned_none";

    /** At most this many values of a tensor are quoted in an error. */
    private static final int QUOTED_VALUES = 8;

    private GroupMerger() {}

    /**
     * Merges one group.
     *
     * @param taskId the group's task id, for messages
     * @param slots the slot results in slot order {@code 0..G-1}; a null entry is {@code
     *     Rejected("returned_none")}
     * @param opts the group size, minimum and flags
     * @return the merged rows with their slot boundaries, or why the group was dropped
     * @throws IllegalArgumentException when {@code slots.size() != opts.groupSize()}
     * @throws WorkflowContractException when a usable slot breaks the rollout contract; the message
     *     names the task, the slot and the key or interaction id
     */
    public static GroupOutcome merge(long taskId, List<EpisodeResult> slots, GroupOptions opts) {
        int g = opts.groupSize();
        if (slots.size() != g) {
            throw new IllegalArgumentException(
                    "task " + taskId + ": got " + slots.size() + " slot results for group_size " + g);
        }
        EpisodeResult[] results = new EpisodeResult[g];
        int u = 0;
        for (int s = 0; s < g; s++) {
            EpisodeResult r = slots.get(s);
            results[s] = r == null ? EpisodeResult.rejected(RETURNED_NONE) : r;
            if (!(results[s] instanceof EpisodeResult.Rejected)) {
                u++;
            }
        }
        int[] usable = new int[u];
        for (int s = 0, k = 0; s < g; s++) {
            if (!(results[s] instanceof EpisodeResult.Rejected)) {
                usable[k++] = s;
            }
        }

        // 1. Structural validation: always on.
        for (int s : usable) {
            validate(taskId, s, results[s]);
        }

        // 2-4. How many slots are usable.
        if (u == 0) {
            return new GroupOutcome.Dropped(
                    "no usable slots (all " + g + " rejected: " + rejectionCounts(results) + ")",
                    GroupMetrics.dropped(g, 0));
        }
        int m = opts.minUsableGroupSize();
        if (u < g) {
            if (opts.dropIncompleteGroup()) {
                return new GroupOutcome.Dropped(
                        "incomplete group: " + u + "/" + g + " slots usable and drop_incomplete_group is set",
                        GroupMetrics.dropped(g, u));
            }
            if (u < m) {
                log.warn(
                        "task {}: dropping group below min_usable_group_size ({}/{} slots usable, {} required)",
                        taskId,
                        u,
                        g,
                        m);
            } else {
                log.warn("task {}: {}/{} slots usable; using remaining results", taskId, u, g);
            }
        }
        if (u < m) {
            return new GroupOutcome.Dropped(
                    u + "/" + g + " usable slots is below min_usable_group_size=" + m, GroupMetrics.dropped(g, u));
        }

        // 5. One result kind per group.
        boolean interactions = results[usable[0]] instanceof EpisodeResult.Interactions;
        requireOneKind(taskId, results, usable);

        // 6. Completion ids are unique across the group.
        if (interactions) {
            requireUniqueCompletionIds(taskId, results, usable);
        }

        // 7. One reference per slot; normalised when rollout-time normalisation is on.
        double[] references = new double[u];
        RewardNormalizer normalizer = null;
        if (opts.rewardNormalization() && g > 1) {
            String missing = normalizationReferences(taskId, results, usable, references);
            if (missing != null) {
                return new GroupOutcome.Dropped(missing, GroupMetrics.dropped(g, u));
            }
            normalizer = RewardNormalizer.fromReferences(references, opts.rewardNormalizationUseStd());
            for (int k = 0; k < u; k++) {
                references[k] = normalizer.normalize(references[k]);
            }
        } else {
            for (int k = 0; k < u; k++) {
                int s = usable[k];
                references[k] = results[s] instanceof EpisodeResult.Interactions r
                        ? explicitReference(taskId, s, r)
                        : explicitReference(((EpisodeResult.Trajectory) results[s]).data());
            }
        }

        // 8. Rows of every usable slot, normalised when asked, concatenated once in slot order.
        int[] rowCounts = new int[u];
        TensorDict rows = concatRows(taskId, results, usable, normalizer, rowCounts);

        // 9. The rows travel with their slot boundaries.
        return new GroupOutcome.Merged(rows, usable, rowCounts, references, GroupMetrics.merged(g, u));
    }

    /**
     * Fills {@code references} with each usable slot's reference for normalisation. Returns the
     * drop reason when a usable rollout has a missing row reward, else null; contract errors in any
     * slot are thrown first, so they never hide behind a drop.
     */
    private static String normalizationReferences(
            long taskId, EpisodeResult[] results, int[] usable, double[] references) {
        String missing = null;
        for (int k = 0; k < usable.length; k++) {
            int s = usable[k];
            if (results[s] instanceof EpisodeResult.Interactions r) {
                Interaction unrewarded = firstWithoutReward(r);
                if (unrewarded != null) {
                    if (missing == null) {
                        missing = "slot " + s + " has a missing row reward (interaction '" + unrewarded.id()
                                + "') and reward_normalization needs one for every usable rollout";
                    }
                    explicitReference(taskId, s, r);
                    continue;
                }
            }
            references[k] = normalizationReference(taskId, s, results[s]);
        }
        return missing;
    }

    /**
     * The usable slots' rows, without {@code rollout_reward}, normalised when {@code normalizer} is
     * set, concatenated in slot order; {@code rowCounts[k]} receives the rows of usable slot k.
     */
    private static TensorDict concatRows(
            long taskId, EpisodeResult[] results, int[] usable, RewardNormalizer normalizer, int[] rowCounts) {
        List<TensorDict> parts = new ArrayList<>(usable.length);
        IntList partSlots = new IntList(usable.length);
        List<String> partIds = new ArrayList<>(usable.length);
        for (int k = 0; k < usable.length; k++) {
            int s = usable[k];
            if (results[s] instanceof EpisodeResult.Trajectory t) {
                TensorDict d = t.data().without(TensorDict.ROLLOUT_REWARD);
                if (normalizer != null) {
                    d = normalizeTrajectory(d, normalizer);
                }
                parts.add(d);
                partSlots.add(s);
                partIds.add(null);
                rowCounts[k] = d.batchSize();
                continue;
            }
            EpisodeResult.Interactions r = (EpisodeResult.Interactions) results[s];
            List<TensorDict> rows = InteractionTensors.rows(r, taskId, s);
            int i = 0;
            for (Interaction it : r.byId().values()) {
                TensorDict row = rows.get(i++);
                if (normalizer != null) {
                    row = normalizeInteractionRow(row, it.reward(), normalizer);
                }
                parts.add(row);
                partSlots.add(s);
                partIds.add(it.id());
                rowCounts[k] += row.batchSize();
            }
        }
        return TensorDicts.concatPadded(
                parts,
                i -> "task " + taskId + " slot " + partSlots.get(i)
                        + (partIds.get(i) == null ? "" : " interaction '" + partIds.get(i) + "'"),
                WorkflowContractException::new);
    }

    // ---- 1. structural validation ------------------------------------------------------------

    private static void validate(long taskId, int slot, EpisodeResult result) {
        switch (result) {
            case EpisodeResult.Trajectory t -> validateTrajectory(taskId, slot, t.data());
            case EpisodeResult.Interactions r -> {
                if (r.byId().isEmpty()) {
                    throw new WorkflowContractException(
                            "task " + taskId + " slot " + slot + ": the interaction result is empty");
                }
                InteractionTensors.check(r, taskId, slot);
            }
            case EpisodeResult.Rejected ignored -> {
                // Not usable; nothing to validate.
            }
        }
    }

    private static void validateTrajectory(long taskId, int slot, TensorDict d) {
        String where = "task " + taskId + " slot " + slot + ": ";
        if (d.isEmpty()) {
            throw new WorkflowContractException(where + "the trajectory is empty (no tensors)");
        }
        int rows = rowCount(d);
        if (rows < 1) {
            throw new WorkflowContractException(
                    where + "the trajectory has no rows (" + d + "); a usable result needs at least one");
        }
        String widthKey = null;
        int width = -1;
        for (Map.Entry<String, Tensor> e : d.asMap().entrySet()) {
            String key = e.getKey();
            Tensor t = e.getValue();
            if (key.equals(TensorDict.ROLLOUT_REWARD) || t.rank() == 0) {
                continue;
            }
            if (t.dim(0) != rows) {
                throw new WorkflowContractException(where + "tensor '" + key + "' is " + t.describe() + " but the"
                        + " trajectory has " + rows + " rows (dim 0 of every tensor must be the row count)");
            }
            if (t.rank() == 2) {
                if (widthKey == null) {
                    widthKey = key;
                    width = t.dim(1);
                } else if (t.dim(1) != width) {
                    throw new WorkflowContractException(where + "tensor '" + key + "' is " + t.describe() + " but '"
                            + widthKey + "' is " + d.tensor(widthKey).describe()
                            + " (rank-2 tensors must share dim 1)");
                }
            }
        }
        for (String key : new String[] {TensorDict.REWARDS, TensorDict.ORIGINAL_REWARDS}) {
            Tensor t = d.get(key);
            if (t == null) {
                continue;
            }
            if (t.rank() != 1) {
                throw new WorkflowContractException(
                        where + "tensor '" + key + "' must be rank 1 [" + rows + "], got " + t.describe());
            }
            for (int i = 0; i < rows; i++) {
                double v = t.getDouble(i);
                if (!Double.isFinite(v)) {
                    throw new WorkflowContractException(
                            where + "tensor '" + key + "' has a non-finite value " + v + " in row " + i);
                }
            }
        }
        Tensor ref = d.get(TensorDict.ROLLOUT_REWARD);
        if (ref != null) {
            if (!(ref.rank() == 0 || (ref.rank() == 1 && ref.dim(0) == 1))) {
                throw new WorkflowContractException(
                        where + "tensor 'rollout_reward' must be a scalar (shape [] or [1]), got " + ref.describe());
            }
            double v = ref.getDouble(0);
            if (!Double.isFinite(v)) {
                throw new WorkflowContractException(where + "tensor 'rollout_reward' is not finite: " + v);
            }
        }
    }

    /** The row count: dim 0 of {@code attention_mask}, else of the first per-row tensor. */
    private static int rowCount(TensorDict d) {
        Tensor mask = d.get(TensorDict.ATTENTION_MASK);
        if (mask != null && mask.rank() >= 1) {
            return mask.dim(0);
        }
        for (Map.Entry<String, Tensor> e : d.asMap().entrySet()) {
            if (e.getValue().rank() >= 1 && !e.getKey().equals(TensorDict.ROLLOUT_REWARD)) {
                return e.getValue().dim(0);
            }
        }
        return 0;
    }

    // ---- 2. rejection reasons ----------------------------------------------------------------

    private static String rejectionCounts(EpisodeResult[] results) {
        Map<String, Integer> counts = new LinkedHashMap<>();
        for (EpisodeResult r : results) {
            counts.merge(((EpisodeResult.Rejected) r).reason(), 1, Integer::sum);
        }
        StringBuilder sb = new StringBuilder();
        counts.forEach((reason, n) ->
                sb.append(sb.isEmpty() ? "" : ", ").append(reason).append(" x").append(n));
        return sb.toString();
    }

    // ---- 5, 6. kinds and ids -----------------------------------------------------------------

    private static void requireOneKind(long taskId, EpisodeResult[] results, int[] usable) {
        List<Integer> trajectories = new ArrayList<>();
        List<Integer> interactions = new ArrayList<>();
        for (int s : usable) {
            (results[s] instanceof EpisodeResult.Trajectory ? trajectories : interactions).add(s);
        }
        if (!trajectories.isEmpty() && !interactions.isEmpty()) {
            throw new WorkflowContractException("task " + taskId + ": mixed result kinds in one group: slots "
                    + trajectories + " returned trajectories, slots " + interactions + " returned interactions");
        }
    }

    private static void requireUniqueCompletionIds(long taskId, EpisodeResult[] results, int[] usable) {
        Map<String, Integer> slotOf = new HashMap<>();
        for (int s : usable) {
            for (String id : ((EpisodeResult.Interactions) results[s]).byId().keySet()) {
                Integer earlier = slotOf.putIfAbsent(id, s);
                if (earlier != null) {
                    throw new WorkflowContractException("task " + taskId + ": completion id '" + id
                            + "' appears in slots " + earlier + " and " + s
                            + " (completion ids must be unique within a group)");
                }
            }
        }
    }

    // ---- 7. references and normalisation -----------------------------------------------------

    /** The slot's reference for normalisation: explicit, else the common row reward. */
    private static double normalizationReference(long taskId, int slot, EpisodeResult result) {
        String where = "task " + taskId + " slot " + slot + ": ";
        double[] rowRewards;
        double explicit;
        if (result instanceof EpisodeResult.Trajectory t) {
            Tensor rewards = t.data().get(TensorDict.REWARDS);
            if (rewards == null) {
                throw new WorkflowContractException(where + "reward_normalization needs a 'rewards' tensor, the"
                        + " trajectory has " + t.data().keys());
            }
            rowRewards = TensorDicts.toDoubles(rewards);
            explicit = explicitReference(t.data());
        } else {
            EpisodeResult.Interactions r = (EpisodeResult.Interactions) result;
            rowRewards = new double[r.byId().size()];
            int i = 0;
            for (Interaction it : r.byId().values()) {
                rowRewards[i++] = it.reward();
            }
            explicit = explicitReference(taskId, slot, r);
        }
        if (!Double.isNaN(explicit)) {
            return explicit;
        }
        for (double v : rowRewards) {
            if (Double.compare(v, rowRewards[0]) != 0) {
                throw new WorkflowContractException(where + "rows have different rewards " + quote(rowRewards)
                        + " and no explicit rollout_reward; set rollout_reward to the logical rollout's reference"
                        + " reward");
            }
        }
        return rowRewards[0];
    }

    /** A trajectory's {@code rollout_reward}, or NaN when it has none (validated finite). */
    private static double explicitReference(TensorDict d) {
        Tensor ref = d.get(TensorDict.ROLLOUT_REWARD);
        return ref == null ? Double.NaN : ref.getDouble(0);
    }

    /** The interactions' common {@code rollout_reward}, or NaN when none sets one. */
    private static double explicitReference(long taskId, int slot, EpisodeResult.Interactions r) {
        Double ref = null;
        String refId = null;
        for (Interaction it : r.byId().values()) {
            Double v = it.rolloutReward();
            if (v == null) {
                continue;
            }
            if (ref == null) {
                ref = v;
                refId = it.id();
            } else if (Double.compare(ref, v) != 0) {
                throw new WorkflowContractException("task " + taskId + " slot " + slot
                        + ": interactions disagree on rollout_reward: " + ref + " (interaction '" + refId + "') vs "
                        + v + " (interaction '" + it.id() + "'); one logical rollout has one reference");
            }
        }
        return ref == null ? Double.NaN : ref;
    }

    private static Interaction firstWithoutReward(EpisodeResult.Interactions r) {
        for (Interaction it : r.byId().values()) {
            if (it.reward() == null) {
                return it;
            }
        }
        return null;
    }

    /** Each row's reward normalised; {@code original_rewards} set to the raw row rewards. */
    private static TensorDict normalizeTrajectory(TensorDict d, RewardNormalizer normalizer) {
        Tensor raw = d.tensor(TensorDict.REWARDS);
        int n = raw.numel();
        Float32Tensor.Builder rewards = Float32Tensor.builder(n);
        Float32Tensor.Builder original = Float32Tensor.builder(n);
        for (int i = 0; i < n; i++) {
            double r = raw.getDouble(i);
            rewards.set(i, (float) normalizer.normalize(r));
            original.set(i, (float) r);
        }
        return d.toBuilder()
                .put(TensorDict.REWARDS, rewards.build())
                .put(TensorDict.ORIGINAL_REWARDS, original.build())
                .build();
    }

    /**
     * An interaction's row(s) with {@code rewards} normalised and {@code original_rewards} the raw
     * reward: the row {@code interaction.withRewards(norm, raw)} converts to, and what AReaL does to
     * a cached row.
     */
    private static TensorDict normalizeInteractionRow(TensorDict row, double raw, RewardNormalizer normalizer) {
        int n = row.batchSize();
        return row.toBuilder()
                .put(TensorDict.REWARDS, Float32Tensor.filled((float) normalizer.normalize(raw), n))
                .put(TensorDict.ORIGINAL_REWARDS, Float32Tensor.filled((float) raw, n))
                .build();
    }

    private static String quote(double[] values) {
        if (values.length <= QUOTED_VALUES) {
            return Arrays.toString(values);
        }
        String head = Arrays.toString(Arrays.copyOf(values, QUOTED_VALUES));
        return head.substring(0, head.length() - 1) + ", ... (" + values.length + " rows)]";
    }

    /** A growable int array, so slot indices of parts are not boxed. */
    private static final class IntList {
        private int[] values;
        private int size;

        IntList(int capacity) {
            values = new int[Math.max(capacity, 4)];
        }

        void add(int v) {
            if (size == values.length) {
                values = Arrays.copyOf(values, size * 2);
            }
            values[size++] = v;
        }

        int get(int i) {
            return values[Objects.checkIndex(i, size)];
        }
    }
}
