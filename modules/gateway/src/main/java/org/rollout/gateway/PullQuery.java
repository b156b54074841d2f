package org.rollout.gateway;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.rollout.trainer.BatchLease;

/**
 * The query of {@code POST /v1/batches/next}: {@code wait=S} (seconds, capped at the gateway's
 * {@code max_poll_wait}), and optionally {@code lease=L&holder=H}: the batch is held for holder
 * {@code H} and goes back to the next pull when {@code H} does not renew its lease within {@code L}
 * seconds ({@link BatchLease}). Without a lease the batch's holder in the status is the puller's
 * address.
 *
 * @param maxWait how long the pull may wait for a batch
 * @param holder who holds the batch pulled, for the status and logs
 * @param lease the lease, or null
 */
record PullQuery(Duration maxWait, String holder, BatchLease lease, int rank) {

    PullQuery(Duration maxWait, String holder, BatchLease lease) {
        this(maxWait, holder, lease, 0);
    }

    /**
     * Reads {@code rawQuery}; {@code peer} names the puller when it gives no holder.
     *
     * @throws IllegalArgumentException naming the parameter at fault
     */
    static PullQuery parse(String rawQuery, Duration maxPollWait, String peer) {
        return parse(rawQuery, maxPollWait, peer, 1);
    }

    /**
     * As above, for an engine whose trainer pulls with {@code ranks} data-parallel ranks: {@code
     * rank=R} (0 when absent) names the rank whose batch is pulled, an integer in [0, ranks).
     */
    static PullQuery parse(String rawQuery, Duration maxPollWait, String peer, int ranks) {
        String wait = null;
        String rank = null;
        String lease = null;
        String holder = null;
        if (rawQuery != null && !rawQuery.isEmpty()) {
            for (String pair : rawQuery.split("&")) {
                int eq = pair.indexOf('=');
                String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
                String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
                switch (name) {
                    case "wait" -> wait = value;
                    case "lease" -> lease = value;
                    case "holder" -> holder = value;
                    case "rank" -> rank = value;
                    default -> {
                        // Other parameters are left alone, as before leases existed.
                    }
                }
            }
        }
        Duration w = wait == null ? Duration.ZERO : seconds("wait", wait, 0, Double.MAX_VALUE);
        if (w.compareTo(maxPollWait) > 0) {
            w = maxPollWait;
        }
        int r = rank(rank, ranks);
        if (lease == null) {
            return new PullQuery(w, holder == null || holder.isBlank() ? peer : holder, null, r);
        }
        if (holder == null || holder.isBlank()) {
            throw new IllegalArgumentException(
                    "query parameter 'lease' needs 'holder', the name the trainer renews its lease under");
        }
        Duration l = seconds("lease", lease, 1e-3, BatchLease.MAX.toSeconds());
        try {
            return new PullQuery(w, holder, new BatchLease(holder, l), r);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("query parameter 'holder': " + e.getMessage(), e);
        }
    }

    /**
     * The trainer rank {@code value} names: 0 when absent; otherwise an integer in [0, {@code
     * ranks}).
     *
     * @throws IllegalArgumentException naming {@code rank} and the run's ranks
     */
    static int rank(String value, int ranks) {
        if (value == null) {
            return 0;
        }
        try {
            int r = Integer.parseInt(value.strip());
            if (r >= 0 && r < ranks) {
                return r;
            }
        } catch (NumberFormatException e) {
            // Described below.
        }
        throw new IllegalArgumentException("query parameter 'rank' must be a trainer rank from 0 to " + (ranks - 1)
                + " (rollout.train_data_parallel_size = " + ranks + "), got '" + value + "'");
    }

    private static Duration seconds(String name, String value, double min, double max) {
        double s;
        try {
            s = Double.parseDouble(value);
        } catch (NumberFormatException e) {
            s = Double.NaN;
        }
        if (!(s >= min && s <= max) || Double.isInfinite(s)) {
            throw new IllegalArgumentException("query parameter '" + name + "' must be a number of seconds "
                    + (min == 0 ? ">= 0" : "above 0 and at most " + (long) max) + ", got '" + value + "'");
        }
        return Duration.ofNanos(Math.round(s * 1e9));
    }
}
