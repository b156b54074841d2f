package org.rollout.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;

/**
 * Checks what a trainer received against the engine's invariants (docs/reliability.md), so that
 * end-to-end and chaos tests state them once:
 *
 * <ol>
 *   <li>every admitted task ends exactly once: in one delivered batch, or rejected with a reason;
 *       a batch delivered again carries the same id and the same groups;
 *   <li>per row: {@code input_ids}, {@code attention_mask}, {@code loss_mask}, {@code logprobs} and
 *       {@code versions} have the same shape (one logprob and one version per token); generated
 *       positions carry a version ≥ 0 that never decreases along the row and lies between the
 *       group's dispatch and completion versions, and a finite logprob ≤ 0; prompt and context
 *       positions carry version −1; the group's head/tail versions match its rows;
 *   <li>staleness (semantics §6.8): at every observation {@code running ≤ C} and {@code accepted + running ≤
 *       (η + v + 1)·B} ({@link #onBudget}; both hold at every admission and only loosen between
 *       admissions). With strict staleness ({@code staleness_policy = cancel}) also: a batch handed
 *       out at trainer version {@code t} holds no group dispatched before {@code t − η}. Under
 *       AReaL's default admission policy that hand-out bound is NOT guaranteed: a slow group
 *       admitted at {@code v} can be overtaken by later, faster ones and reach the trainer after
 *       {@code v + η}, exactly as in AReaL, whose "meaning" of the bound assumes completion in
 *       admission order;
 *   <li>the weight version never goes backwards.
 * </ol>
 *
 * <p>Feed it every batch ({@link #onBatch}), every version the trainer saw ({@link #onVersion}),
 * budget observations ({@link #onBudget}), and at the end the tasks admitted and rejected
 * ({@link #accountFor}); read {@link #violations()}. Thread-safe.
 */
public final class InvariantChecker {
    private final long maxHeadOffpolicyness;
    private final boolean strictStaleness;
    private final Map<Long, Long> taskToBatch = new HashMap<>();
    private final Map<Long, List<Long>> batchTasks = new HashMap<>();
    private final List<String> violations = new ArrayList<>();
    private final Map<String, Long> checks = new LinkedHashMap<>();
    private int lastVersion = Integer.MIN_VALUE;
    private long rows;

    /**
     * @param maxHeadOffpolicyness η
     * @param strictStaleness also check the hand-out bound (only {@code staleness_policy = cancel}
     *     guarantees it)
     */
    public InvariantChecker(long maxHeadOffpolicyness, boolean strictStaleness) {
        this.maxHeadOffpolicyness = maxHeadOffpolicyness;
        this.strictStaleness = strictStaleness;
    }

    /**
     * Checks one observation of the staleness budget (semantics §6.8): {@code running ≤ C} and {@code
     * accepted + running ≤ (η + version + 1) · B}.
     */
    public synchronized void onBudget(
            int version, long accepted, long running, long maxConcurrentRollouts, long consumerBatchSize) {
        count("budget_bound");
        if (running > maxConcurrentRollouts) {
            violations.add("running " + running + " exceeds max_concurrent_rollouts=" + maxConcurrentRollouts);
        }
        long bound = Math.multiplyHigh(maxHeadOffpolicyness + version + 1, consumerBatchSize) != 0
                ? Long.MAX_VALUE
                : (maxHeadOffpolicyness + version + 1) * consumerBatchSize;
        if (accepted + running > bound) {
            violations.add("accepted " + accepted + " + running " + running + " exceeds (eta + v + 1) * B = " + bound
                    + " at version " + version);
        }
    }

    /** Records that the trainer observed weight version {@code version}. */
    public synchronized void onVersion(int version) {
        count("version_monotonic");
        if (version < lastVersion) {
            violations.add("weight version went backwards: " + lastVersion + " then " + version);
        }
        lastVersion = Math.max(lastVersion, version);
    }

    /** Checks one delivered batch (a redelivery of a known batch id is checked for sameness). */
    public synchronized void onBatch(TrainingBatch batch) {
        List<Long> tasks = batch.groups().stream().map(TrainingGroup::taskId).toList();
        List<Long> known = batchTasks.get(batch.batchId());
        count("batch_redelivery_same");
        if (known != null) {
            if (!known.equals(tasks)) {
                violations.add(
                        "batch " + batch.batchId() + " delivered again with other tasks: " + known + " then " + tasks);
            }
            return;
        }
        batchTasks.put(batch.batchId(), tasks);
        for (TrainingGroup g : batch.groups()) {
            count("task_once");
            Long previous = taskToBatch.putIfAbsent(g.taskId(), batch.batchId());
            if (previous != null) {
                violations.add("task " + g.taskId() + " delivered twice: in batch " + previous + " and batch "
                        + batch.batchId());
            }
            checkStaleness(batch, g);
            checkGroup(g);
        }
    }

    /**
     * Checks that every admitted task ended exactly once.
     *
     * @param admitted every task id the engine admitted
     * @param rejected task id → reason, for the tasks that were rejected
     */
    public synchronized void accountFor(Collection<Long> admitted, Map<Long, String> rejected) {
        Set<Long> admittedSet = new HashSet<>(admitted);
        for (long task : admittedSet) {
            count("task_accounted");
            boolean delivered = taskToBatch.containsKey(task);
            boolean wasRejected = rejected.containsKey(task);
            if (delivered && wasRejected) {
                violations.add("task " + task + " was both delivered (batch " + taskToBatch.get(task)
                        + ") and rejected (" + rejected.get(task) + ")");
            } else if (!delivered && !wasRejected) {
                violations.add("task " + task + " was admitted but neither delivered nor rejected");
            } else if (wasRejected
                    && (rejected.get(task) == null || rejected.get(task).isBlank())) {
                violations.add("task " + task + " was rejected without a reason");
            }
        }
        for (long task : taskToBatch.keySet()) {
            if (!admittedSet.contains(task)) {
                violations.add("task " + task + " was delivered but never admitted");
            }
        }
    }

    /** Every violation found so far, in order; empty when all invariants held. */
    public synchronized List<String> violations() {
        return List.copyOf(violations);
    }

    /** How many times each invariant was checked. */
    public synchronized Map<String, Long> checks() {
        return Map.copyOf(checks);
    }

    /** Distinct tasks delivered so far. */
    public synchronized int tasksDelivered() {
        return taskToBatch.size();
    }

    /** Rows checked so far. */
    public synchronized long rowsChecked() {
        return rows;
    }

    private void checkStaleness(TrainingBatch batch, TrainingGroup g) {
        if (!strictStaleness) {
            return;
        }
        count("staleness_bound");
        long behind = (long) batch.versionAtHandout() - g.dispatchVersion();
        if (behind > maxHeadOffpolicyness) {
            violations.add("task " + g.taskId() + " dispatched at version " + g.dispatchVersion()
                    + " was handed out at version " + batch.versionAtHandout() + ", more than max_head_offpolicyness="
                    + maxHeadOffpolicyness + " behind");
        }
    }

    private void checkGroup(TrainingGroup g) {
        TensorDict d = g.rows();
        String where = "task " + g.taskId();
        Tensor ids = d.get(TensorDict.INPUT_IDS);
        Tensor mask = d.get(TensorDict.LOSS_MASK);
        Tensor attention = d.get(TensorDict.ATTENTION_MASK);
        Tensor logprobs = d.get(TensorDict.LOGPROBS);
        Tensor versions = d.get(TensorDict.VERSIONS);
        count("row_lengths_equal");
        for (String key : List.of(
                TensorDict.INPUT_IDS,
                TensorDict.ATTENTION_MASK,
                TensorDict.LOSS_MASK,
                TensorDict.LOGPROBS,
                TensorDict.VERSIONS)) {
            if (!d.has(key)) {
                violations.add(where + ": missing key '" + key + "'");
                return;
            }
        }
        for (Tensor t : List.of(attention, mask, logprobs, versions)) {
            if (!Arrays.equals(t.shape(), ids.shape())) {
                violations.add(where + ": shapes differ: input_ids " + ids.describe() + " vs " + t.describe());
                return;
            }
        }
        int b = ids.dim(0);
        int l = ids.dim(1);
        for (int i = 0; i < b; i++) {
            rows++;
            count("row_versions");
            int last = Integer.MIN_VALUE;
            for (int j = 0; j < l; j++) {
                int k = i * l + j;
                boolean real = attention.getLong(k) != 0;
                boolean generated = real && mask.getLong(k) == 1;
                int v = (int) versions.getLong(k);
                double lp = logprobs.getDouble(k);
                if (generated) {
                    if (v < 0) {
                        violations.add(where + " row " + i + " position " + j + ": generated token with version " + v);
                    } else if (v < last) {
                        violations.add(where + " row " + i + " position " + j + ": version decreased from " + last
                                + " to " + v);
                    } else if (v < g.dispatchVersion() || v > g.completionVersion()) {
                        violations.add(where + " row " + i + " position " + j + ": version " + v
                                + " outside dispatch..completion [" + g.dispatchVersion() + ", "
                                + g.completionVersion() + "]");
                    }
                    if (!Double.isFinite(lp) || lp > 1e-6) {
                        violations.add(where + " row " + i + " position " + j + ": generated logprob " + lp);
                    }
                    last = Math.max(last, v);
                } else if (real && v != -1) {
                    violations.add(where + " row " + i + " position " + j + ": prompt/context token with version " + v);
                }
            }
        }
        count("head_tail_versions");
        GeneratedVersions span = GeneratedVersions.of(d).orElse(null);
        if (span != null && (span.head() != g.headVersion() || span.tail() != g.tailVersion())) {
            violations.add(where + ": head/tail versions " + g.headVersion() + ".." + g.tailVersion()
                    + " but rows span " + span.head() + ".." + span.tail());
        }
    }

    private void count(String check) {
        checks.merge(check, 1L, Long::sum);
    }
}
