package org.rollout.core;

import org.rollout.api.InvalidConfigException;
import org.rollout.config.RolloutSettings;

/**
 * How many more prompt groups may start now without breaking the concurrency cap or the
 * staleness bound: AReaL's {@code StalenessManager} (semantics §6.8), with checkpoint recovery.
 *
 * <pre>
 *   submit ──onEnqueue──► enqueued ──onAdmit──► running ──onAccept──► accepted   (never decremented)
 *                            │                     └──────onReject──► rejected   (frees budget)
 *                            │                     └──onHold──► held ──onHeldAccept──► accepted
 *                            │                                       └───onHeldReject──► rejected
 *                            └──onDequeueWithoutAdmit (withdrawn before it started)
 *
 *   capacity = min( C − running ,  (η + v + 1)·Bc − (accepted + running + held) )     may be negative
 * </pre>
 *
 * <p>{@code v} is the current weight version, {@code C} the concurrency cap
 * ({@code max_concurrent_rollouts}), {@code Bc} the consumer batch size
 * ({@code consumer_batch_size}) and {@code η} the allowed head off-policyness
 * ({@code max_head_offpolicyness}). A group admitted at version {@code v} lands in the accepted
 * stream below position {@code (η + v + 1)·Bc}, so it is consumed by a training step at version
 * {@code ≤ v + η}. {@code accepted} is never decremented when a batch is consumed: the budget
 * grows by {@code Bc} per version instead. Rejections do not count, so they free budget.
 *
 * <p><b>Units are groups.</b> One task is one prompt is one whole group of {@code n_samples}
 * episodes; every counter, {@code C} and {@code Bc} count groups, never samples.
 *
 * <p><b>Recovery.</b> After a restart from a checkpoint the version jumps to {@code V} while
 * {@code accepted} would start at 0, so capacity would balloon to {@code (η + V + 1)·Bc} (AReaL
 * #1388). {@link #onVersionRecovered(int)} sets {@code accepted = V·Bc} as well, which restores
 * the bound.
 *
 * <p><b>Held.</b> After a fail-over, a task that a trainer may still hold in a batch of the lost
 * collector is run again, and its new outcome is held until that batch's fate is known (not one of
 * AReaL's states; docs/reliability.md, "Recovery and late messages"). A held task no longer runs,
 * so it leaves the concurrency cap; it still ends accepted or rejected, so it keeps its place in
 * the staleness bound. Counting it as running would stall admission for a whole
 * {@code batch_ack_timeout} when many are held; not counting it would overshoot the bound.
 *
 * <p><b>Overflow.</b> Evaluation uses {@code η = 10^12} (no staleness bound); all arithmetic is
 * {@code long} and saturates at {@link Long#MAX_VALUE} / {@link Long#MIN_VALUE} instead of wrapping.
 *
 * <p><b>Threading.</b> Thread-safe: every method holds this object's monitor, so each transition
 * is atomic and a {@link #snapshot()} is consistent. The intended owner is a single actor, where
 * the monitor is uncontended and costs next to nothing. {@link #canAdmit()} followed by
 * {@link #onAdmit()} is not atomic when several threads admit; they use {@link #tryAdmit()}.
 *
 * <p><b>Errors.</b> A transition that would make a counter negative is a bookkeeping bug in the
 * caller (a task counted twice, or never enqueued): it throws {@link IllegalStateException}
 * naming the counter and the transition, and changes nothing. So does a version that goes
 * backwards.
 */
public final class StalenessBudget {

    /** {@code max_head_offpolicyness} that evaluation engines use: effectively no staleness bound. */
    public static final long EVAL_MAX_HEAD_OFFPOLICYNESS = 1_000_000_000_000L;

    private final int maxConcurrentRollouts;
    private final int consumerBatchSize;
    private final long maxHeadOffpolicyness;

    private long enqueued;
    private long running;
    private long accepted;
    private long rejected;
    private long held;
    private int version;

    /**
     * A budget with the given local values, at version 0 with all counters at 0.
     *
     * @param maxConcurrentRollouts {@code C}, at least 1
     * @param consumerBatchSize {@code Bc}, at least 1
     * @param maxHeadOffpolicyness {@code η}, at least 0 (use {@link #EVAL_MAX_HEAD_OFFPOLICYNESS} for eval)
     * @throws InvalidConfigException naming the AReaL key of the first value out of range
     */
    public StalenessBudget(int maxConcurrentRollouts, int consumerBatchSize, long maxHeadOffpolicyness) {
        requireAtLeast("max_concurrent_rollouts", maxConcurrentRollouts, 1);
        requireAtLeast("consumer_batch_size", consumerBatchSize, 1);
        requireAtLeast("max_head_offpolicyness", maxHeadOffpolicyness, 0);
        this.maxConcurrentRollouts = maxConcurrentRollouts;
        this.consumerBatchSize = consumerBatchSize;
        this.maxHeadOffpolicyness = maxHeadOffpolicyness;
    }

    /**
     * A new budget with {@code C = max_concurrent_rollouts}, {@code B = consumer_batch_size} and
     * {@code η = max_head_offpolicyness} of the settings, at version 0. The coordinator keeps one
     * global budget, so nothing is divided by a data-parallel size. Each call returns
     * a new instance.
     */
    public static StalenessBudget of(RolloutSettings settings) {
        RolloutSettings.Rollout r = settings.rollout();
        return new StalenessBudget(r.maxConcurrentRollouts(), r.consumerBatchSize(), r.maxHeadOffpolicyness());
    }

    /**
     * A budget with semantics §6.8's local values for one of {@code dataParallelSize} trainer ranks:
     * {@code C = max(1, (maxConcurrentRollouts ?? consumerBatchSize) / dp)} and
     * {@code Bc = max(1, consumerBatchSize / dp)} (integer division).
     *
     * <p>Scale exactly once: a controller that keeps one global budget passes {@code dp = 1}
     * (AReaL #1396, where double scaling drove capacity to 0 and rollout hung).
     *
     * @param maxConcurrentRollouts the configured cap, or null to fall back to {@code consumerBatchSize}
     * @throws InvalidConfigException naming the AReaL key of the first value out of range
     *     ({@code max_concurrent_rollouts}, {@code consumer_batch_size}, {@code max_head_offpolicyness}
     *     or {@code train_data_parallel_size})
     */
    public static StalenessBudget local(
            Integer maxConcurrentRollouts, int consumerBatchSize, long eta, int dataParallelSize) {
        if (maxConcurrentRollouts != null) {
            requireAtLeast("max_concurrent_rollouts", maxConcurrentRollouts, 1);
        }
        requireAtLeast("consumer_batch_size", consumerBatchSize, 1);
        requireAtLeast("max_head_offpolicyness", eta, 0);
        requireAtLeast("train_data_parallel_size", dataParallelSize, 1);
        int concurrent = maxConcurrentRollouts != null ? maxConcurrentRollouts : consumerBatchSize;
        return new StalenessBudget(
                Math.max(1, concurrent / dataParallelSize), Math.max(1, consumerBatchSize / dataParallelSize), eta);
    }

    private static void requireAtLeast(String key, long value, long min) {
        if (value < min) {
            throw new InvalidConfigException(key, value, "an integer >= " + min);
        }
    }

    // ---- counter transitions (semantics §6.8 table) ----

    /** A task was submitted: {@code enqueued + 1}. */
    public synchronized void onEnqueue() {
        enqueued = Math.addExact(enqueued, 1);
    }

    /** An enqueued task started: {@code enqueued − 1, running + 1}. Does not check capacity. */
    public synchronized void onAdmit() {
        requirePositive("enqueued", enqueued, "admit");
        enqueued--;
        running++;
    }

    /**
     * Admits one enqueued task if {@code capacity() > 0}, atomically; for callers that admit from
     * several threads.
     *
     * @return true when the task was admitted
     * @throws IllegalStateException when no task is enqueued
     */
    public synchronized boolean tryAdmit() {
        requirePositive("enqueued", enqueued, "admit");
        if (capacity() <= 0) {
            return false;
        }
        onAdmit();
        return true;
    }

    /** An enqueued task was withdrawn before it started: {@code enqueued − 1}. */
    public synchronized void onDequeueWithoutAdmit() {
        requirePositive("enqueued", enqueued, "dequeue without admit");
        enqueued--;
    }

    /** A running task was accepted: {@code running − 1, accepted + 1}. */
    public synchronized void onAccept() {
        requirePositive("running", running, "accept");
        running--;
        accepted++;
    }

    /**
     * A running task was rejected, failed or broke the workflow contract:
     * {@code running − 1, rejected + 1}. The freed place counts again toward capacity.
     */
    public synchronized void onReject() {
        requirePositive("running", running, "reject");
        running--;
        rejected++;
    }

    /**
     * A running task ended, and its outcome is held until a trainer's late acknowledgement of a
     * lost collector's batch has had its chance: {@code running − 1, held + 1}. Its concurrency
     * place is free; its staleness place is not.
     */
    public synchronized void onHold() {
        requirePositive("running", running, "hold");
        running--;
        held++;
    }

    /** A held task ended accepted (delivered, or its held outcome taken): {@code held − 1, accepted + 1}. */
    public synchronized void onHeldAccept() {
        requirePositive("held", held, "held accept");
        held--;
        accepted++;
    }

    /**
     * The collector that held the outcomes was lost, and they are delivered again to its
     * successor: every held task counts as running again ({@code running + held, held = 0}).
     */
    public synchronized void releaseHeld() {
        running += held;
        held = 0;
    }

    /** A held task ended rejected: {@code held − 1, rejected + 1}; its place counts again toward capacity. */
    public synchronized void onHeldReject() {
        requirePositive("held", held, "held reject");
        held--;
        rejected++;
    }

    /**
     * An accepted group was discarded before any trainer consumed it (strict staleness drops a
     * buffered group that became too stale): {@code accepted − 1, rejected + 1}, which frees its
     * position in the accepted stream. Not one of AReaL's transitions: AReaL never discards an
     * accepted result.
     */
    public synchronized void onAcceptedDiscarded() {
        requirePositive("accepted", accepted, "discard");
        accepted--;
        rejected++;
    }

    private void requirePositive(String counter, long value, String transition) {
        if (value <= 0) {
            throw new IllegalStateException("staleness budget: " + counter + " would become negative on " + transition
                    + " (" + counter + "=" + value + "; " + counters() + ")");
        }
    }

    // ---- version ----

    /**
     * The trainer published weight version {@code v}; the budget grows by {@code Bc} per step.
     * The same version again is a no-op.
     *
     * @throws IllegalStateException when {@code v} is below the current version (naming both)
     */
    public synchronized void onVersion(int v) {
        requireNotBackwards(v, "onVersion");
        version = v;
    }

    /**
     * The trainer resumed from a checkpoint at version {@code v} ({@code last_global_step + 1}):
     * sets the version and {@code accepted = v·Bc}, as if {@code v} full batches had been accepted
     * (#1345, fixing #1388). {@code running}, {@code enqueued} and {@code rejected} are kept.
     *
     * @throws IllegalStateException when {@code v} is below the current version (naming both)
     */
    public synchronized void onVersionRecovered(int v) {
        requireNotBackwards(v, "onVersionRecovered");
        version = v;
        accepted = saturatedMultiply(v, consumerBatchSize);
    }

    /**
     * A coordinator takes over from one whose node was lost: sets the version and the counters its
     * durable ledger kept ({@code accepted}) and the tasks it found still open ({@code running}).
     * Only on a budget no task went through yet ({@code accepted} may have been set by {@link
     * #onVersionRecovered}; it is replaced).
     *
     * @throws IllegalStateException when this budget already ran tasks, or a value is negative
     */
    public synchronized void restore(int v, long acceptedSoFar, long runningNow) {
        if (enqueued != 0 || running != 0 || rejected != 0 || held != 0) {
            throw new IllegalStateException("staleness budget: restore on a budget in use (" + counters() + ")");
        }
        if (acceptedSoFar < 0 || runningNow < 0) {
            throw new IllegalStateException("staleness budget: restore with accepted=" + acceptedSoFar + ", running="
                    + runningNow + " (must be >= 0)");
        }
        requireNotBackwards(v, "restore");
        version = v;
        accepted = acceptedSoFar;
        running = runningNow;
    }

    private void requireNotBackwards(int v, String transition) {
        if (v < version) {
            throw new IllegalStateException("staleness budget: weight version must not go backwards on " + transition
                    + ": current version " + version + ", new version " + v);
        }
    }

    // ---- derived values ----

    /**
     * {@code min(C − running, (η + v + 1)·Bc − (accepted + running + held))}: how many more groups may
     * start now. Zero or negative means none; negative means over budget (e.g. right after a
     * version was set back by recovery while groups were running).
     */
    public synchronized long capacity() {
        long concurrency = maxConcurrentRollouts - running;
        long limit = saturatedMultiply(saturatedAdd(saturatedAdd(maxHeadOffpolicyness, version), 1), consumerBatchSize);
        long staleness = saturatedSubtract(limit, saturatedAdd(saturatedAdd(accepted, running), held));
        return Math.min(concurrency, staleness);
    }

    /** {@code capacity() > 0}. */
    public synchronized boolean canAdmit() {
        return capacity() > 0;
    }

    /** {@code (η + 1)·Bc}: the most tasks {@code prepare_batch} keeps waiting for admission (semantics §6.7). */
    public synchronized long pendingLimit() {
        return saturatedMultiply(saturatedAdd(maxHeadOffpolicyness, 1), consumerBatchSize);
    }

    public synchronized long enqueued() {
        return enqueued;
    }

    public synchronized long running() {
        return running;
    }

    public synchronized long accepted() {
        return accepted;
    }

    public synchronized long rejected() {
        return rejected;
    }

    /** Tasks whose outcome is held after a fail-over (see the class comment). */
    public synchronized long held() {
        return held;
    }

    public synchronized int version() {
        return version;
    }

    public int maxConcurrentRollouts() {
        return maxConcurrentRollouts;
    }

    public int consumerBatchSize() {
        return consumerBatchSize;
    }

    public long maxHeadOffpolicyness() {
        return maxHeadOffpolicyness;
    }

    /** All counters, the version, the configuration and the capacity, read atomically. */
    public synchronized Snapshot snapshot() {
        return new Snapshot(
                enqueued,
                running,
                accepted,
                rejected,
                version,
                maxConcurrentRollouts,
                consumerBatchSize,
                maxHeadOffpolicyness,
                capacity(),
                held);
    }

    private String counters() {
        return "enqueued=" + enqueued + ", running=" + running + ", accepted=" + accepted + ", rejected=" + rejected
                + ", held=" + held + ", version=" + version;
    }

    @Override
    public synchronized String toString() {
        return "StalenessBudget{" + snapshot().statusLine() + "}";
    }

    /**
     * The budget's state at one instant, for stats and the status line. Counters are in groups.
     *
     * @param capacity {@link StalenessBudget#capacity()} at that instant (may be negative)
     * @param held tasks whose outcome is held after a fail-over: out of {@code running}, still in
     *     the staleness bound
     */
    public record Snapshot(
            long enqueued,
            long running,
            long accepted,
            long rejected,
            int version,
            int maxConcurrentRollouts,
            int consumerBatchSize,
            long maxHeadOffpolicyness,
            long capacity,
            long held) {

        /** {@code "v=3 enqueued=2 running=4/8 accepted=12 rejected=1 capacity=4 (eta=2, bc=4)"}. */
        public String statusLine() {
            return "v=" + version + " enqueued=" + enqueued + " running=" + running + "/" + maxConcurrentRollouts
                    + " accepted=" + accepted + " rejected=" + rejected + (held > 0 ? " held=" + held : "")
                    + " capacity=" + capacity + " (eta=" + maxHeadOffpolicyness + ", bc=" + consumerBatchSize + ")";
        }
    }

    // ---- saturating long arithmetic: eval's η = 1e12 times a large Bc must not wrap ----

    private static long saturatedAdd(long a, long b) {
        long r = a + b;
        // Overflow iff both operands have the sign opposite to the result.
        if (((a ^ r) & (b ^ r)) < 0) {
            return a < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
        return r;
    }

    private static long saturatedSubtract(long a, long b) {
        long r = a - b;
        if (((a ^ b) & (a ^ r)) < 0) {
            return a < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
        return r;
    }

    private static long saturatedMultiply(long a, long b) {
        long hi = Math.multiplyHigh(a, b);
        long lo = a * b;
        if ((hi == 0 && lo >= 0) || (hi == -1 && lo < 0)) {
            return lo;
        }
        return (a < 0) == (b < 0) ? Long.MAX_VALUE : Long.MIN_VALUE;
    }
}
