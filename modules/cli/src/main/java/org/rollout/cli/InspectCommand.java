package org.rollout.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import org.rollout.core.DumpFormatException;
import org.rollout.core.DumpRecord;
import org.rollout.core.TrajectoryDumpReader;
import org.rollout.core.VersionRle;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code rollout inspect RUN_DIR}: reads a run's trajectory dumps (docs/dumps.md) with the strict
 * reader and prints, per weight version and scope ({@code rollout}, {@code eval-rollout}), the
 * tasks and rows, the distributions of generated length and reward, the staleness of each row
 * (tail version minus head version of its generated tokens), the generated segments per row, and
 * the evaluation curve, with text charts; {@code --json} prints the same as one JSON object. A bad
 * line fails the command naming its file and line.
 */
@Command(
        name = "inspect",
        mixinStandardHelpOptions = true,
        description = "Summarise a run's trajectory dumps: per version counts, lengths, rewards, staleness, the eval"
                + " curve.")
final class InspectCommand implements Callable<Integer> {
    static final List<String> SCOPES = List.of("rollout", "eval-rollout");

    @Parameters(paramLabel = "RUN_DIR", description = "The run directory: {fileroot}/{experiment}/{trial}.")
    Path runDir;

    @Option(names = "--json", description = "Print one JSON object instead of text.")
    boolean json;

    /** The distribution of some values: count, mean, min, quartiles, max. */
    record Distribution(long count, double mean, double min, double p50, double p90, double max) {
        static Distribution of(double[] values) {
            if (values.length == 0) {
                return new Distribution(0, Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN);
            }
            double[] v = values.clone();
            Arrays.sort(v);
            return new Distribution(
                    v.length,
                    Arrays.stream(v).average().orElseThrow(),
                    v[0],
                    quantile(v, 0.5),
                    quantile(v, 0.9),
                    v[v.length - 1]);
        }

        private static double quantile(double[] sorted, double q) {
            return sorted[(int) Math.min(sorted.length - 1, Math.floor(q * (sorted.length - 1) + 0.5))];
        }
    }

    /** One version directory of one scope. */
    record VersionSummary(
            String scope,
            int version,
            long tasks,
            long rows,
            Distribution generatedLength,
            Distribution reward,
            Map<Integer, Long> staleness,
            Map<Integer, Long> segmentsPerRow,
            Double prefixCacheHitRate) {}

    /** Reads every dump under {@code runDir}, version directories in numeric order. */
    static List<VersionSummary> summarise(Path runDir) throws IOException {
        if (!Files.isDirectory(runDir)) {
            throw new IOException("no run directory " + runDir);
        }
        List<VersionSummary> out = new ArrayList<>();
        Map<String, Double> hitRates = prefixCacheHitRates(runDir);
        for (String scope : SCOPES) {
            Path scopeDir = runDir.resolve(scope);
            if (!Files.isDirectory(scopeDir)) {
                continue;
            }
            TreeMap<Integer, Path> versions = new TreeMap<>();
            try (Stream<Path> dirs = Files.list(scopeDir)) {
                for (Path d : dirs.toList()) {
                    String name = d.getFileName().toString();
                    if (Files.isDirectory(d) && name.matches("\\d{1,9}")) {
                        versions.put(Integer.parseInt(name), d);
                    }
                }
            }
            for (var e : versions.entrySet()) {
                out.add(summariseVersion(scope, e.getKey(), e.getValue(), hitRates.get(scope + "/" + e.getKey())));
            }
        }
        return out;
    }

    /**
     * The prefix cache's hit rate per {@code scope/version} from the run's statistics ({@code
     * stats.jsonl}, and {@code stats-<node>.jsonl} of {@code rollout node}): cached over prompt tokens
     * of the generations whose servers reported {@code cached_tokens}. Empty without such lines.
     */
    static Map<String, Double> prefixCacheHitRates(Path runDir) throws IOException {
        Map<String, double[]> sums = new TreeMap<>();
        List<Path> files;
        try (Stream<Path> s = Files.list(runDir)) {
            files = s.filter(p -> p.getFileName().toString().matches("stats(-.+)?\\.jsonl"))
                    .sorted()
                    .toList();
        }
        ObjectMapper mapper = new ObjectMapper();
        for (Path f : files) {
            int lineNo = 0;
            for (String line : Files.readAllLines(f)) {
                lineNo++;
                if (line.isBlank()) {
                    continue;
                }
                JsonNode n;
                try {
                    n = mapper.readTree(line);
                } catch (IOException e) {
                    throw new IOException(f + ":" + lineNo + ": not a JSON line: " + e.getMessage());
                }
                if (!n.path("prompt_tokens").isNumber()
                        || !n.path("cached_prompt_tokens").isNumber()) {
                    continue;
                }
                double count = n.path("prompt_tokens__count").asDouble(1);
                double[] sum = sums.computeIfAbsent(
                        n.path("scope").asText() + "/" + n.path("version").asInt(), k -> new double[2]);
                sum[0] += n.path("prompt_tokens").asDouble() * count;
                sum[1] += n.path("cached_prompt_tokens").asDouble() * count;
            }
        }
        Map<String, Double> rates = new TreeMap<>();
        sums.forEach((k, v) -> {
            if (v[0] > 0) {
                rates.put(k, v[1] / v[0]);
            }
        });
        return rates;
    }

    private static VersionSummary summariseVersion(String scope, int version, Path dir, Double prefixCacheHitRate)
            throws IOException {
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".jsonl"))
                    .sorted()
                    .toList();
        }
        List<Double> lengths = new ArrayList<>();
        List<Double> rewards = new ArrayList<>();
        Map<Integer, Long> staleness = new TreeMap<>();
        Map<Integer, Long> segments = new TreeMap<>();
        for (Path f : files) {
            for (DumpRecord r : TrajectoryDumpReader.read(f)) {
                long generated = 0;
                for (VersionRle.Run run : r.versionRle()) {
                    generated += run.count();
                }
                lengths.add((double) generated);
                rewards.add(r.reward());
                staleness.merge(r.tailVersion() - r.headVersion(), 1L, Long::sum);
                int gen = r.isMultiTurn()
                        ? (int) r.segments().stream()
                                .filter(sg -> sg.role() == DumpRecord.Role.GEN)
                                .count()
                        : 1;
                segments.merge(gen, 1L, Long::sum);
            }
        }
        return new VersionSummary(
                scope,
                version,
                files.size(),
                lengths.size(),
                Distribution.of(
                        lengths.stream().mapToDouble(Double::doubleValue).toArray()),
                Distribution.of(
                        rewards.stream().mapToDouble(Double::doubleValue).toArray()),
                staleness,
                segments,
                prefixCacheHitRate);
    }

    @Override
    public Integer call() throws Exception {
        PrintStream out = System.out;
        List<VersionSummary> summaries;
        try {
            summaries = summarise(runDir);
        } catch (DumpFormatException e) {
            System.err.println("bad dump line: " + e.getMessage());
            return 1;
        } catch (IOException e) {
            System.err.println("cannot read the dumps: " + e.getMessage());
            return 1;
        }
        if (json) {
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("run_dir", runDir.toString());
            body.put("versions", summaries);
            out.println(new ObjectMapper()
                    .enable(SerializationFeature.INDENT_OUTPUT)
                    .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
                    .writeValueAsString(body));
            return 0;
        }
        print(out, summaries);
        return 0;
    }

    static void print(PrintStream out, List<VersionSummary> summaries) {
        if (summaries.isEmpty()) {
            out.println("no dumps (rollout/<version>/*.jsonl, eval-rollout/<version>/*.jsonl)");
            return;
        }
        for (String scope : SCOPES) {
            List<VersionSummary> of =
                    summaries.stream().filter(s -> s.scope().equals(scope)).toList();
            if (of.isEmpty()) {
                continue;
            }
            out.println(scope + ":");
            out.println(String.format(
                    Locale.ROOT,
                    "  %7s %6s %6s   %-28s   %-28s  %s",
                    "version",
                    "tasks",
                    "rows",
                    "generated length mean [p50 p90 max]",
                    "reward mean [min max]",
                    "staleness of rows: count"));
            for (VersionSummary s : of) {
                Distribution l = s.generatedLength();
                Distribution r = s.reward();
                out.println(String.format(
                        Locale.ROOT,
                        "  %7d %6d %6d   %7.1f [%4.0f %4.0f %4.0f]          %7.3f [%6.3f %6.3f]        %s",
                        s.version(),
                        s.tasks(),
                        s.rows(),
                        l.mean(),
                        l.p50(),
                        l.p90(),
                        l.max(),
                        r.mean(),
                        r.min(),
                        r.max(),
                        counts(s.staleness())));
            }
            long multi = of.stream()
                    .flatMap(s -> s.segmentsPerRow().entrySet().stream())
                    .filter(e -> e.getKey() > 1)
                    .mapToLong(Map.Entry::getValue)
                    .sum();
            Map<Integer, Long> segs = new TreeMap<>();
            of.forEach(s -> s.segmentsPerRow().forEach((k, v) -> segs.merge(k, v, Long::sum)));
            out.println("  generated segments per row: " + counts(segs) + (multi == 0 ? " (single-turn)" : ""));
            List<String> hits = new ArrayList<>();
            for (VersionSummary s : of) {
                if (s.prefixCacheHitRate() != null) {
                    hits.add(s.version() + ": " + String.format(Locale.ROOT, "%.1f %%", 100 * s.prefixCacheHitRate()));
                }
            }
            if (!hits.isEmpty()) {
                out.println("  prefix cache hit rate (prompt tokens the servers had cached, stats.jsonl): "
                        + String.join(", ", hits));
            }
            double[] rewards = of.stream().mapToDouble(s -> s.reward().mean()).toArray();
            double min = Math.min(0, Arrays.stream(rewards).min().orElse(0));
            double max = Math.max(1, Arrays.stream(rewards).max().orElse(1));
            out.println("  mean reward per version" + (scope.equals("eval-rollout") ? " (the eval curve)" : "") + ":");
            for (String line : TextChart.columns(
                    rewards,
                    min,
                    max,
                    6,
                    60,
                    "version " + of.get(0).version() + ".."
                            + of.get(of.size() - 1).version())) {
                out.println("    " + line);
            }
        }
    }

    private static String counts(Map<Integer, Long> m) {
        List<String> parts = new ArrayList<>();
        m.forEach((k, v) -> parts.add(k + ": " + v));
        return String.join(", ", parts);
    }
}
