package org.rollout.benchmarks;

import java.io.IOException;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.openjdk.jmh.Main;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * The entry point of {@code benchmarks.jar}: JMH's command line, with short defaults that suit a
 * shared two-core machine, followed by summaries that JMH cannot print itself — the ratio of the
 * engine's generate to a raw HTTP call, per segment length, and the ratio of each {@code
 * interleaved} pair ({@link PairTimes}).
 *
 * <pre>
 *   java -jar benchmarks/target/benchmarks.jar [JMH options] [benchmark regexp …]
 *   defaults, each overridden by the JMH option:  -f 1  -wi 3 -w 1s  -i 5 -r 1s,  every benchmark of this module
 *   -h, -l, -lp, -lprof, -lrf: as JMH's own Main
 * </pre>
 *
 * <p>Exit status: 0 after a run, 1 when JMH failed or a benchmark produced no result, 2 for a bad
 * option (JMH's message is printed).
 */
public final class BenchmarkMain {
    static final int DEFAULT_FORKS = 1;
    static final int DEFAULT_WARMUP_ITERATIONS = 3;
    static final int DEFAULT_MEASUREMENT_ITERATIONS = 5;
    static final TimeValue DEFAULT_ITERATION_TIME = TimeValue.seconds(1);
    /** Every benchmark of this module. */
    static final String DEFAULT_INCLUDE = "org\\.rollout\\.benchmarks\\..*";

    private BenchmarkMain() {}

    public static void main(String[] args) throws Exception {
        CommandLineOptions cli;
        try {
            cli = new CommandLineOptions(args);
        } catch (CommandLineOptionException e) {
            System.err.println("bad benchmark option: " + e.getMessage());
            System.exit(2);
            return;
        }
        if (cli.shouldHelp()
                || cli.shouldList()
                || cli.shouldListWithParams()
                || cli.shouldListProfilers()
                || cli.shouldListResultFormats()) {
            Main.main(args);
            return;
        }
        ChainedOptionsBuilder options = new OptionsBuilder().parent(cli);
        if (cli.getIncludes().isEmpty()) {
            options.include(DEFAULT_INCLUDE);
        }
        if (!cli.getForkCount().hasValue()) {
            options.forks(DEFAULT_FORKS);
        }
        if (!cli.getWarmupIterations().hasValue()) {
            options.warmupIterations(DEFAULT_WARMUP_ITERATIONS);
        }
        if (!cli.getWarmupTime().hasValue()) {
            options.warmupTime(DEFAULT_ITERATION_TIME);
        }
        if (!cli.getMeasurementIterations().hasValue()) {
            options.measurementIterations(DEFAULT_MEASUREMENT_ITERATIONS);
        }
        if (!cli.getMeasurementTime().hasValue()) {
            options.measurementTime(DEFAULT_ITERATION_TIME);
        }
        Collection<RunResult> results;
        try {
            results = new Runner(options.build()).run();
        } catch (RunnerException e) {
            // JMH's exceptions often carry no message of their own ("no benchmarks matched" has none).
            System.err.println(
                    "the benchmark run failed: " + e + (e.getCause() == null ? "" : ", caused by " + e.getCause()));
            System.exit(1);
            return;
        }
        if (results.isEmpty()) {
            System.err.println("no benchmark matched or none produced a result");
            System.exit(1);
            return;
        }
        System.out.println();
        generateLoopSummary(results).ifPresent(System.out::println);
        pairSummary(results).ifPresent(System.out::println);
    }

    /** What each {@code interleaved} benchmark compares: its subject, its baseline. */
    private static final Map<String, String[]> PAIRS = Map.of(
            TensorDictsBenchmark.class.getSimpleName(),
            new String[] {"TensorDicts.concatPadded", "arraycopy floor"},
            GroupMergerBenchmark.class.getSimpleName(),
            new String[] {"GroupMerger.merge", "TensorDicts.concatPadded"},
            TrajectoryDumperBenchmark.class.getSimpleName(),
            new String[] {"TrajectoryDumper.dump (JSON + file)", "TrajectoryDumper.records"},
            VersionRleBenchmark.class.getSimpleName(),
            new String[] {"VersionRle.encode", "one-pass scan floor"},
            SerializationBenchmark.class.getSimpleName(),
            new String[] {"Jackson CBOR round trip", "Kryo round trip"},
            PayloadCodecBenchmark.class.getSimpleName(),
            new String[] {"cluster Kryo serializer round trip", "arraycopy floor (2 copies)"});

    /**
     * A Markdown table of every {@code interleaved} benchmark that reports {@link PairTimes}: time
     * per call of the subject and the baseline, their ratio over the whole run and its lowest and
     * highest value in one iteration; plus the encoded sizes when the serialization benchmark ran.
     */
    static Optional<String> pairSummary(Collection<RunResult> results) {
        StringBuilder rows = new StringBuilder();
        boolean serialization = false;
        for (RunResult r : results) {
            String name = r.getParams().getBenchmark();
            if (!name.endsWith(".interleaved")) {
                continue;
            }
            var secondary = r.getSecondaryResults();
            if (!secondary.containsKey("subjectNanos") || !secondary.containsKey("baselineNanos")) {
                continue;
            }
            double rounds = secondary.get("rounds").getScore();
            if (rounds <= 0) {
                continue;
            }
            String cls = name.substring(
                    name.lastIndexOf('.', name.length() - ".interleaved".length() - 1) + 1,
                    name.length() - ".interleaved".length());
            serialization |= cls.equals(SerializationBenchmark.class.getSimpleName());
            String[] pair = PAIRS.getOrDefault(cls, new String[] {"subject", "baseline"});
            double subject = secondary.get("subjectNanos").getScore() / rounds / 1000;
            double baseline = secondary.get("baselineNanos").getScore() / rounds / 1000;
            double min = Double.POSITIVE_INFINITY;
            double max = Double.NEGATIVE_INFINITY;
            for (BenchmarkResult fork : r.getBenchmarkResults()) {
                for (IterationResult iteration : fork.getIterationResults()) {
                    var sums = iteration.getSecondaryResults();
                    double ratio = sums.get("subjectNanos").getScore()
                            / sums.get("baselineNanos").getScore();
                    min = Math.min(min, ratio);
                    max = Math.max(max, ratio);
                }
            }
            rows.append(String.format(
                    Locale.ROOT,
                    "| %s | %s | %s | **%.2f** | %.2f – %.2f | %.1f | %.1f | %.0f |%n",
                    cls,
                    pair[0],
                    pair[1],
                    subject / baseline,
                    min,
                    max,
                    subject,
                    baseline,
                    rounds));
        }
        if (rows.isEmpty()) {
            return Optional.empty();
        }
        StringBuilder sb = new StringBuilder("## Micro-benchmarks, interleaved pairs (16 × 8k group)\n\n");
        sb.append("| benchmark | subject | baseline | **ratio subject / baseline** | lowest – highest iteration "
                + "| subject (µs/call) | baseline (µs/call) | rounds |\n");
        sb.append("|---|---|---|---:|---:|---:|---:|---:|\n");
        sb.append(rows);
        if (serialization) {
            try {
                SerializationBenchmark.Sizes sizes = SerializationBenchmark.sizes();
                sb.append(String.format(
                        Locale.ROOT,
                        "%nEncoded size of the group: Kryo %d bytes, CBOR %d bytes (CBOR / Kryo %.2f); raw arrays %d "
                                + "bytes.%n",
                        sizes.kryoBytes(),
                        sizes.cborBytes(),
                        sizes.cborBytes() / (double) sizes.kryoBytes(),
                        sizes.rawBytes()));
            } catch (IOException e) {
                sb.append("\n(could not compute the encoded sizes: ").append(e).append(")\n");
            }
        }
        return Optional.of(sb.toString());
    }

    /**
     * The secondary results of {@code interleaved}: summed call times, the number of rounds, and
     * the lowest and highest engine / raw ratio of a single measurement iteration.
     */
    private record InterleavedSums(
            double engineNanos,
            double rawNanos,
            double rawAsyncNanos,
            double rounds,
            double minRatio,
            double maxRatio) {
        static Optional<InterleavedSums> of(RunResult r) {
            var secondary = r.getSecondaryResults();
            for (String key : List.of("engineNanos", "rawNanos", "rawAsyncNanos", "rounds")) {
                if (!secondary.containsKey(key)) {
                    return Optional.empty();
                }
            }
            double rounds = secondary.get("rounds").getScore();
            if (rounds <= 0) {
                return Optional.empty();
            }
            double min = Double.POSITIVE_INFINITY;
            double max = Double.NEGATIVE_INFINITY;
            for (BenchmarkResult fork : r.getBenchmarkResults()) {
                for (IterationResult iteration : fork.getIterationResults()) {
                    var sums = iteration.getSecondaryResults();
                    double ratio = sums.get("engineNanos").getScore()
                            / sums.get("rawNanos").getScore();
                    min = Math.min(min, ratio);
                    max = Math.max(max, ratio);
                }
            }
            return Optional.of(new InterleavedSums(
                    secondary.get("engineNanos").getScore(),
                    secondary.get("rawNanos").getScore(),
                    secondary.get("rawAsyncNanos").getScore(),
                    rounds,
                    min,
                    max));
        }

        double micros(double nanos) {
            return nanos / rounds / 1000;
        }
    }

    /**
     * Markdown tables of the engine's generate against the raw calls per {@code tokens} value, with
     * the ratios and the overhead per segment; empty when the run had none of these benchmarks.
     */
    static Optional<String> generateLoopSummary(Collection<RunResult> results) {
        String prefix = GenerateLoopBenchmark.class.getName() + ".";
        Map<String, Map<Integer, Result<?>>> separate = new TreeMap<>();
        Map<Integer, InterleavedSums> interleaved = new TreeMap<>();
        RunResult any = null;
        for (RunResult r : results) {
            String name = r.getParams().getBenchmark();
            if (!name.startsWith(prefix)) {
                continue;
            }
            String method = name.substring(prefix.length());
            int tokens = Integer.parseInt(r.getParams().getParam("tokens"));
            if (method.equals("interleaved")) {
                InterleavedSums.of(r).ifPresent(sums -> interleaved.put(tokens, sums));
            } else {
                separate.computeIfAbsent(method, m -> new TreeMap<>()).put(tokens, r.getPrimaryResult());
            }
            any = r;
        }
        if (any == null) {
            return Optional.empty();
        }
        StringBuilder sb = new StringBuilder();
        sb.append("## Generate-loop overhead per segment (GenerateLoopBenchmark)\n\n");
        if (!interleaved.isEmpty()) {
            sb.append("Interleaved (`interleaved`: the three calls back to back in rotating order, so all see the "
                    + "same load); times per call:\n\n");
            sb.append("| tokens per segment | engine generate (us) | raw send (us) | raw sendAsync (us) "
                    + "| **ratio engine / raw send** | lowest – highest iteration | ratio engine / raw sendAsync "
                    + "| overhead per segment vs send (us) | rounds |\n");
            sb.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
            interleaved.forEach((tokens, s) -> sb.append(String.format(
                    Locale.ROOT,
                    "| %d | %.1f | %.1f | %.1f | **%.3f** | %.3f – %.3f | %.3f | %.1f | %.0f |%n",
                    tokens,
                    s.micros(s.engineNanos()),
                    s.micros(s.rawNanos()),
                    s.micros(s.rawAsyncNanos()),
                    s.engineNanos() / s.rawNanos(),
                    s.minRatio(),
                    s.maxRatio(),
                    s.engineNanos() / s.rawAsyncNanos(),
                    s.micros(s.engineNanos()) - s.micros(s.rawNanos()),
                    s.rounds())));
            sb.append('\n');
        }
        Map<Integer, Result<?>> engine = separate.getOrDefault("engineGenerate", Map.of());
        Map<Integer, Result<?>> raw = separate.getOrDefault("rawPost", Map.of());
        Map<Integer, Result<?>> rawAsync = separate.getOrDefault("rawPostAsync", Map.of());
        if (!engine.isEmpty() && !raw.isEmpty()) {
            sb.append("Separate (each benchmark its own JMH run; JMH average ± 99.9% confidence half-width):\n\n");
            sb.append("| tokens per segment | engine generate (us/op) | raw send (us/op) | raw sendAsync (us/op) "
                    + "| ratio engine / raw send |\n");
            sb.append("|---:|---:|---:|---:|---:|\n");
            for (Map.Entry<Integer, Result<?>> e : engine.entrySet()) {
                Result<?> r = raw.get(e.getKey());
                if (r == null) {
                    continue;
                }
                Result<?> a = rawAsync.get(e.getKey());
                sb.append(String.format(
                        Locale.ROOT,
                        "| %d | %s | %s | %s | %.3f |%n",
                        e.getKey(),
                        withError(e.getValue()),
                        withError(r),
                        a == null ? "–" : withError(a),
                        e.getValue().getScore() / r.getScore()));
            }
            sb.append('\n');
        }
        var p = any.getParams();
        sb.append(String.format(
                Locale.ROOT,
                "Settings: %d fork(s), %d warmup iteration(s) of %s, %d measurement iteration(s) of %s, 1 thread.%n",
                p.getForks(),
                p.getWarmup().getCount(),
                p.getWarmup().getTime(),
                p.getMeasurement().getCount(),
                p.getMeasurement().getTime()));
        sb.append(String.format(
                Locale.ROOT,
                "Run %s on %d processors, %s %s (%s), JDK %s (%s).%n",
                OffsetDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm 'UTC'")),
                Runtime.getRuntime().availableProcessors(),
                System.getProperty("os.name"),
                System.getProperty("os.version"),
                System.getProperty("os.arch"),
                p.getJdkVersion(),
                p.getVmName() + " " + p.getVmVersion()));
        return Optional.of(sb.toString());
    }

    private static String withError(Result<?> r) {
        return String.format(Locale.ROOT, "%.1f ± %.1f", r.getScore(), r.getScoreError());
    }
}
