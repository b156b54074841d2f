package org.rollout.benchmarks.e2e;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Model.UnmatchedArgsBinding;

/**
 * The end-to-end benchmarks and the {@code bench} command that runs them: {@code bin/rollout bench
 * <name> [--flag value …]} runs one and prints its {@link SummaryLine} on stdout (progress goes to
 * the log stream); {@code bench all} runs every one with its defaults, one line each. The command is
 * a picocli command with one subcommand per benchmark, whose options are the benchmark's {@link
 * Flag}s, so there is one argument parser: the CLI adds {@link #commandLine()} as its {@code bench}
 * subcommand (finding this class on its run-time class path), and {@link #main} runs the same
 * command from {@code benchmarks.jar}'s class path.
 *
 * <pre>
 *   orchestration   actor pipeline vs plain loop, instant engine
 *   async           max_head_offpolicyness 0 vs --eta, simulated fleet
 *   interrupt       interrupt_mode resume vs discard, updates every K s
 *   weights         pause → update → continue across 64 servers
 *   scaleout        1, 2, 3 node JVMs; batch hand-off vs raw loopback
 *   singletons      coordinator, collector, weight version saturation; simulated runners and servers
 *   handoff         trainer gateway → Java/Python client vs raw loopback, 10 MB – 1 GB
 *   launch          rollout.launch of N built-in servers to health and first generation vs N × java -version
 *   routing         engine placement strategies on a simulated GPU fleet with prefix caches
 * </pre>
 *
 * <p>Exit status: 0 when every benchmark ran (whether or not it met its target: the line says
 * {@code met=yes|no}), 1 when one failed, 2 for an unknown benchmark or a bad flag.
 */
public final class EndToEndBenchmarks {
    private EndToEndBenchmarks() {}

    /** Every benchmark, in the order {@code bench all} runs them. */
    public static List<EndToEndBenchmark> all() {
        return List.of(
                new OrchestrationBenchmark(),
                new AsyncVsSyncBenchmark(),
                new InterruptBenchmark(),
                new WeightUpdateBenchmark(),
                new ScaleOutBenchmark(),
                new SingletonsBenchmark(),
                new HandoffBenchmark(),
                new LaunchBenchmark(),
                new PythonWorkflowBenchmark(),
                new RoutingBenchmark());
    }

    /** The benchmark called {@code name}. */
    public static Optional<EndToEndBenchmark> named(String name) {
        return all().stream().filter(b -> b.name().equals(name)).findFirst();
    }

    /** What {@code bench --help} shows: every benchmark and its flags with their defaults. */
    public static String usage() {
        StringBuilder b = new StringBuilder();
        b.append("bench <name> [--flag value ...] | bench all\n");
        b.append("Runs one end-to-end benchmark and prints one line: RESULT bench=<name> key=value ...\n");
        for (EndToEndBenchmark bench : all()) {
            b.append('\n')
                    .append(bench.name())
                    .append(": ")
                    .append(bench.description())
                    .append('\n');
            for (Flag f : bench.flags()) {
                b.append(String.format(
                        Locale.ROOT, "  --%-22s %s (default %s)%n", f.name(), f.description(), f.defaultValue()));
            }
        }
        return b.toString();
    }

    /** The {@code bench} command, writing summary lines to {@code System.out} and progress to {@code System.err}. */
    public static CommandLine commandLine() {
        return commandLine(() -> System.out, () -> System.err);
    }

    /**
     * Runs {@code args[0]} ({@code all} or a benchmark's name) with the flags that follow.
     *
     * @param out where summary lines go, one per benchmark
     * @param log where progress and errors go
     * @return the exit status (class comment)
     */
    public static int run(List<String> args, PrintStream out, PrintStream log) {
        return commandLine(() -> out, () -> log).execute(args.toArray(String[]::new));
    }

    /** The command; the streams are read when it runs, so that a caller may redirect them first. */
    static CommandLine commandLine(Supplier<PrintStream> out, Supplier<PrintStream> log) {
        BenchAll parent = new BenchAll(out, log);
        CommandSpec spec = CommandSpec.wrapWithoutInspection(parent)
                .name("bench")
                .addOption(OptionSpec.builder("-h", "--help")
                        .description("List the benchmarks and their flags.")
                        .arity("0")
                        .type(boolean.class)
                        .setter(new CommandLine.Model.ISetter() {
                            @Override
                            public <T> T set(T value) {
                                parent.help = Boolean.TRUE.equals(value);
                                return null;
                            }
                        })
                        .build())
                .addUnmatchedArgsBinding(UnmatchedArgsBinding.forStringArrayConsumer(parent.unmatched()));
        spec.usageMessage()
                .description("Run an end-to-end benchmark (" + names() + ", or all) and print its summary line.");
        CommandLine cl = new CommandLine(spec);
        for (EndToEndBenchmark bench : all()) {
            cl.addSubcommand(bench.name(), benchmarkCommand(List.of(bench), out, log));
        }
        cl.addSubcommand("all", benchmarkCommand(all(), out, log));
        cl.setParameterExceptionHandler((e, args) -> {
            CommandLine where = e.getCommandLine();
            log.get()
                    .println((where.getParent() == null ? "bench" : "bench " + where.getCommandName()) + ": "
                            + e.getMessage());
            return 2;
        });
        cl.setExecutionExceptionHandler((e, where, parsed) -> {
            log.get().println("bench " + where.getCommandName() + " failed: " + e);
            e.printStackTrace(log.get());
            return 1;
        });
        return cl;
    }

    /** The subcommand that runs {@code benches}: one benchmark with its flags as options, or all with none. */
    private static CommandLine benchmarkCommand(
            List<EndToEndBenchmark> benches, Supplier<PrintStream> out, Supplier<PrintStream> log) {
        boolean one = benches.size() == 1;
        Run run = new Run(benches, out, log);
        CommandSpec spec = CommandSpec.wrapWithoutInspection(run)
                .name(one ? benches.get(0).name() : "all")
                .addOption(OptionSpec.builder("-h", "--help")
                        .usageHelp(true)
                        .description("Show this benchmark's flags.")
                        .build())
                .addUnmatchedArgsBinding(UnmatchedArgsBinding.forStringArrayConsumer(run.unmatched()));
        spec.usageMessage()
                .description(one ? benches.get(0).description() : "Every benchmark once, with its defaults.");
        if (one) {
            for (Flag f : benches.get(0).flags()) {
                spec.addOption(OptionSpec.builder("--" + f.name())
                        .type(String.class)
                        .paramLabel("<value>")
                        .defaultValue(f.defaultValue())
                        .description(f.description() + " (default ${DEFAULT-VALUE})")
                        .build());
            }
        }
        run.spec = spec;
        return new CommandLine(spec);
    }

    /** {@code bench} itself: help, or a name that is no benchmark. */
    private static final class BenchAll implements Callable<Integer> {
        private final Supplier<PrintStream> out;
        private final Supplier<PrintStream> log;
        private final List<String> unmatched = new ArrayList<>();
        boolean help;

        BenchAll(Supplier<PrintStream> out, Supplier<PrintStream> log) {
            this.out = out;
            this.log = log;
        }

        CommandLine.Model.ISetter unmatched() {
            return new CommandLine.Model.ISetter() {
                @Override
                public <T> T set(T value) {
                    unmatched.clear();
                    if (value != null) {
                        unmatched.addAll(List.of((String[]) value));
                    }
                    return null;
                }
            };
        }

        @Override
        public Integer call() {
            if (help) {
                out.get().print(usage());
                return 0;
            }
            if (unmatched.isEmpty()) {
                out.get().print(usage());
                log.get().println("bench: which benchmark? one of " + names() + ", or all");
                return 2;
            }
            log.get().println("bench: unknown benchmark '" + unmatched.get(0) + "' (known: " + names() + ", or all)");
            return 2;
        }
    }

    /** {@code bench <name>} or {@code bench all}: the parsed flags, then the runs. */
    private static final class Run implements Callable<Integer> {
        private final List<EndToEndBenchmark> benches;
        private final Supplier<PrintStream> out;
        private final Supplier<PrintStream> log;
        private final List<String> unmatched = new ArrayList<>();
        CommandSpec spec;

        Run(List<EndToEndBenchmark> benches, Supplier<PrintStream> out, Supplier<PrintStream> log) {
            this.benches = benches;
            this.out = out;
            this.log = log;
        }

        CommandLine.Model.ISetter unmatched() {
            return new CommandLine.Model.ISetter() {
                @Override
                public <T> T set(T value) {
                    unmatched.clear();
                    if (value != null) {
                        unmatched.addAll(List.of((String[]) value));
                    }
                    return null;
                }
            };
        }

        @Override
        public Integer call() {
            PrintStream log = this.log.get();
            if (benches.size() > 1 && !unmatched.isEmpty()) {
                log.println("bench all runs every benchmark with its defaults and takes no flags; run one benchmark "
                        + "to set flags");
                return 2;
            }
            if (!unmatched.isEmpty()) {
                String name = benches.get(0).name();
                String arg = unmatched.get(0);
                if (!arg.startsWith("--")) {
                    log.println("bench " + name + ": unexpected argument '" + arg + "' (flags are --name value)");
                } else {
                    String flag = arg.contains("=") ? arg.substring(0, arg.indexOf('=')) : arg;
                    log.println("bench " + name + ": unknown flag " + flag + " (known: --"
                            + String.join(
                                    ", --",
                                    benches.get(0).flags().stream()
                                            .map(Flag::name)
                                            .toList())
                            + ")");
                }
                return 2;
            }
            log.println("bench: " + machine());
            for (EndToEndBenchmark bench : benches) {
                Map<String, String> values = new LinkedHashMap<>();
                if (benches.size() == 1) {
                    for (Flag f : bench.flags()) {
                        values.put(f.name(), spec.findOption("--" + f.name()).getValue());
                    }
                }
                int status = runOne(bench, Flags.of(bench.name(), bench.flags(), values), out.get(), log);
                if (status != 0) {
                    return status;
                }
            }
            return 0;
        }
    }

    /** Runs {@code bench} once and prints its line; the exit status (class comment). */
    private static int runOne(EndToEndBenchmark bench, Flags flags, PrintStream out, PrintStream log) {
        try {
            SummaryLine line = bench.run(flags, log);
            out.println(line);
            out.flush();
            return 0;
        } catch (IllegalArgumentException e) {
            log.println(e.getMessage());
            return 2;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            log.println("bench " + bench.name() + ": interrupted");
            return 1;
        } catch (Exception e) {
            log.println("bench " + bench.name() + " failed: " + e);
            e.printStackTrace(log);
            return 1;
        }
    }

    /** The date, load average, processors and JVM, for the record. */
    static String machine() {
        double load = ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
        return String.format(
                Locale.ROOT,
                "%s, load average %.2f, %d processors, %s %s",
                OffsetDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ISO_OFFSET_DATE_TIME),
                load,
                Runtime.getRuntime().availableProcessors(),
                System.getProperty("java.vm.name"),
                System.getProperty("java.version"));
    }

    private static String names() {
        return String.join(", ", all().stream().map(EndToEndBenchmark::name).toList());
    }

    public static void main(String[] args) {
        System.exit(run(List.of(args), System.out, System.err));
    }
}
