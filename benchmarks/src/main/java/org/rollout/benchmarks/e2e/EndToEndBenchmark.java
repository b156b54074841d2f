package org.rollout.benchmarks.e2e;

import java.io.PrintStream;
import java.util.List;

/**
 * One end-to-end benchmark, run by {@code bin/rollout bench <name> [--flag value …]}
 * ({@link EndToEndBenchmarks}). Every workload parameter is a {@link Flag} with a default small
 * enough for a shared two-core machine; {@link #run} prints progress to {@code log} and returns the
 * one {@link SummaryLine} that holds its figures, every flag's value and its target verdicts.
 *
 * <p>Implementations start everything they need on 127.0.0.1 and close it before returning, also on
 * failure. Timings are never asserted anywhere: the figures go to benchmarks/RESULTS.md.
 */
public interface EndToEndBenchmark {

    /** The name on the command line, e.g. {@code orchestration}. */
    String name();

    /** One sentence for {@code --help}. */
    String description();

    /** The workload flags, in the order they are printed. */
    List<Flag> flags();

    /**
     * Runs the benchmark once.
     *
     * @param flags the flags' values (validated by the getters, which name a bad flag)
     * @param log where progress lines go (stderr in the CLI)
     * @return the summary line
     */
    SummaryLine run(Flags flags, PrintStream log) throws Exception;
}
