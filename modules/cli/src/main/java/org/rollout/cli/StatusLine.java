package org.rollout.cli;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.rollout.cluster.RolloutCoordinator;
import org.rollout.trainer.HeldBatch;
import org.rollout.trainer.RolloutStatus;
import org.rollout.workflows.demo.StepReport;

/**
 * The one line {@code rollout local} keeps updating while it runs: step, weight version, mean
 * reward of the last step, throughput since start, what is in flight and for how long (a stuck
 * rollout must be visible), and staleness (docs/architecture.md says what it measures).
 *
 * <pre>
 * step  12/100 | v12 | reward 0.431 | 31.4 groups/s | 2.0k tok/s | in flight 52 (oldest 0.8 s) | staleness 0.48 | rejected 0
 * </pre>
 */
final class StatusLine {
    private final int steps;
    private final long startedNanos;

    StatusLine(int steps, long startedNanos) {
        this.steps = steps;
        this.startedNanos = startedNanos;
    }

    String render(StepReport last, RolloutStatus status, RolloutCoordinator.Status coordinator) {
        double seconds = Math.max(1e-3, (System.nanoTime() - startedNanos) / 1e9);
        int step = last == null ? 0 : last.version();
        String reward = last == null ? "  -  " : String.format(Locale.ROOT, "%.3f", last.meanReward());
        Map<String, Double> rollout = status.lastStats().getOrDefault("rollout", Map.of());
        double staleness = rollout.getOrDefault("staleness_mean", 0.0);
        return String.format(
                Locale.ROOT,
                "step %3d/%d | v%d | reward %s | %.1f groups/s | %s tok/s | in flight %d (oldest %.1f s) | staleness %.2f | rejected %d",
                step,
                steps,
                status.version(),
                reward,
                (status.accepted() + status.rejected()) / seconds,
                compact(status.tokensGenerated() / seconds),
                coordinator.inFlight(),
                coordinator.oldestInFlight().toMillis() / 1000.0,
                staleness,
                status.rejected());
    }

    /**
     * {@code rollout node}'s line: what it started itself, then the run as the coordinator sees it
     * (the reward is the mean of the current version's training groups).
     *
     * <pre>
     * node node-1: 120 groups started here | v12 | reward 0.431 | 31.4 groups/s | 2.0k tok/s | in flight 52 (oldest 0.8 s) | staleness 0.48 | rejected 0
     * </pre>
     */
    String renderNode(String name, long startedHere, RolloutStatus status, RolloutCoordinator.Status coordinator) {
        double seconds = Math.max(1e-3, (System.nanoTime() - startedNanos) / 1e9);
        Map<String, Double> rollout = status.lastStats().getOrDefault("rollout", Map.of());
        Double reward = rollout.get("reward");
        return String.format(
                        Locale.ROOT,
                        "node %s: %d groups started here | v%d | reward %s | %.1f groups/s | %s tok/s | in flight %d (oldest %.1f s) | staleness %.2f | rejected %d",
                        name,
                        startedHere,
                        status.version(),
                        reward == null ? "  -  " : String.format(Locale.ROOT, "%.3f", reward),
                        (status.accepted() + status.rejected()) / seconds,
                        compact(status.tokensGenerated() / seconds),
                        coordinator.inFlight(),
                        coordinator.oldestInFlight().toMillis() / 1000.0,
                        rollout.getOrDefault("staleness_mean", 0.0),
                        status.rejected())
                + held(status.heldBatches());
    }

    /**
     * The batches trainers hold, by holder, and the soonest each holder's come back: " | held:
     * host-a:12:ab 2 (back in 8 s), /10.0.0.5:51234 1 (back in 590 s)"; empty when none is held.
     */
    static String held(List<HeldBatch> held) {
        if (held.isEmpty()) {
            return "";
        }
        Map<String, long[]> byHolder = new LinkedHashMap<>();
        for (HeldBatch h : held) {
            long[] countAndSoonest = byHolder.computeIfAbsent(h.holder(), k -> new long[] {0, Long.MAX_VALUE});
            countAndSoonest[0]++;
            countAndSoonest[1] = Math.min(countAndSoonest[1], h.returnsInMillis());
        }
        StringBuilder b = new StringBuilder(" | held:");
        String sep = " ";
        for (Map.Entry<String, long[]> e : byHolder.entrySet()) {
            b.append(sep)
                    .append(e.getKey())
                    .append(' ')
                    .append(e.getValue()[0])
                    .append(" (back in ")
                    .append((e.getValue()[1] + 999) / 1000)
                    .append(" s)");
            sep = ", ";
        }
        return b.toString();
    }

    static String compact(double v) {
        if (v >= 1e6) {
            return String.format(Locale.ROOT, "%.1fM", v / 1e6);
        }
        if (v >= 1e3) {
            return String.format(Locale.ROOT, "%.1fk", v / 1e3);
        }
        return String.format(Locale.ROOT, "%.0f", v);
    }
}
