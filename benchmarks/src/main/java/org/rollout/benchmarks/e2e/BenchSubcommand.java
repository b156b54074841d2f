package org.rollout.benchmarks.e2e;

import org.rollout.cli.CliSubcommand;
import picocli.CommandLine;

/**
 * {@code rollout bench}: the CLI finds this through its {@link CliSubcommand} service when the
 * benchmarks' jars are on its class path ({@code bin/rollout bench} of a source checkout puts them
 * there); the release tarball holds none of them, so its {@code rollout} has no {@code bench}.
 */
public final class BenchSubcommand implements CliSubcommand {
    @Override
    public String name() {
        return "bench";
    }

    @Override
    public CommandLine commandLine() {
        return EndToEndBenchmarks.commandLine();
    }
}
