package org.rollout.benchmarks;

import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
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
 * shared two-core machine, followed by a summary that JMH cannot print itself — the ratio of the
 * engine's generate to a raw HTTP call, per segment length.
 *
 * <pre>
 *   java -jar benchmarks/target/benchmarks.jar [JMH options] [benchmark regexp …]
 *   defaults, each overridden by the JMH option:  -f 1  -wi 3 -w 1s  -i 5 -r 1s,  regexp GenerateLoop
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
            org.openjdk.jmh.Main.main(args);
            return;
        }
        ChainedOptionsBuilder options = new OptionsBuilder().parent(cli);
        if (cli.getIncludes().isEmpty()) {
            options.include(GenerateLoopBenchmark.class.getSimpleName());
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
            System.err.println("the benchmark run failed: " + e.getMessage());
            System.exit(1);
            return;
        }
        if (results.isEmpty()) {
            System.err.println("no benchmark matched or none produced a result");
            System.exit(1);
            return;
        }
        System.out.println();
        System.out.println(generateLoopSummary(results).orElse("(no GenerateLoopBenchmark results to summarise)"));
    }

    /**
     * A Markdown table of the engine's generate against the raw POST per {@code tokens} value, with
     * the ratio and the overhead per segment; empty when the run had no pair of them.
     */
    static Optional<String> generateLoopSummary(Collection<RunResult> results) {
        String prefix = GenerateLoopBenchmark.class.getName() + ".";
        Map<Integer, Result<?>> engine = new TreeMap<>();
        Map<Integer, Result<?>> raw = new TreeMap<>();
        RunResult any = null;
        for (RunResult r : results) {
            String name = r.getParams().getBenchmark();
            if (!name.startsWith(prefix)) {
                continue;
            }
            String method = name.substring(prefix.length());
            Map<Integer, Result<?>> into =
                    method.equals("engineGenerate") ? engine : method.equals("rawPost") ? raw : null;
            if (into != null) {
                into.put(Integer.parseInt(r.getParams().getParam("tokens")), r.getPrimaryResult());
                any = r;
            }
        }
        List<String> rows = new ArrayList<>();
        for (Map.Entry<Integer, Result<?>> e : engine.entrySet()) {
            Result<?> rawResult = raw.get(e.getKey());
            if (rawResult == null) {
                continue;
            }
            Result<?> engineResult = e.getValue();
            rows.add(String.format(
                    Locale.ROOT,
                    "| %d | %.1f ± %.1f | %.1f ± %.1f | **%.3f** | %.1f |",
                    e.getKey(),
                    engineResult.getScore(),
                    engineResult.getScoreError(),
                    rawResult.getScore(),
                    rawResult.getScoreError(),
                    engineResult.getScore() / rawResult.getScore(),
                    engineResult.getScore() - rawResult.getScore()));
        }
        if (rows.isEmpty()) {
            return Optional.empty();
        }
        var p = any.getParams();
        String unit = engine.values().iterator().next().getScoreUnit();
        StringBuilder sb = new StringBuilder();
        sb.append("## Generate-loop overhead per segment (GenerateLoopBenchmark)\n\n");
        sb.append("| tokens per segment | engine generate (")
                .append(unit)
                .append(") | raw POST (")
                .append(unit)
                .append(") | ratio engine / raw | overhead per segment (")
                .append(unit.replace("/op", ""))
                .append(") |\n");
        sb.append("|---:|---:|---:|---:|---:|\n");
        rows.forEach(row -> sb.append(row).append('\n'));
        sb.append('\n');
        sb.append(String.format(
                Locale.ROOT,
                "Scores are JMH averages ± the 99.9%% confidence half-width. Settings: %d fork(s), %d warmup "
                        + "iteration(s) of %s, %d measurement iteration(s) of %s, 1 thread.%n",
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
}
