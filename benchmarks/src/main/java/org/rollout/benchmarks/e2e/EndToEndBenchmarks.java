package org.rollout.benchmarks.e2e;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The end-to-end benchmarks of issue 7 and how to run them: {@code bin/rollout bench <name> [--flag
 * value …]} runs one and prints its {@link SummaryLine} on stdout (progress goes to the log stream);
 * {@code bench all} runs every one with its defaults, one line each. {@link #main} does the same
 * from {@code benchmarks.jar}'s class path.
 *
 * <pre>
 *   orchestration   actor pipeline vs plain loop, instant engine     (issue 7, end to end 1)
 *   async           max_head_offpolicyness 0 vs --eta, simulated fleet (2)
 *   interrupt       interrupt_mode resume vs discard, updates every K s (3)
 *   weights         pause → update → continue across 64 servers       (4)
 *   scaleout        1, 2, 3 node JVMs; batch hand-off vs raw loopback   (5)
 * </pre>
 *
 * <p>Exit status of {@link #run}: 0 when every benchmark ran (whether or not it met its target: the
 * line says {@code met=yes|no}), 1 when one failed, 2 for an unknown benchmark or a bad flag.
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
                new ScaleOutBenchmark());
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

    /**
     * Runs {@code args[0]} ({@code all} or a benchmark's name) with the flags that follow.
     *
     * @param out where summary lines go, one per benchmark
     * @param log where progress and errors go
     * @return the exit status (class comment)
     */
    public static int run(List<String> args, PrintStream out, PrintStream log) {
        if (args.isEmpty()) {
            log.println("bench: which benchmark? one of " + names() + ", or all");
            return 2;
        }
        String name = args.get(0);
        List<String> flagArgs = args.subList(1, args.size());
        List<EndToEndBenchmark> selected;
        if (name.equals("all")) {
            if (!flagArgs.isEmpty()) {
                log.println("bench all runs every benchmark with its defaults and takes no flags; run one benchmark "
                        + "to set flags");
                return 2;
            }
            selected = all();
        } else {
            Optional<EndToEndBenchmark> b = named(name);
            if (b.isEmpty()) {
                log.println("bench: unknown benchmark '" + name + "' (known: " + names() + ", or all)");
                return 2;
            }
            selected = List.of(b.get());
        }
        log.println("bench: " + machine());
        for (EndToEndBenchmark bench : selected) {
            Flags flags;
            try {
                flags = Flags.parse(bench.name(), bench.flags(), flagArgs);
            } catch (IllegalArgumentException e) {
                log.println(e.getMessage());
                return 2;
            }
            try {
                SummaryLine line = bench.run(flags, log);
                out.println(line);
                out.flush();
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
        return 0;
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
