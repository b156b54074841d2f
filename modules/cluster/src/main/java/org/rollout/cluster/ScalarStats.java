package org.rollout.cluster;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.rollout.api.StatsRecorder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sums and counts of scalar statistics (AReaL's stats_tracker scalars): what a workflow records
 * through {@link org.rollout.api.WorkflowContext#stats()} during one group, and what the
 * {@link Collector} aggregates per version and scope. Reported as a mean plus a
 * {@code <key>__count}.
 *
 * <p>Recording is thread-safe (the slots of a group record concurrently); non-finite values are
 * dropped with a warning so that one NaN cannot poison a mean.
 */
public final class ScalarStats implements StatsRecorder {
    private static final Logger log = LoggerFactory.getLogger(ScalarStats.class);

    private final LinkedHashMap<String, double[]> sums = new LinkedHashMap<>();

    @Override
    public synchronized void scalar(String key, double value) {
        if (!Double.isFinite(value)) {
            log.warn("dropping non-finite statistic {}={}", key, value);
            return;
        }
        double[] s = sums.computeIfAbsent(key, k -> new double[2]);
        s[0] += value;
        s[1] += 1;
    }

    /** Adds every sum and count of {@code totals}. */
    public synchronized void add(Totals totals) {
        totals.sums().forEach((k, v) -> {
            double[] s = sums.computeIfAbsent(k, x -> new double[2]);
            s[0] += v;
            s[1] += totals.counts().getOrDefault(k, 0L);
        });
    }

    /** An immutable copy of the sums and counts. */
    public synchronized Totals totals() {
        Map<String, Double> s = new LinkedHashMap<>();
        Map<String, Long> c = new LinkedHashMap<>();
        sums.forEach((k, v) -> {
            s.put(k, v[0]);
            c.put(k, (long) v[1]);
        });
        return new Totals(s, c);
    }

    /** Sums and counts by key, in recording order; immutable. */
    public record Totals(Map<String, Double> sums, Map<String, Long> counts) {
        public static final Totals EMPTY = new Totals(Map.of(), Map.of());

        public Totals {
            sums = Collections.unmodifiableMap(new LinkedHashMap<>(sums));
            counts = Collections.unmodifiableMap(new LinkedHashMap<>(counts));
        }

        /** Means by key, then {@code <key>__count}, in recording order. */
        public Map<String, Double> means() {
            Map<String, Double> m = new LinkedHashMap<>();
            sums.forEach((k, v) -> {
                long n = counts.getOrDefault(k, 0L);
                m.put(k, n == 0 ? 0.0 : v / n);
                m.put(k + "__count", (double) n);
            });
            return m;
        }
    }
}
