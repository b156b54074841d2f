package org.rollout.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.rollout.cluster.StatsBook;
import org.rollout.trainer.RolloutStatus;
import org.rollout.workflows.demo.StepReport;

/**
 * What {@code rollout local} prints at the end: totals, the reward per step as a small chart, the
 * evaluation passes, and where the dumps, statistics and weights are.
 */
final class Summary {
    private Summary() {}

    record Run(
            Duration elapsed,
            List<StepReport> reports,
            RolloutStatus status,
            List<StatsBook.Line> history,
            Path runDir,
            boolean dumped,
            String workflow,
            String dumpFailures,
            String finalEvaluation,
            String weights) {}

    static void print(PrintStream out, Run run) {
        for (String line : lines(run)) {
            out.println(line);
        }
    }

    static List<String> lines(Run run) {
        List<String> lines = new ArrayList<>();
        List<StepReport> reports = run.reports();
        RolloutStatus s = run.status();
        double seconds = Math.max(1e-3, run.elapsed().toNanos() / 1e9);
        lines.add(String.format(
                Locale.ROOT, "Done in %.1f s: %d steps, weight version %d.", seconds, reports.size(), s.version()));
        long trained = reports.stream().mapToLong(StepReport::groups).sum();
        Counts training = Counts.of(run.history(), "rollout");
        lines.add(String.format(
                Locale.ROOT,
                "  training groups (stats.jsonl, rollout lines): %d accepted, of which %d trained in %d steps and"
                        + " the rest still buffered at the end; %d rejected%s",
                training.accepted(),
                trained,
                reports.size(),
                training.rejected(),
                training.reasons().isEmpty() ? "" : " " + training.reasons()));
        Counts evaluation = Counts.of(run.history(), "eval-rollout");
        if (evaluation.groups() > 0) {
            lines.add(String.format(
                    Locale.ROOT,
                    "  evaluation groups (stats.jsonl, eval-rollout lines): %d, in %d pass(es)",
                    evaluation.groups(),
                    evaluation.lines()));
        }
        lines.add(String.format(
                Locale.ROOT,
                "  tokens generated: %,d (%s/s)",
                s.tokensGenerated(),
                StatusLine.compact(s.tokensGenerated() / seconds)));
        double[] rewards = reports.stream().mapToDouble(StepReport::meanReward).toArray();
        if (rewards.length > 0) {
            lines.add(rewardTrend(rewards));
            lines.add("  reward per step (mean over the batch)");
            for (String l : TextChart.columns(rewards, 0, 1, 8, 60, "step 1.." + rewards.length)) {
                lines.add("    " + l);
            }
        }
        List<StatsBook.Line> evalLines = run.history().stream()
                .filter(l -> l.scope().equals("eval-rollout"))
                .toList();
        String eval = evalLines.stream()
                .map(l -> {
                    double reward = number(l.values().get("reward"));
                    return Double.isNaN(reward)
                            ? String.format(Locale.ROOT, "v%d –", l.version())
                            : String.format(Locale.ROOT, "v%d %.3f", l.version(), reward);
                })
                .collect(Collectors.joining(", "));
        if (!eval.isEmpty()) {
            lines.add("  evaluation (mean reward, eval-rollout scope): " + eval);
            if (evalLines.stream().anyMatch(l -> Double.isNaN(number(l.values().get("reward"))))) {
                lines.add("    (–: no evaluation group of that version was accepted, so it has no mean reward)");
            }
        }
        if (run.finalEvaluation() != null) {
            lines.add("  note: " + run.finalEvaluation());
        }
        lines.add("  files under " + run.runDir() + ":");
        if (run.dumped()) {
            lines.add("    rollout/{version}/{task_id}.jsonl   "
                    + countJsonl(run.runDir().resolve("rollout"))
                    + " trajectory dumps: one per training group with trajectories, accepted or rejected by"
                    + " rollout.accept, also those finished as the engine stopped (not counted above)");
            lines.add("    eval-rollout/{version}/{task_id}.jsonl "
                    + countJsonl(run.runDir().resolve("eval-rollout")) + " evaluation dumps: one per evaluation group");
            if (run.dumpFailures() != null) {
                lines.add("    DUMPS FAILED: " + run.dumpFailures());
            }
        }
        lines.add("    stats.jsonl                        statistics per version and scope");
        lines.add("    " + run.weights());
        return lines;
    }

    /**
     * The mean reward's trend: the first and last 5 steps and their ratio from 10 steps on; the first
     * and the last half below that, without a ratio (a few noisy steps make a misleading one); the
     * one step's mean alone.
     */
    static String rewardTrend(double[] rewards) {
        int n = rewards.length;
        if (n == 1) {
            return String.format(Locale.ROOT, "  mean reward: %.3f (1 step)", rewards[0]);
        }
        if (n < 10) {
            int firstHalf = n / 2;
            int lastHalf = n - firstHalf;
            return String.format(
                    Locale.ROOT,
                    "  mean reward: first %s %.3f, last %s %.3f",
                    steps(firstHalf),
                    mean(rewards, 0, firstHalf),
                    steps(lastHalf),
                    mean(rewards, firstHalf, n));
        }
        double first = mean(rewards, 0, 5);
        double last = mean(rewards, n - 5, n);
        return String.format(
                Locale.ROOT,
                "  mean reward: first 5 steps %.3f, last 5 steps %.3f (%s)",
                first,
                last,
                first > 0 ? String.format(Locale.ROOT, "%.1f×", last / first) : "from 0");
    }

    private static String steps(int n) {
        return n == 1 ? "step" : n + " steps";
    }

    private static double mean(double[] v, int from, int to) {
        double s = 0;
        for (int i = from; i < to; i++) {
            s += v[i];
        }
        return s / Math.max(1, to - from);
    }

    /** What the stats lines of one scope count, summed over versions. */
    record Counts(long lines, long groups, long accepted, long rejected, Map<String, Long> reasons) {
        static Counts of(List<StatsBook.Line> history, String scope) {
            long lines = 0;
            long groups = 0;
            long accepted = 0;
            long rejected = 0;
            Map<String, Long> reasons = new TreeMap<>();
            for (StatsBook.Line l : history) {
                if (!l.scope().equals(scope)) {
                    continue;
                }
                lines++;
                groups += (long) number(l.values().get("groups"));
                accepted += (long) number(l.values().get("accepted"));
                rejected += (long) number(l.values().get("rejected"));
                if (l.values().get("rejected_reasons") instanceof Map<?, ?> m) {
                    m.forEach((k, v) -> reasons.merge(String.valueOf(k), (long) number(v), Long::sum));
                }
            }
            return new Counts(lines, groups, accepted, rejected, reasons);
        }
    }

    private static double number(Object o) {
        return o instanceof Number n ? n.doubleValue() : Double.NaN;
    }

    private static long countJsonl(Path dir) {
        if (!Files.isDirectory(dir)) {
            return 0;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(p -> p.toString().endsWith(".jsonl")).count();
        } catch (IOException e) {
            return 0;
        }
    }

    /** For tests: the summary's lines joined. */
    static String text(Run run) {
        return String.join("\n", lines(run));
    }
}
