package org.rollout.cli;

import java.util.ArrayDeque;
import java.util.List;
import java.util.Objects;

/**
 * The recent past the dashboard draws on open, so a page opened in the middle of a run starts with
 * its charts filled instead of waiting for its own polls:
 *
 * <pre>
 *   sampler (one tick a second) ──add──▶ [ oldest … newest ] ──samples()──▶ /v1/dashboard/history.json
 *                                         at most capacity;
 *                                         a full ring drops its oldest
 * </pre>
 *
 * <p>A sample holds the counters the page turns into its charts and rates (weight version, groups
 * accepted and rejected, tokens generated), not the rates themselves: the page computes groups/s and
 * tokens/s between any two samples, its own polls included.
 *
 * <p><b>Threading.</b> Safe to use from any thread: one sampler adds while HTTP exchanges read.
 * {@link #samples()} returns a copy.
 */
final class DashboardHistory {
    /** Twelve minutes at one sample a second. */
    static final int CAPACITY = 720;

    /**
     * The engine's counters at one moment.
     *
     * @param time seconds since the epoch, as {@code time} in {@code /v1/dashboard.json}
     * @param version the weight version
     * @param accepted training groups accepted so far
     * @param rejected training groups rejected so far
     * @param tokensGenerated tokens generated so far
     */
    record Sample(double time, int version, long accepted, long rejected, long tokensGenerated) {}

    private final int capacity;
    private final ArrayDeque<Sample> samples;

    /** An empty history that keeps the newest {@code capacity} samples. */
    DashboardHistory(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("a dashboard history holds at least one sample, not " + capacity);
        }
        this.capacity = capacity;
        this.samples = new ArrayDeque<>(capacity);
    }

    int capacity() {
        return capacity;
    }

    /** Appends {@code sample} as the newest, dropping the oldest when full. */
    synchronized void add(Sample sample) {
        Objects.requireNonNull(sample, "sample");
        if (samples.size() == capacity) {
            samples.removeFirst();
        }
        samples.addLast(sample);
    }

    /** The samples held, oldest first. */
    synchronized List<Sample> samples() {
        return List.copyOf(samples);
    }
}
