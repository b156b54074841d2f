package org.rollout.cli;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.rollout.cluster.LocalRolloutClient;
import org.rollout.config.RolloutSettings;
import org.rollout.core.FailureBreaker;
import org.rollout.trainer.RolloutStatus;

/**
 * Watches a run for the failure breaker ({@link FailureBreaker}): reads the engine's status every
 * {@link #POLL} and, when the failed share of the last groups says the run cannot make progress,
 * builds one message naming the commonest reason, an example task with its error and the key to
 * change, stops admission (a pause that only a new run lifts, sent again at every poll so that a
 * coordinator that took over pauses too) and calls {@code onTrip} once.
 *
 * <p>With several trainer ranks ({@code rollout.train_data_parallel_size}), each rank's coordinator
 * and collector count their own groups: the watch judges the run's groups, the ranks' counts summed,
 * and stops and resumes every rank's admission, so that a workflow failing on every task does not
 * leave the other ranks admitting and rejecting while one is paused.
 *
 * <p>{@code rollout local} ends the run with exit 3 on it. A {@code rollout node} keeps running,
 * reporting the trip on {@code /health} and {@code /metrics} ({@link NodeObservability}), and
 * after {@link #NODE_PAUSE} resumes admission and judges a fresh window: a cluster cannot tell a
 * broken workflow from model servers that fail for a while (every group fails either way), and a
 * long-running node must not stay stopped after its servers came back.
 *
 * <p><b>Threading.</b> Polls on a daemon thread of its own; {@link #message()} may be read from
 * any thread.
 */
final class FailureWatch implements AutoCloseable {
    static final Duration POLL = Duration.ofSeconds(1);

    /** The admission pause the breaker holds: no weight update uses a negative id. */
    static final long PAUSE_ID = -3L;

    /** How long a node keeps admission stopped after a trip before it tries again. */
    static final Duration NODE_PAUSE = Duration.ofMinutes(5);

    private final List<Rank> ranks;
    private final RolloutSettings.FailureBreaker settings;
    private final Duration pauseFor;
    private final Consumer<String> onTrip;
    private final ScheduledExecutorService poller;
    private FailureBreaker breaker;
    private volatile String message;
    private long trippedNanos;
    private int lastVersion;

    /** What the watch reads and stops: one trainer rank's coordinator and collector. */
    interface Rank {
        RolloutStatus status(Duration timeout) throws InterruptedException;

        Map<String, String> lastRejections() throws InterruptedException;

        void pauseAdmission(long id);

        void resumeAdmission(long id, int version);

        static Rank of(LocalRolloutClient c) {
            return new Rank() {
                @Override
                public RolloutStatus status(Duration timeout) throws InterruptedException {
                    return c.status(timeout);
                }

                @Override
                public Map<String, String> lastRejections() throws InterruptedException {
                    return c.lastRejections();
                }

                @Override
                public void pauseAdmission(long id) {
                    c.pauseAdmission(id);
                }

                @Override
                public void resumeAdmission(long id, int version) {
                    c.resumeAdmission(id, version);
                }
            };
        }
    }

    private FailureWatch(
            List<Rank> ranks, RolloutSettings.FailureBreaker settings, Duration pauseFor, Consumer<String> onTrip) {
        if (ranks.isEmpty()) {
            throw new IllegalArgumentException("the failure breaker needs at least one trainer rank to watch");
        }
        this.ranks = List.copyOf(ranks);
        this.settings = settings;
        this.breaker = new FailureBreaker(settings.window(), settings.threshold());
        this.pauseFor = pauseFor;
        this.onTrip = onTrip;
        this.poller = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "failure-breaker");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Starts watching, or returns empty when {@code rollout.failure_breaker.window} is 0.
     *
     * @param pauseFor how long admission stays stopped after a trip before the watch resumes it
     *     and judges a fresh window; null: stopped for good (a local run, which ends)
     */
    static Optional<FailureWatch> start(
            LocalRolloutClient client,
            RolloutSettings.FailureBreaker settings,
            Duration pauseFor,
            Consumer<String> onTrip) {
        return start(List.of(client), settings, pauseFor, onTrip);
    }

    /** As above, over every trainer rank's coordinator and collector (one client a rank). */
    static Optional<FailureWatch> start(
            List<LocalRolloutClient> rankClients,
            RolloutSettings.FailureBreaker settings,
            Duration pauseFor,
            Consumer<String> onTrip) {
        if (!settings.enabled()) {
            return Optional.empty();
        }
        FailureWatch w = new FailureWatch(rankClients.stream().map(Rank::of).toList(), settings, pauseFor, onTrip);
        w.poller.scheduleWithFixedDelay(w::poll, POLL.toMillis(), POLL.toMillis(), TimeUnit.MILLISECONDS);
        return Optional.of(w);
    }

    /** A watch polled by the caller ({@link #poll}), for tests. */
    static FailureWatch unscheduled(
            List<Rank> ranks, RolloutSettings.FailureBreaker settings, Duration pauseFor, Consumer<String> onTrip) {
        return new FailureWatch(ranks, settings, pauseFor, onTrip);
    }

    /** The message once the breaker tripped, else null. */
    String message() {
        return message;
    }

    void poll() {
        try {
            if (message != null) {
                if (pauseFor != null && System.nanoTime() - trippedNanos >= pauseFor.toNanos()) {
                    breaker = new FailureBreaker(settings.window(), settings.threshold());
                    message = null;
                    ranks.forEach(r -> r.resumeAdmission(PAUSE_ID, lastVersion));
                    System.err.println("failure breaker: admission resumed after " + pauseFor.toSeconds()
                            + " s; the next " + settings.window() + " groups are judged again");
                } else {
                    ranks.forEach(r -> r.pauseAdmission(PAUSE_ID));
                }
                return;
            }
            // The run's groups: every rank's counts summed (each rank's are cumulative, as one's are).
            long accepted = 0;
            Map<String, Long> rejected = new HashMap<>();
            int version = 0;
            for (Rank r : ranks) {
                RolloutStatus s = r.status(Duration.ofSeconds(5));
                accepted += s.accepted();
                s.rejectedByReason().forEach((reason, n) -> rejected.merge(reason, n, Long::sum));
                version = Math.max(version, s.version());
            }
            lastVersion = version;
            Optional<FailureBreaker.Trip> trip = breaker.observe(accepted, rejected);
            if (trip.isEmpty()) {
                return;
            }
            ranks.forEach(r -> r.pauseAdmission(PAUSE_ID));
            trippedNanos = System.nanoTime();
            String example = null;
            for (Rank r : ranks) {
                example = r.lastRejections().get(trip.get().commonestReason());
                if (example != null) {
                    break;
                }
            }
            message = describe(trip.get(), example)
                    + (pauseFor == null ? "" : "\n  admission resumes in " + pauseFor.toSeconds() + " s");
            onTrip.accept(message);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            // The engine is starting, moving its singletons or shutting down: the next poll reads again.
        }
    }

    /**
     * One message: what tripped, an example, and the key to change.
     *
     * @param example "task N attempt A: detail" of the latest rejection with the commonest reason, or null
     */
    static String describe(FailureBreaker.Trip trip, String example) {
        StringBuilder m = new StringBuilder("the run cannot make progress: ").append(trip.describe());
        if (example != null && !example.isBlank()) {
            m.append("\n  example: ").append(firstLine(example));
        }
        m.append("\n  to change: ").append(keyFor(trip.commonestReason(), example));
        m.append("\n  (rollout.failure_breaker.window = ")
                .append(trip.window())
                .append(", threshold = ")
                .append(trip.threshold())
                .append("; window = 0 turns this check off)");
        return m.toString();
    }

    /** The setting behind a reason: where the user looks first. */
    static String keyFor(String reason, String example) {
        String e = example == null ? "" : example.toLowerCase(Locale.ROOT);
        return switch (reason) {
            case "failed" ->
                e.contains("reward")
                        ? "the reward function (rollout.workflow_kwargs.reward_fn)"
                        : "the workflow (rollout.workflow, rollout.workflow_kwargs)";
            case "contract" -> "the workflow's results (rollout.workflow): they break the workflow contract";
            case "accept_error" -> "the accept filter (rollout.accept)";
            case "timeout" -> "rollout.episode_timeout, or the model servers (rollout.servers): groups ran out of time";
            default -> "rollout.workflow";
        };
    }

    private static String firstLine(String s) {
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl) + " …";
    }

    @Override
    public void close() {
        poller.shutdownNow();
    }
}
