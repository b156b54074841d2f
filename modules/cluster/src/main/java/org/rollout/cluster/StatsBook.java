package org.rollout.cluster;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.micrometer.core.instrument.DistributionSummary;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.rollout.api.TrainingGroup;
import org.rollout.api.WorkflowContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The run's statistics, per weight version and scope ({@code rollout}, {@code eval-rollout}): what
 * AReaL records — workflow scalars such as {@code reward}, the seven group metrics of semantics §5.9,
 * accepted and rejected counts with reasons — plus generated tokens and staleness.
 *
 * <p>Values are held per version until the version is left behind ({@link #flushBefore}), then
 * each (version, scope) becomes one JSON line appended to {@code stats.jsonl} (when a file is
 * configured) and to the in-process history read by the status line and the summary. A line:
 *
 * <pre>
 * {"version": 3, "scope": "rollout", "groups": 16, "accepted": 14, "rejected": 2,
 *  "rejected_reasons": {"returned_none": 2}, "tokens": 1820, "staleness_mean": 0.4,
 *  "staleness_max": 1, "reward": 0.61, "reward__count": 56, "target_slot_count": 4.0, …}
 * </pre>
 *
 * <p>Scalars are means with a {@code __count}. {@code staleness} of an accepted training group is
 * its completion version minus the smallest version of its generated tokens. Thread-safe.
 *
 * <p>Lines reach the file on a thread of the book's own, in the order they were made, so that the
 * actor that records (the collector) never waits on the disk: {@link #awaitWritten} waits until
 * every line made so far is in the file, and {@link #close} writes what is held and waits for it.
 */
public final class StatsBook implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(StatsBook.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path file;
    private final TreeMap<Integer, Map<String, Page>> open = new TreeMap<>();
    private final List<Line> history = new ArrayList<>();
    /** The JSON text of each line of {@link #history}, at the same index. */
    private final List<String> historyJson = new ArrayList<>();
    /** The highest version written so far, -1 before the first line. */
    private int highestVersion = -1;
    /** The highest version {@link #flushBefore} was called with: training lines below it are written. */
    private int flushedBefore;
    /** Evaluation passes started and not yet written, by the version they started at. */
    private final TreeSet<Integer> evalPending = new TreeSet<>();

    private volatile DistributionSummary stalenessSummary;
    /** Appends lines to {@link #file} in order; null without a file. */
    private final ExecutorService appender;

    /** @param file where lines are appended, or null to keep them in memory only */
    public StatsBook(Path file) {
        this.file = file;
        this.appender = file == null
                ? null
                : Executors.newSingleThreadExecutor(
                        Thread.ofPlatform().daemon().name("stats-appender").factory());
    }

    /**
     * Waits until every line made so far is in the file (or could not be written, which is logged).
     *
     * @return false when {@code timeout} passed first
     */
    public boolean awaitWritten(Duration timeout) throws InterruptedException {
        if (appender == null) {
            return true;
        }
        Future<?> mark;
        try {
            mark = appender.submit(() -> {});
        } catch (RejectedExecutionException closed) {
            return true; // closed: close() waited for the lines
        }
        try {
            mark.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    /** Writes the statistics still held ({@link #flushAll}) and waits (up to 30 s) until they are in the file. */
    @Override
    public void close() {
        flushAll();
        if (appender == null) {
            return;
        }
        appender.shutdown();
        try {
            if (!appender.awaitTermination(30, TimeUnit.SECONDS)) {
                log.warn("statistics not all written to {} within 30 s", file);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** One written line: a version, a scope and its values in order. */
    public record Line(int version, String scope, Map<String, Object> values) {}

    /**
     * The lines of versions at or after a version, for trainers ({@code GET /v1/stats}).
     *
     * @param lines each line's JSON text exactly as appended to {@code stats.jsonl}, in version
     *     order (lines of one version in the order they were written)
     * @param completeBelow every line of a version below this one has been written: no more will
     *     come for them (a version's training line is written when the version is left behind, an
     *     evaluation pass's line when the pass ends)
     */
    public record Since(List<String> lines, int completeBelow) {
        public Since {
            lines = List.copyOf(lines);
        }
    }

    /**
     * Counts of one scope since start, over every version (what the metrics export as counters).
     *
     * @param groups finished groups
     * @param accepted accepted groups
     * @param tokens generated tokens in accepted and rejected groups
     * @param rejectedByReason rejected groups by reason ({@link RejectReason#wireName()})
     */
    public record Totals(long groups, long accepted, long tokens, Map<String, Long> rejectedByReason) {}

    private static final class MutableTotals {
        long groups;
        long accepted;
        long tokens;
        final Map<String, Long> reasons = new LinkedHashMap<>();
    }

    private final Map<String, MutableTotals> running = new LinkedHashMap<>();

    /** The counts of {@code scope} since start (zeros before its first group). */
    public synchronized Totals totals(String scope) {
        MutableTotals t = running.get(scope);
        return t == null
                ? new Totals(0, 0, 0, Map.of())
                : new Totals(t.groups, t.accepted, t.tokens, Map.copyOf(t.reasons));
    }

    /**
     * Records each accepted training group's staleness (semantics §6.8; "What staleness measures"
     * in docs/architecture.md) in {@code summary} too, for the staleness histogram of the metrics.
     */
    public void recordStalenessIn(DistributionSummary summary) {
        this.stalenessSummary = summary;
    }

    private static final class Page {
        long groups;
        long accepted;
        long rejected;
        long tokens;
        long stalenessSum;
        long stalenessMax;
        final Map<String, Long> reasons = new LinkedHashMap<>();
        final ScalarStats scalars = new ScalarStats();
    }

    /**
     * Records a task's outcome: an evaluation group under its dispatch version and the eval scope,
     * a training group under its completion version and the rollout scope.
     */
    public void record(Collector.GroupFinished g) {
        if (g.isEval()) {
            record(g.dispatchVersion(), WorkflowContext.EVAL_ROLLOUT_SCOPE, g);
        } else {
            record(g.completionVersion(), WorkflowContext.ROLLOUT_SCOPE, g);
        }
    }

    /** Records one finished group under {@code version} and {@code scope}. */
    public synchronized void record(int version, String scope, Collector.GroupFinished g) {
        Page p = open.computeIfAbsent(version, v -> new LinkedHashMap<>()).computeIfAbsent(scope, s -> new Page());
        MutableTotals t = running.computeIfAbsent(scope, s -> new MutableTotals());
        p.groups++;
        t.groups++;
        p.tokens += g.generatedTokens();
        t.tokens += g.generatedTokens();
        switch (g.outcome()) {
            case Collector.Accepted a -> {
                p.accepted++;
                t.accepted++;
                TrainingGroup tg = a.group();
                long staleness = Math.max(0, (long) tg.completionVersion() - tg.headVersion());
                p.stalenessSum += staleness;
                p.stalenessMax = Math.max(p.stalenessMax, staleness);
                var summary = stalenessSummary;
                if (summary != null && scope.equals(WorkflowContext.ROLLOUT_SCOPE)) {
                    summary.record(staleness);
                }
            }
            case Collector.Rejected r -> {
                p.rejected++;
                p.reasons.merge(r.reason().wireName(), 1L, Long::sum);
                t.reasons.merge(r.reason().wireName(), 1L, Long::sum);
            }
        }
        p.scalars.add(g.workflowStats());
        g.groupMetrics().forEach(p.scalars::scalar);
    }

    /**
     * Counts an accepted training group that was discarded before hand-out (strict staleness) as
     * rejected with {@code reason} under {@code version}.
     */
    public synchronized void recordDiscarded(int version, RejectReason reason) {
        Page p = open.computeIfAbsent(version, v -> new LinkedHashMap<>())
                .computeIfAbsent(WorkflowContext.ROLLOUT_SCOPE, s -> new Page());
        p.rejected++;
        p.reasons.merge(reason.wireName(), 1L, Long::sum);
        running.computeIfAbsent(WorkflowContext.ROLLOUT_SCOPE, s -> new MutableTotals())
                .reasons
                .merge(reason.wireName(), 1L, Long::sum);
    }

    /**
     * Writes out the training pages of every version below {@code version}. Evaluation pages wait
     * for {@link #flushEval}: a pass is tagged with the version it started at and may finish after
     * the version has moved on, and one pass must stay one line.
     */
    public synchronized void flushBefore(int version) {
        flushedBefore = Math.max(flushedBefore, version);
        for (var it = open.entrySet().iterator(); it.hasNext(); ) {
            var e = it.next();
            if (e.getKey() >= version) {
                break;
            }
            for (var pages = e.getValue().entrySet().iterator(); pages.hasNext(); ) {
                var page = pages.next();
                if (!page.getKey().equals(WorkflowContext.EVAL_ROLLOUT_SCOPE)) {
                    write(e.getKey(), page.getKey(), page.getValue());
                    pages.remove();
                }
            }
            if (e.getValue().isEmpty()) {
                it.remove();
            }
        }
    }

    /**
     * Notes that an evaluation pass started at {@code version}: its line is to come, so versions
     * from {@code version} on are not complete ({@link Since#completeBelow}) until {@link #flushEval}.
     */
    public synchronized void evalStarted(int version) {
        evalPending.add(version);
    }

    /** Writes out the evaluation page of the pass that started at {@code version}. */
    public synchronized void flushEval(int version) {
        evalPending.remove(version);
        Map<String, Page> pages = open.get(version);
        if (pages == null) {
            return;
        }
        Page page = pages.remove(WorkflowContext.EVAL_ROLLOUT_SCOPE);
        if (page != null) {
            write(version, WorkflowContext.EVAL_ROLLOUT_SCOPE, page);
        }
        if (pages.isEmpty()) {
            open.remove(version);
        }
    }

    /** Writes out everything still held, in version order. */
    public synchronized void flushAll() {
        evalPending.clear();
        while (!open.isEmpty()) {
            var e = open.pollFirstEntry();
            e.getValue().forEach((scope, page) -> write(e.getKey(), scope, page));
        }
    }

    /** Every line written so far, oldest first. */
    public synchronized List<Line> history() {
        return List.copyOf(history);
    }

    /**
     * The lines of every version ≥ {@code sinceVersion} written so far, in version order, and the
     * version below which every line is written ({@link Since#completeBelow}): the version training
     * lines are written up to, lowered to the smallest version still holding values or with an
     * evaluation pass under way.
     */
    public synchronized Since since(int sinceVersion) {
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < history.size(); i++) {
            if (history.get(i).version() >= sinceVersion) {
                order.add(i);
            }
        }
        order.sort(Comparator.comparingInt(i -> history.get(i).version())); // stable
        int completeBelow = Math.max(flushedBefore, highestVersion + 1);
        if (!open.isEmpty()) {
            completeBelow = Math.min(completeBelow, open.firstKey());
        }
        if (!evalPending.isEmpty()) {
            completeBelow = Math.min(completeBelow, evalPending.first());
        }
        return new Since(order.stream().map(historyJson::get).toList(), completeBelow);
    }

    /**
     * For each scope, the values of its most recent version: the open version when it has data,
     * else the last written line. Numbers only.
     */
    public synchronized Map<String, Map<String, Double>> latestMeans() {
        Map<String, Map<String, Double>> out = new LinkedHashMap<>();
        for (Line l : history) {
            out.put(l.scope(), numbers(l.values()));
        }
        for (var e : open.entrySet()) {
            e.getValue().forEach((scope, page) -> out.put(scope, numbers(values(e.getKey(), scope, page))));
        }
        return out;
    }

    private void write(int version, String scope, Page page) {
        Map<String, Object> values = values(version, scope, page);
        String json;
        try {
            json = JSON.writeValueAsString(values);
        } catch (IOException e) {
            throw new UncheckedIOException("statistics of version " + version + " are not JSON", e);
        }
        history.add(new Line(version, scope, values));
        historyJson.add(json);
        highestVersion = Math.max(highestVersion, version);
        if (appender == null) {
            return;
        }
        byte[] line = (json + "\n").getBytes(StandardCharsets.UTF_8);
        try {
            appender.execute(() -> append(line));
        } catch (RejectedExecutionException closed) {
            append(line); // after close: on the caller's thread, not lost
        }
    }

    private void append(byte[] line) {
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            Files.write(file, line, StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
        } catch (IOException | UncheckedIOException e) {
            log.warn("could not append statistics to {}: {}", file, e.toString());
        }
    }

    private static Map<String, Object> values(int version, String scope, Page p) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("version", version);
        v.put("scope", scope);
        v.put("groups", p.groups);
        v.put("accepted", p.accepted);
        v.put("rejected", p.rejected);
        v.put("rejected_reasons", Map.copyOf(p.reasons));
        v.put("tokens", p.tokens);
        if (p.accepted > 0) {
            v.put("staleness_mean", (double) p.stalenessSum / p.accepted);
            v.put("staleness_max", p.stalenessMax);
        }
        v.putAll(p.scalars.totals().means());
        return v;
    }

    private static Map<String, Double> numbers(Map<String, Object> values) {
        Map<String, Double> m = new LinkedHashMap<>();
        values.forEach((k, val) -> {
            if (val instanceof Number n && !k.equals("version")) {
                m.put(k, n.doubleValue());
            }
        });
        if (values.get("version") instanceof Number n) {
            m.put("version", n.doubleValue());
        }
        return m;
    }
}
