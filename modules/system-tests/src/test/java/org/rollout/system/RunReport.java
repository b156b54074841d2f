package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The table a system test prints at its end: tasks and how they ended, faults injected by kind,
 * invariants checked, violations. Totals over the tests of this JVM are kept and printed after
 * each table (and appended to {@code target/system-tests/totals.txt}), so a CI log shows how many
 * tasks and faults the whole suite covered.
 */
final class RunReport {
    private static long totalRuns;
    private static long totalTasks;
    private static long totalFaults;
    private static long totalChecks;
    private static long totalViolations;

    private final String name;
    private final Map<String, String> rows = new LinkedHashMap<>();
    private final List<String> violations = new ArrayList<>();
    private long tasks;
    private long faults;
    private long checks;

    private RunReport(String name) {
        this.name = name;
    }

    /**
     * The report of a drained run: the journals of {@code cluster}'s nodes accounted against what
     * {@code trainer} acknowledged ({@link TaskAccounting}), with {@code extraFaults} (injected by
     * the test itself, e.g. trainer disconnects) added to the cluster's.
     */
    static RunReport of(String name, TestCluster cluster, CheckedTrainer trainer, Faults extraFaults)
            throws IOException {
        TaskAccounting a = TaskAccounting.read(cluster.nodeProcesses());
        a.accountFor(trainer);
        RunReport r = new RunReport(name);
        r.tasks = a.training.size() + a.eval.size();
        r.rows.put("tasks admitted (training + evaluation)", a.training.size() + " + " + a.eval.size());
        r.rows.put(
                "  delivered in acknowledged batches",
                Long.toString(trainer.consumedTasks().size()));
        r.rows.put(
                "  rejected, with a reason",
                a.rejectedCount() + " " + (a.rejectedByReason.isEmpty() ? "" : a.rejectedByReason));
        r.rows.put("dispatches (of them re-dispatches)", a.dispatches + " (" + a.redispatches + ")");
        r.rows.put("dispatches by node", a.dispatchesByNode.toString());
        r.rows.put("late outcomes dropped by the collector", Long.toString(a.duplicatesDropped));
        r.rows.put("re-run outcomes superseded by a late acknowledgement", Long.toString(a.rerunOutcomesSuperseded));
        r.rows.put(
                "batches acknowledged (redeliveries seen)",
                trainer.batchesAcknowledged() + " (" + trainer.redeliveries() + ")");
        r.rows.put("weight version at the end", Integer.toString(trainer.version()));
        r.rows.put(
                "trainer calls repeated (pull/ack), publishes failed, status reads failed",
                trainer.trainerErrors() + ", " + trainer.publishFailures() + ", " + trainer.statusErrors());
        Map<String, Long> faultKinds = new TreeMap<>(cluster.faults().byKind());
        extraFaults.byKind().forEach((k, v) -> faultKinds.merge(k, v, Long::sum));
        r.faults = faultKinds.values().stream().mapToLong(Long::longValue).sum();
        r.rows.put("faults injected", r.faults + " " + faultKinds);
        Map<String, Long> checks = new TreeMap<>(trainer.checks());
        checks.put("task_accounted_eval_and_origin", a.checks);
        r.checks = checks.values().stream().mapToLong(Long::longValue).sum();
        r.rows.put("invariants checked", r.checks + " " + checks);
        r.violations.addAll(trainer.violations());
        r.rows.put("violations", Integer.toString(r.violations.size()));
        return r;
    }

    /** Adds a row of the test's own (e.g. heap measurements, groups per node). */
    RunReport with(String row, Object value) {
        rows.put(row, String.valueOf(value));
        return this;
    }

    /** Prints the table and the running totals; then fails the test if any invariant was violated. */
    void printAndAssertClean() throws IOException {
        StringBuilder b = new StringBuilder();
        String rule = "-".repeat(100);
        b.append(rule).append('\n').append("system test: ").append(name).append('\n');
        int width = rows.keySet().stream().mapToInt(String::length).max().orElse(10);
        rows.forEach((k, v) -> b.append(String.format("  %-" + width + "s  %s%n", k, v)));
        violations.stream()
                .limit(30)
                .forEach(v -> b.append("  VIOLATION: ").append(v).append('\n'));
        String totals;
        synchronized (RunReport.class) {
            totalRuns++;
            totalTasks += tasks;
            totalFaults += faults;
            totalChecks += checks;
            totalViolations += violations.size();
            totals = String.format(
                    "system tests so far: %d runs, %d tasks, %d faults injected, %d invariant checks, %d violations",
                    totalRuns, totalTasks, totalFaults, totalChecks, totalViolations);
        }
        b.append("  ").append(totals).append('\n').append(rule).append('\n');
        System.out.print(b);
        Path root = Path.of(System.getProperty("rollout.system.dir", "target/system-tests"));
        Files.createDirectories(root);
        Files.writeString(
                root.resolve("totals.txt"),
                b.toString(),
                StandardCharsets.UTF_8,
                StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
        assertThat(violations).as("invariant violations in " + name).isEmpty();
    }

    long tasks() {
        return tasks;
    }

    long faults() {
        return faults;
    }
}
