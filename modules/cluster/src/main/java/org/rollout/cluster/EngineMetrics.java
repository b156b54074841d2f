package org.rollout.cluster;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.ToDoubleFunction;
import org.rollout.api.WorkflowContext;
import org.rollout.core.GroupMetrics;
import org.rollout.trainer.RolloutStatus;

/**
 * The engine's meters on one node (docs/observability.md), read from what the engine already
 * keeps: the node's {@link StatsBook} (groups, accepted, rejected by reason, tokens, the staleness
 * histogram, reward and the group metrics of semantics §5.9 per version; filled on the node that
 * hosts the collector) and the status of the coordinator and collector (weight version, groups
 * running, admission capacity, groups in flight per node, the collector's buffer, batches not yet
 * acknowledged). The status is asked for at most once per {@link #STATUS_MAX_AGE} however many
 * meters are scraped, within {@link #STATUS_TIMEOUT}; while it cannot be had those gauges read NaN
 * and {@code rollout_coordinator_reachable} reads 0. Nothing here runs on the path of a group.
 */
public final class EngineMetrics {
    /** How long one status read may take before the gauges give up on it. */
    public static final Duration STATUS_TIMEOUT = Duration.ofSeconds(2);
    /** A status younger than this is reused. */
    static final Duration STATUS_MAX_AGE = Duration.ofMillis(500);

    /**
     * The staleness histogram's bucket bounds: staleness is a whole number of versions and bounds
     * must be above 0, so the bucket {@code le="0.5"} counts staleness 0, {@code le="1.5"} up to 1, …
     */
    public static final double[] STALENESS_BUCKETS = {
        0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 8.5, 10.5, 15.5, 20.5, 30.5, 50.5
    };

    private static final List<String> SCOPES =
            List.of(WorkflowContext.ROLLOUT_SCOPE, WorkflowContext.EVAL_ROLLOUT_SCOPE);

    private final MeterRegistry registry;
    private final StatsBook stats;
    private final LocalRolloutClient client;
    private final Set<String> nodesSeen = ConcurrentHashMap.newKeySet();
    private final Set<String> workflowStatsSeen = ConcurrentHashMap.newKeySet();
    private Snapshot snapshot = new Snapshot(null, null, 0L, "not read yet");

    /** One read of the coordinator's and collector's status, or why it failed. */
    private record Snapshot(
            RolloutStatus status, RolloutCoordinator.Status coordinator, long readAtNanos, String error) {}

    private EngineMetrics(MeterRegistry registry, StatsBook stats, LocalRolloutClient client) {
        this.registry = registry;
        this.stats = stats;
        this.client = client;
    }

    /** Registers the engine's meters of this node in {@code registry}. */
    public static EngineMetrics bind(MeterRegistry registry, StatsBook stats, LocalRolloutClient client) {
        EngineMetrics m = new EngineMetrics(
                Objects.requireNonNull(registry, "registry"),
                Objects.requireNonNull(stats, "stats"),
                Objects.requireNonNull(client, "client"));
        m.register();
        return m;
    }

    private void register() {
        for (String scope : SCOPES) {
            FunctionCounter.builder(
                            "rollout_groups", stats, s -> s.totals(scope).groups())
                    .description("groups finished (accepted or rejected)")
                    .tag("scope", scope)
                    .register(registry);
            FunctionCounter.builder(
                            "rollout_groups_accepted",
                            stats,
                            s -> s.totals(scope).accepted())
                    .description("groups accepted")
                    .tag("scope", scope)
                    .register(registry);
            for (RejectReason reason : RejectReason.values()) {
                String name = reason.wireName();
                FunctionCounter.builder(
                                "rollout_groups_rejected",
                                stats,
                                s -> s.totals(scope).rejectedByReason().getOrDefault(name, 0L))
                        .description("groups rejected, by reason")
                        .tag("scope", scope)
                        .tag("reason", name)
                        .register(registry);
            }
            FunctionCounter.builder(
                            "rollout_tokens_generated",
                            stats,
                            s -> s.totals(scope).tokens())
                    .description("tokens generated in finished groups")
                    .tag("scope", scope)
                    .register(registry);
            statGauge(scope, "version", "rollout_stats_version", "the weight version the per-version gauges are of");
            statGauge(scope, "reward", "rollout_reward", "mean reward of the current (or last) version");
            for (String metric : new GroupMetrics(1, 1, 1).asMap().keySet()) {
                statGauge(
                        scope,
                        metric,
                        "rollout_group_" + metric,
                        "group metric " + metric + " of semantics §5.9, mean over the current (or last) version");
            }
        }
        stats.recordStalenessIn(DistributionSummary.builder("rollout_staleness")
                .description("staleness of accepted training groups: completion version minus head version")
                .serviceLevelObjectives(STALENESS_BUCKETS)
                .register(registry));
        statusGauge("rollout_weight_version", "the weight version", s -> s.version());
        statusGauge("rollout_groups_running", "training groups being generated", s -> s.running());
        statusGauge("rollout_eval_groups_running", "evaluation groups being generated", s -> s.evalRunning());
        statusGauge(
                "rollout_admission_capacity",
                "groups the staleness budget admits now (semantics §6.8; may be <= 0)",
                s -> s.capacity());
        statusGauge(
                "rollout_collector_buffered_groups", "accepted groups waiting to be batched", s -> s.bufferedGroups());
        statusGauge(
                "rollout_unacknowledged_batches",
                "batches handed out and not acknowledged",
                s -> s.unacknowledgedBatches());
        LargePayloads payloads = LargePayloads.get(client.system());
        FunctionCounter.builder("rollout_large_payloads_sent", payloads, LargePayloads::streamsSent)
                .description("groups and batches above rollout.large_payload_threshold sent whole to another node")
                .register(registry);
        FunctionCounter.builder("rollout_large_payload_sent_bytes", payloads, LargePayloads::bytesSent)
                .description("bytes of the large payloads sent whole to another node")
                .baseUnit("bytes")
                .register(registry);
        FunctionCounter.builder("rollout_large_payloads_received", payloads, LargePayloads::streamsReceived)
                .description("large payloads received from another node and decoded")
                .register(registry);
        FunctionCounter.builder("rollout_batches_relayed", payloads, LargePayloads::batchesRelayed)
                .description("batches this node's gateway relayed from the collector's node as it encoded them")
                .register(registry);
        FunctionCounter.builder("rollout_batch_relayed_bytes", payloads, LargePayloads::bytesRelayed)
                .description("bytes of the batches relayed whole")
                .baseUnit("bytes")
                .register(registry);
        for (String reason : LargePayloads.dataPlaneRefusalReasons()) {
            FunctionCounter.builder("rollout_data_plane_refused", payloads, p -> p.dataPlaneRefused(reason))
                    .description("connections this node's data plane refused, by reason (docs/architecture.md)")
                    .tag("reason", reason)
                    .register(registry);
        }
        MailboxDepths mailboxes = MailboxDepths.get(client.system());
        for (String kind : MailboxDepths.KINDS) {
            Gauge.builder("rollout_actor_mailbox_messages", mailboxes, d -> d.depth(kind))
                    .description("messages waiting in the mailbox of this node's actor of that kind")
                    .tag("actor", kind)
                    .register(registry);
        }
        Gauge.builder("rollout_coordinator_reachable", this, m -> m.current().status() == null ? 0 : 1)
                .description("1 when the coordinator and collector answered the last status read")
                .register(registry);
    }

    private void workflowStatGauge(String scope, String key) {
        Gauge.builder("rollout_workflow_stat", stats, s -> {
                    Map<String, Double> latest = s.latestMeans().get(scope);
                    Double v = latest == null ? null : latest.get(key);
                    return v == null ? Double.NaN : v;
                })
                .description("a statistic the workflow recorded, mean over the current (or last) version")
                .tag("scope", scope)
                .tag("key", key)
                .register(registry);
    }

    /** The engine's own keys of a stats line, exported by the gauges above (or not numbers). */
    private static final Set<String> ENGINE_STAT_KEYS = engineStatKeys();

    private static Set<String> engineStatKeys() {
        Set<String> keys = new HashSet<>(Set.of(
                "version",
                "scope",
                "groups",
                "accepted",
                "rejected",
                "rejected_reasons",
                "tokens",
                "staleness_mean",
                "staleness_max",
                "reward"));
        keys.addAll(new GroupMetrics(1, 1, 1).asMap().keySet());
        return Set.copyOf(keys);
    }

    /** A key a workflow recorded: not the engine's own, and not a {@code __count}. */
    static boolean isWorkflowStat(String key) {
        return !ENGINE_STAT_KEYS.contains(key) && !key.endsWith("__count");
    }

    private void statGauge(String scope, String key, String name, String description) {
        Gauge.builder(name, stats, s -> {
                    Map<String, Double> latest = s.latestMeans().get(scope);
                    Double v = latest == null ? null : latest.get(key);
                    return v == null ? Double.NaN : v;
                })
                .description(description)
                .tag("scope", scope)
                .register(registry);
    }

    private void statusGauge(String name, String description, ToDoubleFunction<RolloutStatus> f) {
        Gauge.builder(name, this, m -> {
                    RolloutStatus s = m.current().status();
                    return s == null ? Double.NaN : f.applyAsDouble(s);
                })
                .description(description)
                .register(registry);
    }

    /**
     * Reads the status if it is stale and registers the gauge of each node seen for the first time
     * ({@code rollout_groups_in_flight{runner_node}}). Call before scraping: meters are not registered
     * while a scrape reads them.
     */
    public void beforeScrape() {
        // What workflows record (stats_tracker in Python, ctx.stats() in Java): one gauge per scope and key.
        stats.latestMeans().forEach((scope, means) -> {
            for (String key : means.keySet()) {
                if (isWorkflowStat(key) && workflowStatsSeen.add(scope + "\u0000" + key)) {
                    workflowStatGauge(scope, key);
                }
            }
        });
        RolloutCoordinator.Status c = current().coordinator();
        if (c == null) {
            return;
        }
        for (String node : c.inFlightByNode().keySet()) {
            if (nodesSeen.add(node)) {
                Gauge.builder("rollout_groups_in_flight", this, m -> {
                            RolloutCoordinator.Status cs = m.current().coordinator();
                            return cs == null ? Double.NaN : cs.inFlightByNode().getOrDefault(node, 0);
                        })
                        .description("training groups the coordinator has dispatched to a node and not heard back")
                        .tag("runner_node", node)
                        .register(registry);
            }
        }
    }

    /** The status, read again when older than {@link #STATUS_MAX_AGE}. */
    private synchronized Snapshot current() {
        long now = System.nanoTime();
        if (snapshot.readAtNanos() != 0 && now - snapshot.readAtNanos() < STATUS_MAX_AGE.toNanos()) {
            return snapshot;
        }
        try {
            RolloutStatus s = client.status(STATUS_TIMEOUT);
            RolloutCoordinator.Status c = client.coordinatorStatus(STATUS_TIMEOUT);
            snapshot = new Snapshot(s, c, now, null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            snapshot = new Snapshot(null, null, now, "interrupted");
        } catch (RuntimeException e) {
            snapshot = new Snapshot(null, null, now, String.valueOf(e.getMessage()));
        }
        return snapshot;
    }

    /** The last status read, refreshed when stale: null status when the coordinator could not be reached. */
    public RolloutStatus status() {
        return current().status();
    }

    /** The coordinator's status of the last read, or null. */
    public RolloutCoordinator.Status coordinatorStatus() {
        return current().coordinator();
    }

    /** Why the last status read failed, or null. */
    public String statusError() {
        return current().error();
    }
}
