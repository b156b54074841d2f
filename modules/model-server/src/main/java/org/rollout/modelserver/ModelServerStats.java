package org.rollout.modelserver;

/**
 * A snapshot of a model server's counters, as served by {@code GET /get_server_info}. Counters
 * count since start; {@code busyFraction} is the share of wall time since start that the scheduler
 * spent in steps (computing and, with a latency model, waiting out the modelled step time).
 *
 * @param running sequences being decoded (including ones held by an in-place pause)
 * @param queued requests waiting for admission (including ones held while paused)
 * @param paused whether generation is paused
 * @param pauseMode {@code none}, {@code abort} or {@code in_place}
 * @param weightVersion the served weight version
 * @param requestsTotal generation requests accepted by the scheduler
 * @param requestsFinished generation requests answered with stop or length
 * @param requestsAborted generation requests finished with abort
 * @param tokensGenerated output tokens sampled
 * @param prefillTokens prompt tokens computed at prefill, and charged to the latency model: those not
 *     found in the prefix cache
 * @param hungRequests requests currently held by the hang fault
 * @param busyFraction scheduler busy time / wall time since start, in [0, 1]
 * @param uptimeSeconds seconds since start
 */
public record ModelServerStats(
        int running,
        int queued,
        boolean paused,
        String pauseMode,
        int weightVersion,
        long requestsTotal,
        long requestsFinished,
        long requestsAborted,
        long tokensGenerated,
        long prefillTokens,
        int hungRequests,
        double busyFraction,
        double uptimeSeconds) {}
