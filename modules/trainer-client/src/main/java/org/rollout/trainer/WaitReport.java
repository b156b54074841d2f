package org.rollout.trainer;

import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * What a trainer that has had no batch for a while is told in its log: which batches other trainers
 * hold, who holds them and when they come back. A pull loop reports after {@link #FIRST} without a
 * batch, then every {@link #EVERY}.
 */
final class WaitReport {
    static final Duration FIRST = Duration.ofSeconds(30);
    static final Duration EVERY = Duration.ofSeconds(60);

    private WaitReport() {}

    /** One line: {@code waitedSeconds} without a batch, what {@code status} says of the held batches. */
    static String line(double waitedSeconds, RolloutStatus status, String ownHolder) {
        List<HeldBatch> others = status.heldBatches().stream()
                .filter(h -> !h.holder().equals(ownHolder))
                .toList();
        StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "no batch for %.0f s; ", waitedSeconds));
        if (others.isEmpty()) {
            b.append("no batch is held by another trainer (the engine is still producing)");
        } else {
            b.append(others.size()).append(" batch(es) held by other trainers: ");
            String sep = "";
            for (HeldBatch h : others.subList(0, Math.min(5, others.size()))) {
                b.append(sep)
                        .append(String.format(
                                Locale.ROOT,
                                "batch %d (%d groups) held by %s, %sback in %d s",
                                h.batchId(),
                                h.groups(),
                                h.holder(),
                                h.leased() ? "leased, " : "",
                                (h.returnsInMillis() + 999) / 1000));
                sep = "; ";
            }
            if (others.size() > 5) {
                b.append(" and ").append(others.size() - 5).append(" more");
            }
        }
        return b.append(String.format(
                        Locale.ROOT, "; %d group(s) buffered, capacity %d", status.bufferedGroups(), status.capacity()))
                .toString();
    }
}
