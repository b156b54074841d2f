package org.rollout.benchmarks;

import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The per-call times of an {@code interleaved} benchmark method, summed over one iteration: the
 * operation measured ({@code subjectNanos}), what it is compared with ({@code baselineNanos}), and
 * the number of rounds. Each round runs both back to back, alternating which goes first, so both
 * see the same machine load and their ratio holds on a shared machine. JMH reports the fields as
 * secondary results; {@link BenchmarkMain} turns them into the ratio tables of RESULTS.md.
 */
@State(Scope.Thread)
@AuxCounters(AuxCounters.Type.EVENTS)
public class PairTimes {
    public long subjectNanos;
    public long baselineNanos;
    public long rounds;
    private boolean baselineFirst;

    @Setup(Level.Iteration)
    public void reset() {
        subjectNanos = 0;
        baselineNanos = 0;
        rounds = 0;
    }

    /** Whether this round runs the baseline first (alternates every round; not public: JMH would take it for a counter). */
    boolean baselineFirstThisRound() {
        baselineFirst = !baselineFirst;
        return baselineFirst;
    }
}
