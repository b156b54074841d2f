package org.rollout.cli;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Every {@code rollout_} metric a node serves on {@code /metrics}, as Prometheus names it, with its
 * type, labels and meaning: the list docs/observability.md documents and the Grafana dashboard
 * (deploy/grafana/rollout-dashboard.json) may use; tests check the served metrics against it.
 * Every series also carries {@code node} (the node's name).
 */
final class MetricCatalog {
    private MetricCatalog() {}

    /**
     * One metric family.
     *
     * @param name the Prometheus name (histograms and summaries: the base of {@code _bucket},
     *     {@code _count}, {@code _sum}, {@code _max})
     * @param type counter, gauge, histogram or summary
     * @param labels its labels besides {@code node}
     * @param gatewayOnly served only by a node whose gateway streams batches
     * @param meaning what it measures
     */
    record Metric(String name, String type, String labels, boolean gatewayOnly, String meaning) {}

    /** Families served only once a workflow has recorded something for them (the demo records none). */
    static final Set<String> ONLY_WHEN_RECORDED = Set.of("rollout_workflow_stat");

    private static Metric m(String name, String type, String labels, String meaning) {
        return new Metric(name, type, labels, false, meaning);
    }

    static final List<Metric> METRICS = List.of(
            m("rollout_groups_total", "counter", "scope", "groups finished (accepted or rejected)"),
            m("rollout_groups_accepted_total", "counter", "scope", "groups accepted"),
            m("rollout_groups_rejected_total", "counter", "scope, reason", "groups rejected, by reason"),
            m("rollout_tokens_generated_total", "counter", "scope", "tokens generated in finished groups"),
            m(
                    "rollout_staleness",
                    "histogram",
                    "",
                    "staleness of each accepted training group: completion version minus head version"),
            m("rollout_stats_version", "gauge", "scope", "the weight version the per-version gauges below are of"),
            m("rollout_reward", "gauge", "scope", "mean reward of that version (train: rollout; eval: eval-rollout)"),
            m(
                    "rollout_workflow_stat",
                    "gauge",
                    "scope, key",
                    "a statistic the workflow recorded (stats_tracker, ctx.stats()), mean over that version"),
            m("rollout_group_target_slot_count", "gauge", "scope", "semantics §5.9, mean over that version"),
            m("rollout_group_usable_slot_count", "gauge", "scope", "semantics §5.9, mean over that version"),
            m("rollout_group_trainable_slot_count", "gauge", "scope", "semantics §5.9, mean over that version"),
            m(
                    "rollout_group_fully_masked_group",
                    "gauge",
                    "scope",
                    "semantics §5.9, share of groups over that version"),
            m(
                    "rollout_group_singleton_slot_group",
                    "gauge",
                    "scope",
                    "semantics §5.9, share of groups over that version"),
            m("rollout_group_pre_filter_usable_slot_yield", "gauge", "scope", "semantics §5.9, mean over that version"),
            m(
                    "rollout_group_pre_filter_trainable_slot_yield",
                    "gauge",
                    "scope",
                    "semantics §5.9, mean over that version"),
            m("rollout_weight_version", "gauge", "", "the weight version"),
            m("rollout_groups_running", "gauge", "", "training groups being generated"),
            m("rollout_eval_groups_running", "gauge", "", "evaluation groups being generated"),
            m(
                    "rollout_admission_capacity",
                    "gauge",
                    "",
                    "groups the staleness budget admits now (semantics §6.8; may be <= 0)"),
            m(
                    "rollout_groups_in_flight",
                    "gauge",
                    "runner_node",
                    "training groups dispatched to a node and not finished"),
            m("rollout_collector_buffered_groups", "gauge", "", "accepted groups waiting to be batched"),
            m("rollout_unacknowledged_batches", "gauge", "", "batches handed out and not acknowledged"),
            m(
                    "rollout_failure_breaker_tripped",
                    "gauge",
                    "",
                    "1 once the failure breaker stopped admission: the run cannot make progress (/health says why)"),
            m(
                    "rollout_large_payloads_sent_total",
                    "counter",
                    "",
                    "groups and batches above rollout.large_payload_threshold sent whole to another node"),
            m(
                    "rollout_large_payload_sent_bytes_total",
                    "counter",
                    "",
                    "bytes of the large payloads sent whole to another node"),
            m(
                    "rollout_large_payloads_received_total",
                    "counter",
                    "",
                    "large payloads received from another node and decoded"),
            m(
                    "rollout_batches_relayed_total",
                    "counter",
                    "",
                    "batches this node's gateway relayed from the collector's node as it encoded them"),
            m("rollout_batch_relayed_bytes_total", "counter", "", "bytes of the batches relayed whole"),
            m(
                    "rollout_data_plane_refused_total",
                    "counter",
                    "reason",
                    "connections this node's data plane refused: not_tls, no_certificate, untrusted_certificate,"
                            + " handshake_failed, timeout, bad_request"),
            m(
                    "rollout_coordinator_reachable",
                    "gauge",
                    "",
                    "1 when the coordinator and collector answered the last status read within 2 s"),
            m(
                    "rollout_actor_mailbox_messages",
                    "gauge",
                    "actor",
                    "messages waiting in the mailbox of this node's coordinator, collector, weight_version or"
                            + " runner actor (0 where that actor does not run)"),
            m("rollout_inference_in_flight", "gauge", "server", "generate requests in flight on a server"),
            m(
                    "rollout_inference_server_up",
                    "gauge",
                    "server",
                    "1 while the server is in rotation, 0 while ejected or waiting for a weight re-sync"),
            m("rollout_inference_requests_total", "counter", "server", "generate segments sent to a server"),
            m("rollout_inference_failures_total", "counter", "server", "generate segments that failed on a server"),
            m(
                    "rollout_inference_ejections_total",
                    "counter",
                    "server",
                    "times a server left rotation after a failure or a failed health probe"),
            m(
                    "rollout_inference_request_seconds",
                    "histogram",
                    "server",
                    "latency of one generate segment (one HTTP request) on a server"),
            m(
                    "rollout_inference_prompt_tokens_total",
                    "counter",
                    "server",
                    "prompt tokens of the segments a server answered with a cached-token count"),
            m(
                    "rollout_inference_cached_tokens_total",
                    "counter",
                    "server",
                    "of those, the tokens the server reported found in its prefix cache"),
            m(
                    "rollout_inference_prefix_cache_hit_ratio",
                    "gauge",
                    "server",
                    "cached over prompt tokens of a server's answers so far"),
            m(
                    "rollout_inference_fleet_prefix_cache_hit_ratio",
                    "gauge",
                    "",
                    "cached over prompt tokens over every server's answers so far"),
            m(
                    "rollout_inference_aborted_segments_total",
                    "counter",
                    "",
                    "segments a server ended with abort (a weight update interrupted them)"),
            m(
                    "rollout_inference_resumed_segments_total",
                    "counter",
                    "",
                    "segments sent to continue a generation after an abort"),
            m(
                    "rollout_inference_discarded_tokens_total",
                    "counter",
                    "",
                    "tokens thrown away by aborts under interrupt_mode = discard"),
            m("rollout_inference_waiting_at_gate", "gauge", "", "generations held while a weight update runs"),
            m(
                    "rollout_weight_updates_total",
                    "counter",
                    "outcome (ok, failed)",
                    "weight updates this node's engine ran"),
            m(
                    "rollout_weight_update_server_seconds",
                    "summary",
                    "server",
                    "one server's part of a weight update: pause, load, continue"),
            m(
                    "rollout_dump_files_written_total",
                    "counter",
                    "",
                    "trajectory dump writes that succeeded (rollout.dump_to_file)"),
            m(
                    "rollout_dump_writes_failed_total",
                    "counter",
                    "",
                    "trajectory dump writes that failed (no space left, an I/O error); the groups went on"),
            new Metric(
                    "rollout_batch_handoff_size_bytes",
                    "summary",
                    "",
                    true,
                    "bytes of one batch streamed to a trainer by the gateway"),
            new Metric(
                    "rollout_batch_handoff_duration_seconds",
                    "summary",
                    "",
                    true,
                    "time to stream one batch to a trainer, first byte to last"),
            new Metric(
                    "rollout_gateway_pulls",
                    "gauge",
                    "",
                    true,
                    "batch pulls the gateway serves now, waiting or streaming (at most gateway.max_waiting_pulls)"),
            new Metric(
                    "rollout_gateway_pulls_refused_total",
                    "counter",
                    "",
                    true,
                    "pulls answered 503 too_many_pulls because gateway.max_waiting_pulls were under way"),
            new Metric(
                    "rollout_gateway_batch_writes_timed_out_total",
                    "counter",
                    "",
                    true,
                    "batch streams dropped after gateway.write_timeout without progress (delivered again)"),
            new Metric(
                    "rollout_gateway_batches_released_total",
                    "counter",
                    "",
                    true,
                    "batches whose connection closed before their last byte, given to the next pull at once"),
            new Metric(
                    "rollout_gateway_pulls_redirected_total",
                    "counter",
                    "",
                    true,
                    "pulls answered 307 to the gateway of the collector's node (the trainer reads the batch there)"),
            new Metric(
                    "rollout_gateway_connections_accepted_total",
                    "counter",
                    "",
                    true,
                    "HTTP connections the gateway accepted (a Java or Python trainer client keeps its pull connection alive)"));

    /** Every name in the catalogue. */
    static Set<String> names() {
        Set<String> out = new LinkedHashSet<>();
        METRICS.forEach(m -> out.add(m.name()));
        return out;
    }

    /** The family a sample name belongs to: without a histogram's or summary's suffix. */
    private static String family(String sample) {
        for (String suffix : List.of("_bucket", "_count", "_sum", "_max")) {
            if (sample.endsWith(suffix) && names().contains(sample.substring(0, sample.length() - suffix.length()))) {
                return sample.substring(0, sample.length() - suffix.length());
            }
        }
        return sample;
    }

    private static Set<String> families(String prometheusText) {
        Set<String> out = new LinkedHashSet<>();
        for (String line : prometheusText.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int end = line.indexOf('{');
            String name = end < 0 ? line.substring(0, line.indexOf(' ')) : line.substring(0, end);
            out.add(family(name));
        }
        return out;
    }

    /**
     * Catalogue names with no sample in {@code prometheusText} (gateway-only ones skipped unless served,
     * and {@link #ONLY_WHEN_RECORDED} ones always).
     */
    static List<String> missingFrom(String prometheusText, boolean withGateway) {
        Set<String> served = families(prometheusText);
        List<String> out = new ArrayList<>();
        for (Metric m : METRICS) {
            if ((withGateway || !m.gatewayOnly())
                    && !ONLY_WHEN_RECORDED.contains(m.name())
                    && !served.contains(m.name())) {
                out.add(m.name());
            }
        }
        return out;
    }

    /** {@code rollout_} families served in {@code prometheusText} that the catalogue does not list. */
    static List<String> undocumentedIn(String prometheusText) {
        List<String> out = new ArrayList<>();
        for (String f : families(prometheusText)) {
            if (f.startsWith("rollout_") && !names().contains(f)) {
                out.add(f);
            }
        }
        return out;
    }
}
