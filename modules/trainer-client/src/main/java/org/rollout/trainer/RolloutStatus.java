package org.rollout.trainer;

import java.util.List;
import java.util.Map;

/**
 * A snapshot of a running engine, for trainers, status lines and tests.
 *
 * @param version the current weight version
 * @param running groups being generated (training)
 * @param accepted groups accepted since start (AReaL's counter: never decremented)
 * @param rejected groups rejected since start
 * @param capacity the staleness budget's admission capacity now (may be ≤ 0)
 * @param bufferedGroups accepted groups waiting to be batched
 * @param unacknowledgedBatches batches handed out and not yet acknowledged
 * @param evalRunning evaluation groups in flight
 * @param tokensGenerated generated tokens in accepted and rejected groups since start
 * @param rejectedByReason rejection counts by reason (e.g. {@code returned_none}, {@code stale})
 * @param lastStats the most recent per-version statistics, by scope then key (means)
 * @param heldOutcomes outcomes held after a fail-over: tasks a trainer may still acknowledge from a
 *     batch the lost collector handed out, waiting for that acknowledgement or {@code
 *     batch_ack_timeout} (neither running nor buffered; a drain waits for them too)
 * @param heldBatches the batches handed out and not yet acknowledged: their holders and when they
 *     go back (empty from an engine that does not say)
 */
public record RolloutStatus(
        int version,
        long running,
        long accepted,
        long rejected,
        long capacity,
        int bufferedGroups,
        int unacknowledgedBatches,
        long evalRunning,
        long tokensGenerated,
        Map<String, Long> rejectedByReason,
        Map<String, Map<String, Double>> lastStats,
        int heldOutcomes,
        List<HeldBatch> heldBatches) {
    public RolloutStatus {
        rejectedByReason = Map.copyOf(rejectedByReason);
        lastStats = Map.copyOf(lastStats);
        heldBatches = List.copyOf(heldBatches);
    }

    /** A status that does not say who holds the unacknowledged batches. */
    public RolloutStatus(
            int version,
            long running,
            long accepted,
            long rejected,
            long capacity,
            int bufferedGroups,
            int unacknowledgedBatches,
            long evalRunning,
            long tokensGenerated,
            Map<String, Long> rejectedByReason,
            Map<String, Map<String, Double>> lastStats,
            int heldOutcomes) {
        this(
                version,
                running,
                accepted,
                rejected,
                capacity,
                bufferedGroups,
                unacknowledgedBatches,
                evalRunning,
                tokensGenerated,
                rejectedByReason,
                lastStats,
                heldOutcomes,
                List.of());
    }

    /** A status with no held outcomes (an engine that never took over from a lost node). */
    public RolloutStatus(
            int version,
            long running,
            long accepted,
            long rejected,
            long capacity,
            int bufferedGroups,
            int unacknowledgedBatches,
            long evalRunning,
            long tokensGenerated,
            Map<String, Long> rejectedByReason,
            Map<String, Map<String, Double>> lastStats) {
        this(
                version,
                running,
                accepted,
                rejected,
                capacity,
                bufferedGroups,
                unacknowledgedBatches,
                evalRunning,
                tokensGenerated,
                rejectedByReason,
                lastStats,
                0);
    }
}
