package org.rollout.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.rollout.benchmarks.e2e.EndToEndBenchmarks;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Unmatched;

/**
 * {@code rollout bench <name> [--flag value …]}: runs one end-to-end benchmark of the benchmarks
 * module ({@link EndToEndBenchmarks}) and prints its summary line on stdout, progress on stderr;
 * {@code rollout bench all} runs every one with its defaults. {@code --help} lists the benchmarks and
 * every flag with its default. Exit codes: 0 after a run (the line says whether the target was met),
 * 2 for an unknown benchmark or a bad flag, 1 when the run failed.
 *
 * <p>The JMH micro-benchmarks are not here: they run from {@code benchmarks/target/benchmarks.jar}
 * (benchmarks/README.md).
 */
@Command(
        name = "bench",
        description = "Run an end-to-end benchmark (orchestration, async, interrupt, weights, or all) and print "
                + "its summary line.")
final class BenchCommand implements Callable<Integer> {

    @Option(
            names = {"-h", "--help"},
            description = "List the benchmarks and their flags.")
    boolean help;

    @Parameters(
            index = "0",
            arity = "0..1",
            paramLabel = "name",
            description = "orchestration, async, interrupt, " + "weights or all")
    String name;

    /** The benchmark's own flags ({@code --servers 4 …}), passed through unparsed. */
    @Unmatched
    List<String> flags = new ArrayList<>();

    @Override
    public Integer call() {
        if (help || name == null) {
            System.out.print(EndToEndBenchmarks.usage());
            return name == null && !help ? 2 : 0;
        }
        return EndToEndBenchmarks.run(args(), System.out, System.err);
    }

    private List<String> args() {
        List<String> all = new ArrayList<>();
        all.add(name);
        all.addAll(flags);
        return all;
    }
}
