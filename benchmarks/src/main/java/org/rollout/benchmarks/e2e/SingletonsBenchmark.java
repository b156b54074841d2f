package org.rollout.benchmarks.e2e;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.rollout.api.TensorDict;
import org.rollout.cluster.SingletonHarness;
import org.rollout.cluster.SingletonHarness.InProcessServers;
import org.rollout.cluster.SingletonHarness.Running;
import org.rollout.cluster.TlsStores;

/**
 * The singletons' saturation points: the real coordinator, collector and weight version in one
 * JVM against simulated runners (actors that answer at once) and simulated servers (the real
 * {@code WeightUpdater} over an in-process HTTP client: no sockets), see {@link SingletonHarness}.
 *
 * <pre>
 *   coordinator   admissions/s with R runners, the collector a stand-in that answers at once
 *   collector     groups/s and MB/s taken in and handed to a trainer, per group size
 *   pipeline      coordinator + collector + R runners + trainer: groups/s end to end
 *   weights       publish latency (p50/p99) with N runners to prepare and M servers to update
 * </pre>
 *
 * <p>Each rate is timed over {@code --groups} groups after {@code --warmup-groups}, counted where
 * they arrive (runners for the coordinator, the trainer otherwise). The {@code need-*} flags are the
 * 1,000-node fleet's needs (docs/scaling.md); {@code met} says whether every part met its need.
 */
public final class SingletonsBenchmark implements EndToEndBenchmark {
    private static final Duration POINT_TIMEOUT = Duration.ofMinutes(5);
    private static final int ROWS_DEFAULT = 16;

    @Override
    public String name() {
        return "singletons";
    }

    @Override
    public String description() {
        return "coordinator admissions/s, collector groups/s and MB/s, weight fan-out p50/p99 to N runners and M "
                + "servers; simulated runners and servers, one JVM";
    }

    @Override
    public List<Flag> flags() {
        return List.of(
                new Flag("parts", "coordinator,collector,pipeline,weights", "which singletons to measure"),
                new Flag("runners", "100,300,1000", "simulated runners (nodes), one point each"),
                new Flag("capacity", "8", "groups each simulated runner takes at once"),
                new Flag("batch", "32", "consumer_batch_size: groups per trainer batch"),
                new Flag(
                        "ranks",
                        "1",
                        "collector: the trainer's data-parallel ranks (rollout.train_data_parallel_size); above 1 the "
                                + "collector measured is the last rank's, with its share of a step (--batch / ranks), "
                                + "its task ids and batch ids, against its share of the needs (need / ranks)"),
                new Flag("rows", Integer.toString(ROWS_DEFAULT), "rows per synthetic group (n_samples)"),
                new Flag("tokens", "1024,8192", "tokens per row (prompt + output); collector: one point each"),
                new Flag("window", "512", "collector: groups outstanding from the feeder"),
                new Flag("warmup-groups", "20000", "groups before the clock starts, per point"),
                new Flag("groups", "200000", "groups timed, per point"),
                new Flag(
                        "ledger-nodes",
                        "0",
                        "coordinator: 0 for the in-memory ledger, else cluster nodes in this JVM whose majority "
                                + "holds each ledger write (ReplicatedState)"),
                new Flag(
                        "ledger-layouts",
                        "split",
                        "coordinator with --ledger-nodes: split (keys by task range, writes to a key grouped), "
                                + "single (one key, each write sent on its own: the layout before the split, with today's values), "
                                + "or both"),
                new Flag(
                        "held",
                        "0",
                        "coordinator: tasks each simulated runner keeps running (open) at once, a queue entry each, "
                                + "not an actor; a task beyond them ends the oldest. Open tasks = runners × held; "
                                + "the coordinator sees capacity held + --capacity. 0: each task ends at once"),
                new Flag("hold-s", "0", "coordinator: a held task also ends once this many seconds old (0: never)"),
                new Flag(
                        "ledger-serializer",
                        "compact",
                        "coordinator with --ledger-nodes: compact (rollout-ledger, the binding) or cbor (Jackson CBOR, "
                                + "as the ledger's entries were written before: the ledger's parts then too)"),
                new Flag(
                        "failover",
                        "none",
                        "coordinator with --ledger-nodes: after the timed groups, stop the coordinator while it admits "
                                + "and start its successor on the same node (same-node) or another one (other-node); "
                                + "report the time until it has recovered the ledger and admits again, and what it "
                                + "read back against what was written"),
                new Flag(
                        "collector-remote",
                        "no",
                        "collector: yes to send the groups from another cluster node in this JVM (Kryo, over the "
                                + "data plane or, with -Drollout.large_payload_transport=stream-ref, stream refs over "
                                + "Artery TCP), and time the same bytes through a raw loopback socket; no to pass them "
                                + "by reference"),
                new Flag(
                        "transport",
                        "tcp",
                        "collector with --collector-remote yes: the nodes' transports, one point each in this order "
                                + "(repeat one to alternate; figures are medians per transport): tcp, tls-tcp "
                                + "(cluster-config/tls.conf with stores gen-keystores.sh makes in a temporary directory: "
                                + "Artery and the data plane over mutual TLS 1.3; run from the repository), or "
                                + "tls-tcp-stream-ref (the same, payloads on stream refs over Artery's TLS); "
                                + "prints TLS / plain TCP and TLS data plane / TLS stream refs when both are given"),
                new Flag("wv-runners", "100,1000", "weights: runners to prepare, one point each"),
                new Flag("wv-servers", "100,1000,10000", "weights: simulated servers to update, one point each"),
                new Flag("publishes", "20", "weights: publishes timed per point (after 3 untimed)"),
                new Flag("server-call-us", "0", "weights: each simulated server's answer time per control call, µs"),
                new Flag("need-groups-per-s", "3125", "the fleet's groups/s (docs/scaling.md)"),
                new Flag("need-mb-per-s", "1290", "the fleet's group MB/s into the collector (docs/scaling.md)"),
                new Flag("need-fanout-p99-ms", "1000", "the fleet's weight-version control-plane p99, ms"));
    }

    @Override
    public SummaryLine run(Flags f, PrintStream log) throws Exception {
        Set<String> parts = new LinkedHashSet<>(csv(f.string("parts")));
        for (String p : parts) {
            if (!List.of("coordinator", "collector", "pipeline", "weights").contains(p)) {
                throw new IllegalArgumentException("bench singletons: --parts: unknown part '" + p
                        + "' (known: coordinator, collector, pipeline, weights)");
            }
        }
        int[] runners = ints(f, "runners");
        int capacity = f.integer("capacity", 1);
        int batch = f.integer("batch", 1);
        int ranks = f.integer("ranks", 1);
        if (ranks > 256 || batch % ranks != 0) {
            throw new IllegalArgumentException("bench singletons: --ranks " + ranks
                    + " must be at most 256 and divide --batch " + batch
                    + " (each rank's batch is an equal share of a step)");
        }
        int rows = f.integer("rows", 1);
        int[] tokens = ints(f, "tokens");
        int window = f.integer("window", 1);
        int warmup = f.integer("warmup-groups", 0);
        int groups = f.integer("groups", 1);
        int ledgerNodes = f.integer("ledger-nodes", 0);
        List<String> layouts = csv(f.string("ledger-layouts"));
        for (String l : layouts) {
            if (!l.equals("split") && !l.equals("single")) {
                throw new IllegalArgumentException(
                        "bench singletons: --ledger-layouts: unknown layout '" + l + "' (known: split, single)");
            }
        }
        if (ledgerNodes == 0) {
            layouts = List.of("in-memory");
        }
        String remote = f.string("collector-remote");
        if (!remote.equals("yes") && !remote.equals("no")) {
            throw new IllegalArgumentException(
                    "bench singletons: --collector-remote: '" + remote + "' is neither yes nor no");
        }
        List<String> transports = csv(f.string("transport"));
        for (String t : transports) {
            if (!List.of("tcp", "tls-tcp", "tls-tcp-stream-ref").contains(t)) {
                throw new IllegalArgumentException("bench singletons: --transport: unknown transport '" + t
                        + "' (known: tcp, tls-tcp, tls-tcp-stream-ref)");
            }
        }
        if (transports.isEmpty() || (!remote.equals("yes") && !transports.equals(List.of("tcp")))) {
            throw new IllegalArgumentException(
                    "bench singletons: --transport: one or more transports, and other than tcp only with"
                            + " --collector-remote yes");
        }
        int held = f.integer("held", 0);
        double holdSeconds = f.decimal("hold-s", 0);
        SingletonHarness.Hold hold = new SingletonHarness.Hold(held, Duration.ofMillis(Math.round(holdSeconds * 1000)));
        String serializer = f.string("ledger-serializer");
        if (!serializer.equals("compact") && !serializer.equals("cbor")) {
            throw new IllegalArgumentException(
                    "bench singletons: --ledger-serializer: '" + serializer + "' is neither compact nor cbor");
        }
        String failover = f.string("failover");
        if (!List.of("none", "same-node", "other-node").contains(failover)) {
            throw new IllegalArgumentException(
                    "bench singletons: --failover: '" + failover + "' is not none, same-node or other-node");
        }
        if (!failover.equals("none") && ledgerNodes < 2) {
            throw new IllegalArgumentException("bench singletons: --failover needs --ledger-nodes 2 or more");
        }
        for (int r : runners) {
            long slots = (long) r * (capacity + (parts.contains("coordinator") ? held : 0));
            if ((parts.contains("coordinator") || parts.contains("pipeline")) && warmup < slots) {
                // The first admission pass dispatches every runner's capacity at once: timed, that
                // burst would be taken for the coordinator's steady rate.
                throw new IllegalArgumentException("bench singletons: --warmup-groups " + warmup
                        + " must be at least the groups in flight, runners × (held + capacity) = " + slots);
            }
        }
        double needGroups = f.decimal("need-groups-per-s", 0);
        double needMb = f.decimal("need-mb-per-s", 0);
        double needP99 = f.decimal("need-fanout-p99-ms", 0);
        SummaryLine line = new SummaryLine(name());
        boolean met = true;
        TensorDict small = SingletonHarness.groupRows(rows, tokens[0]);

        if (parts.contains("coordinator")) {
            com.typesafe.config.Config pekko = BenchmarkPipeline.PEKKO;
            if (ledgerNodes > 0) {
                if (serializer.equals("cbor")) {
                    pekko = SingletonHarness.LedgerWireSize.cborBinding().withFallback(pekko);
                }
                SingletonHarness.LedgerWireSize w = SingletonHarness.LedgerWireSize.measure(pekko);
                log.printf(
                        Locale.ROOT,
                        "singletons: ledger entries as %s: an open task's value %.0f B; in Distributed Data %.1f B"
                                + " an open task of a key's part, %d B a key of %d open tasks (each write to it"
                                + " carries it whole)%n",
                        serializer,
                        w.valueBytes(),
                        w.entryBytes(),
                        w.keyBytes(),
                        SingletonHarness.LedgerWireSize.KEY_ENTRIES);
                line.put("ledger_value_bytes", w.valueBytes());
                line.put("ledger_part_entry_bytes", w.entryBytes());
                line.put("ledger_key_bytes", w.keyBytes());
            }
            for (int r : runners) {
                Map<String, Double> byLayout = new LinkedHashMap<>();
                for (String layout : layouts) {
                    SingletonHarness.WireWatch.reset();
                    var setup = new SingletonHarness.CoordinatorSetup(
                            r, capacity, hold, batch, ledgerNodes, layout.equals("single"));
                    try (Running run = SingletonHarness.coordinator(setup, small, pekko)) {
                        double rate = rate(run.dispatched(), warmup, groups, "coordinator, " + r + " runners");
                        int openAtEnd = run.ledgerOpen();
                        var status = run.coordinatorStatus(Duration.ofSeconds(60));
                        // Writes time out after 10 s: wait for those made so far to settle, so the
                        // unconfirmed count covers the whole point.
                        run.ledgerSettled()
                                .awaitCount(
                                        run.ledgerWrites().get(), Duration.ofSeconds(30), "ledger writes to settle");
                        Map<String, Long> oversized = SingletonHarness.WireWatch.oversized();
                        Map<String, Long> dropped = SingletonHarness.WireWatch.dropped();
                        long[] deltas = SingletonHarness.WireWatch.sent("DeltaPropagation");
                        log.printf(
                                Locale.ROOT,
                                "singletons: coordinator, %d runners × %d%s, %s ledger: %.0f admissions/s with %d"
                                        + " open tasks in the ledger (%d running) at the end"
                                        + " (%d ledger writes, %d not confirmed within 10 s)%n",
                                r,
                                capacity,
                                held > 0
                                        ? " + " + held + " held" + (holdSeconds > 0 ? " (≤ " + holdSeconds + " s)" : "")
                                        : "",
                                ledgerNodes == 0
                                        ? "in-memory"
                                        : ledgerNodes + "-node replicated " + layout + " " + serializer,
                                rate,
                                openAtEnd,
                                status.inFlight(),
                                run.ledgerWrites().get(),
                                run.ledgerUnconfirmed().get());
                        String k = "coordinator_r" + r + (held > 0 ? "_h" + held : "");
                        if (ledgerNodes > 0) {
                            log.printf(
                                    Locale.ROOT,
                                    "singletons: Artery over the whole point: dropped as oversized %s; dropped otherwise"
                                            + " %s; DeltaPropagation sent %d, largest %d B, %d of them ≥ %d B%n",
                                    oversized,
                                    dropped,
                                    deltas[0],
                                    deltas[2],
                                    deltas[3],
                                    SingletonHarness.WireWatch.NEAR_FRAME);
                            line.put(
                                    k + "_" + layout + "_unconfirmed",
                                    run.ledgerUnconfirmed().get());
                            line.put(
                                    k + "_oversized",
                                    oversized.values().stream()
                                            .mapToLong(Long::longValue)
                                            .sum());
                            line.put(
                                    k + "_oversized_delta_propagation", oversized.getOrDefault("DeltaPropagation", 0L));
                            line.put(
                                    k + "_dropped_other",
                                    dropped.values().stream()
                                            .mapToLong(Long::longValue)
                                            .sum());
                            line.put(k + "_delta_propagation_max_bytes", deltas[2]);
                        }
                        line.put(k + "_open_at_end", openAtEnd);
                        line.put(
                                ledgerNodes == 0 || layouts.size() == 1 ? k + "_per_s" : k + "_" + layout + "_per_s",
                                rate);
                        byLayout.put(layout, rate);
                        if (!layout.equals("single")) {
                            met &= rate >= needGroups;
                        }
                        if (!failover.equals("none")) {
                            var fo = run.failOver(failover.equals("same-node") ? 0 : 1, POINT_TIMEOUT);
                            double after = rate(run.dispatched(), 0, Math.min(groups, 20_000), "after the fail-over");
                            log.printf(
                                    Locale.ROOT,
                                    "singletons: fail-over to %s: %d open tasks written, %d read back (%d missing, %d"
                                            + " extra, %d changed; %d writes unconfirmed in the run); writes settled"
                                            + " %.2f s, recovered %.2f s, admitting %.2f s after the stop; %d outcomes"
                                            + " reached the collector during recovery; stash capacity %d; successor"
                                            + " status: %d running; %.0f admissions/s over the next %d%n",
                                    failover,
                                    fo.openAtStop(),
                                    fo.recovered(),
                                    fo.missing(),
                                    fo.extra(),
                                    fo.changed(),
                                    fo.unconfirmed(),
                                    fo.settleSeconds(),
                                    fo.recoveredSeconds(),
                                    fo.admittingSeconds(),
                                    fo.outcomesDuringRecovery(),
                                    fo.stashCapacity(),
                                    fo.statusAfter().inFlight(),
                                    after,
                                    Math.min(groups, 20_000));
                            line.put(k + "_failover_open", fo.openAtStop());
                            line.put(k + "_failover_missing", fo.missing() + fo.changed());
                            line.put(k + "_failover_recovered_s", fo.recoveredSeconds());
                            line.put(k + "_failover_admitting_s", fo.admittingSeconds());
                            line.put(k + "_failover_after_per_s", after);
                            met &= fo.missing() == 0 && fo.changed() == 0;
                        }
                    }
                }
                if (byLayout.containsKey("split") && byLayout.containsKey("single")) {
                    double ratio = byLayout.get("split") / byLayout.get("single");
                    log.printf(Locale.ROOT, "singletons: coordinator, %d runners: split / single = %.2fx%n", r, ratio);
                    line.put("coordinator_r" + r + "_split_over_single", ratio);
                }
            }
        }
        if (parts.contains("collector")) {
            Path tlsDir = transports.stream().anyMatch(t -> t.startsWith("tls"))
                    ? Files.createTempDirectory("bench-singletons-tls")
                    : null;
            try {
                TlsStores stores = tlsDir == null ? null : TlsStores.generate(tlsDir.resolve("stores"));
                for (int t : tokens) {
                    met &= collectorPoints(
                            log,
                            line,
                            remote.equals("yes"),
                            transports,
                            stores,
                            rows,
                            t,
                            batch / ranks,
                            ranks,
                            window,
                            warmup,
                            groups,
                            needGroups / ranks,
                            needMb / ranks);
                }
            } finally {
                if (tlsDir != null) {
                    deleteTree(tlsDir);
                }
            }
        }
        if (parts.contains("pipeline")) {
            for (int r : runners) {
                try (Running run = SingletonHarness.pipeline(r, capacity, batch, small, BenchmarkPipeline.PEKKO)) {
                    double rate = rate(run.taken(), warmup, groups, "pipeline, " + r + " runners");
                    run.trainerError().ifPresent(e -> {
                        throw new IllegalStateException("the trainer thread failed: " + e, e);
                    });
                    log.printf(
                            Locale.ROOT, "singletons: pipeline, %d runners × %d: %.0f groups/s%n", r, capacity, rate);
                    line.put("pipeline_r" + r + "_groups_per_s", rate);
                    met &= rate >= needGroups;
                }
            }
        }
        if (parts.contains("weights")) {
            int publishes = f.integer("publishes", 1);
            Duration callDelay = Duration.ofNanos(Math.round(f.decimal("server-call-us", 0) * 1000));
            ExecutorService blocking = Executors.newVirtualThreadPerTaskExecutor();
            try {
                for (int n : ints(f, "wv-runners")) {
                    for (int m : ints(f, "wv-servers")) {
                        double[] p = fanOut(n, m, publishes, callDelay, blocking);
                        log.printf(
                                Locale.ROOT,
                                "singletons: weight version, %d runners, %d servers: publish p50 %.1f ms p99 %.1f ms; "
                                        + "server fan-out p50 %.1f ms p99 %.1f ms%n",
                                n,
                                m,
                                p[0],
                                p[1],
                                p[2],
                                p[3]);
                        String k = "wv_n" + n + "_m" + m;
                        line.put(k + "_p50_ms", p[0]).put(k + "_p99_ms", p[1]);
                        line.put(k + "_servers_p50_ms", p[2]).put(k + "_servers_p99_ms", p[3]);
                        met &= p[1] <= needP99;
                    }
                }
            } finally {
                blocking.shutdownNow();
            }
        }
        f.appendTo(line);
        return line.put("met", met ? "yes" : "no");
    }

    /**
     * Publishes {@code 3 + publishes} versions one after another; returns p50 and p99 of the
     * publish round trip (pause, prepare every runner, update every server, record, broadcast) and
     * of the servers' part alone, in ms. Every timed publish must have reached every runner and
     * every server.
     */
    private static double[] fanOut(
            int runners, int servers, int publishes, Duration callDelay, ExecutorService blocking) throws Exception {
        InProcessServers sim = new InProcessServers(servers, callDelay);
        double[] total = new double[publishes];
        double[] fan = new double[publishes];
        try (Running run = SingletonHarness.weights(runners, sim, blocking, BenchmarkPipeline.PEKKO)) {
            Path weights = Path.of("/simulated/weights.rlm");
            int version = 0;
            // Untimed publishes: JIT, and every runner in the weight version's listing. A publish
            // sent before the listing is complete prepares fewer runners; the warm-up ends once the
            // last one prepared them all (a running total would never catch up after such a miss).
            long lastPrepared = 0;
            for (int w = 0; w < 3 || lastPrepared < runners; w++) {
                if (w > 50) {
                    throw new IllegalStateException("after 50 publishes the weight version still prepares "
                            + lastPrepared + " runners per publish, not " + runners);
                }
                long before = run.prepared().get();
                run.publish(++version, weights, POINT_TIMEOUT);
                lastPrepared = run.prepared().get() - before;
            }
            for (int i = 0; i < publishes; i++) {
                long preparedBefore = run.prepared().get();
                long t0 = System.nanoTime();
                var reply = run.publish(++version, weights, POINT_TIMEOUT);
                total[i] = (System.nanoTime() - t0) / 1e6;
                fan[i] = reply.report().updateTime().toNanos() / 1e6;
                long prepared = run.prepared().get() - preparedBefore;
                if (prepared != runners || InProcessServers.updated(reply) != servers) {
                    throw new IllegalStateException("publish of version " + version + " prepared " + prepared
                            + " of " + runners + " runners and updated " + InProcessServers.updated(reply) + " of "
                            + servers + " servers");
                }
            }
            for (int s = 0; s < servers; s++) {
                if (sim.calls(s) != 2 * version) {
                    throw new IllegalStateException(
                            "server " + s + " got " + sim.calls(s) + " control calls, not " + 2 * version);
                }
            }
        }
        return new double[] {percentile(total, 50), percentile(total, 99), percentile(fan, 50), percentile(fan, 99)};
    }

    /**
     * The collector's points for groups of {@code rows} × {@code t} tokens: one per transport (by
     * reference when not remote), then the raw loopback socket, and the ratios between transports.
     *
     * @return whether every point met the fleet's needs
     */
    private static boolean collectorPoints(
            PrintStream log,
            SummaryLine line,
            boolean remote,
            List<String> transports,
            TlsStores stores,
            int rows,
            int t,
            int batch,
            int ranks,
            int window,
            int warmup,
            int groups,
            double needGroups,
            double needMb)
            throws Exception {
        boolean met = true;
        int rank = ranks - 1;
        TensorDict g = SingletonHarness.groupRows(rows, t);
        double mb = SingletonHarness.estimatedBytes(g) / 1e6;
        Map<String, List<Double>> rates = new LinkedHashMap<>();
        for (String transport : transports) {
            Config over = switch (transport) {
                case "tls-tcp" -> stores.tlsTcp();
                case "tls-tcp-stream-ref" ->
                    ConfigFactory.parseString("rollout.large_payload_transport = \"stream-ref\"")
                            .withFallback(stores.tlsTcp());
                default -> ConfigFactory.empty();
            };
            try (Running run = (remote
                    ? SingletonHarness.remoteCollector(batch, window, g, BenchmarkPipeline.PEKKO, over, rank, ranks)
                    : SingletonHarness.collector(batch, window, g, BenchmarkPipeline.PEKKO, rank, ranks))) {
                double rate = rate(run.taken(), warmup, groups, "collector, " + rows + "×" + t);
                run.trainerError().ifPresent(e -> {
                    throw new IllegalStateException("the trainer thread failed: " + e, e);
                });
                log.printf(
                        Locale.ROOT,
                        "singletons: collector (%s%s), groups of %d × %d tokens (%.3f MB): %.0f groups/s = %.0f MB/s"
                                + " (%.2fx its need of %.0f groups/s)%n",
                        remote
                                ? "groups from another node, " + transport + ": " + run.largePayloadPath()
                                : "groups by reference",
                        ranks > 1 ? ", rank " + rank + " of " + ranks + ", batches of " + batch : "",
                        rows,
                        t,
                        mb,
                        rate,
                        rate * mb,
                        rate / needGroups,
                        needGroups);
                rates.computeIfAbsent(transport, k -> new ArrayList<>()).add(rate);
                met &= rate >= needGroups && rate * mb >= needMb;
            }
        }
        Map<String, Double> median = new LinkedHashMap<>();
        rates.forEach((transport, r) -> median.put(
                transport,
                percentile(r.stream().mapToDouble(Double::doubleValue).toArray(), 50)));
        median.forEach((transport, rate) -> {
            // tcp alone keeps the keys it always had.
            String key = "collector_t" + t
                    + (median.size() == 1 && transport.equals("tcp") ? "" : "_" + transport.replace('-', '_'));
            line.put(key + "_groups_per_s", rate);
            line.put(key + "_mb_per_s", rate * mb);
        });
        line.put("collector_t" + t + "_group_mb", mb);
        if (ranks > 1) {
            line.put("collector_ranks", ranks);
            median.forEach((transport, rate) -> line.put(
                    "collector_t" + t
                            + (median.size() == 1 && transport.equals("tcp") ? "" : "_" + transport.replace('-', '_'))
                            + "_over_rank_need",
                    rate / needGroups));
        }
        ratio(log, line, median, t, "tls-tcp", "tcp", "tls_over_plain", "TLS data plane / plain TCP data plane");
        ratio(
                log,
                line,
                median,
                t,
                "tls-tcp",
                "tls-tcp-stream-ref",
                "tls_over_tls_stream_refs",
                "TLS data plane / stream refs over Artery's TLS");
        if (remote) {
            // The same bytes through a raw loopback socket, once the nodes are down (median of
            // three): the baseline.
            long bytes = (long) (Math.min(groups, 2000) * mb * 1e6);
            double[] sockets = new double[3];
            for (int k = 0; k < sockets.length; k++) {
                sockets[k] = bytes / 1e6 / HandoffBenchmark.loopback(bytes);
            }
            double socket = percentile(sockets, 50);
            line.put("collector_t" + t + "_loopback_mb_per_s", socket);
            median.forEach((transport, rate) -> {
                log.printf(
                        Locale.ROOT,
                        "singletons: collector, groups of %d × %d tokens: raw loopback socket %.0f MB/s (median of 3);"
                                + " groups from another node (%s) at %.3fx it%n",
                        rows,
                        t,
                        socket,
                        transport,
                        rate * mb / socket);
                line.put(
                        "collector_t" + t
                                + (median.size() == 1 && transport.equals("tcp")
                                        ? ""
                                        : "_" + transport.replace('-', '_'))
                                + "_to_loopback",
                        rate * mb / socket);
            });
        }
        return met;
    }

    /** Logs and records {@code median[a] / median[b]} when both were measured. */
    private static void ratio(
            PrintStream log,
            SummaryLine line,
            Map<String, Double> median,
            int t,
            String a,
            String b,
            String key,
            String what) {
        if (median.containsKey(a) && median.containsKey(b)) {
            double r = median.get(a) / median.get(b);
            log.printf(Locale.ROOT, "singletons: collector, %d-token rows: %s = %.3fx%n", t, what, r);
            line.put("collector_t" + t + "_" + key, r);
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        try (var paths = Files.walk(dir)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    /**
     * Groups per second over the {@code groups} counted after the first {@code warmup} from now:
     * timed from the moment the count passes the warm-up mark to the moment it passes the end mark.
     */
    private static double rate(SingletonHarness.Counter counter, int warmup, int groups, String what) throws Exception {
        long base = counter.get();
        long t0 = counter.awaitCount(base + warmup, POINT_TIMEOUT, what + " (warm-up)");
        long t1 = counter.awaitCount(base + warmup + groups, POINT_TIMEOUT, what);
        return groups / ((t1 - t0) / 1e9);
    }

    static double percentile(double[] values, double p) {
        double[] s = values.clone();
        Arrays.sort(s);
        int i = (int) Math.ceil(p / 100.0 * s.length) - 1;
        return s[Math.max(0, Math.min(s.length - 1, i))];
    }

    private static List<String> csv(String s) {
        List<String> out = new ArrayList<>();
        for (String p : s.split(",")) {
            if (!p.isBlank()) {
                out.add(p.trim());
            }
        }
        return out;
    }

    private static int[] ints(Flags f, String name) {
        List<String> items = csv(f.string(name));
        if (items.isEmpty()) {
            throw new IllegalArgumentException("bench singletons: --" + name + " needs at least one number");
        }
        int[] out = new int[items.size()];
        for (int i = 0; i < out.length; i++) {
            try {
                out[i] = Integer.parseInt(items.get(i));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "bench singletons: --" + name + ": '" + items.get(i) + "' is not a whole number");
            }
            if (out[i] < 1) {
                throw new IllegalArgumentException(
                        "bench singletons: --" + name + ": " + out[i] + " must be at least 1");
            }
        }
        return out;
    }
}
