package org.rollout.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.rollout.cluster.StatsBook;
import org.rollout.examples.demo.StepReport;
import org.rollout.trainer.RolloutStatus;

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
            String dumpFailures) {}

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
        lines.add(String.format(
                Locale.ROOT,
                "  groups: %d accepted, %d rejected%s; tokens generated: %,d (%s/s)",
                s.accepted(),
                s.rejected(),
                s.rejectedByReason().isEmpty() ? "" : " " + s.rejectedByReason(),
                s.tokensGenerated(),
                StatusLine.compact(s.tokensGenerated() / seconds)));
        double[] rewards = reports.stream().mapToDouble(StepReport::meanReward).toArray();
        if (rewards.length > 0) {
            int k = Math.min(5, rewards.length);
            double first = mean(rewards, 0, k);
            double last = mean(rewards, rewards.length - k, rewards.length);
            lines.add(String.format(
                    Locale.ROOT,
                    "  mean reward: first %d steps %.3f, last %d steps %.3f (%s)",
                    k,
                    first,
                    k,
                    last,
                    first > 0 ? String.format(Locale.ROOT, "%.1f×", last / first) : "from 0"));
            lines.add("  reward per step (mean over the batch)");
            for (String l : TextChart.columns(rewards, 0, 1, 8, 60, "step 1.." + rewards.length)) {
                lines.add("    " + l);
            }
        }
        String eval = run.history().stream()
                .filter(l -> l.scope().equals("eval-rollout"))
                .map(l -> String.format(
                        Locale.ROOT, "v%d %.3f", l.version(), number(l.values().get("reward"))))
                .collect(Collectors.joining(", "));
        if (!eval.isEmpty()) {
            lines.add("  evaluation (mean reward, eval-rollout scope): " + eval);
        }
        lines.add("  files under " + run.runDir() + ":");
        if (run.dumped()) {
            lines.add("    rollout/{version}/{task_id}.jsonl   trajectory dumps ("
                    + countJsonl(run.runDir().resolve("rollout")) + " files); eval-rollout/ for evaluation");
            if (run.dumpFailures() != null) {
                lines.add("    DUMPS FAILED: " + run.dumpFailures());
            }
        }
        lines.add("    stats.jsonl                        statistics per version and scope");
        lines.add("    weights/v{n}.rlm                   the trained weights of every version");
        return lines;
    }

    private static double mean(double[] v, int from, int to) {
        double s = 0;
        for (int i = from; i < to; i++) {
            s += v[i];
        }
        return s / Math.max(1, to - from);
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
