package org.rollout.system;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Accounts for every task of a run from the nodes' task journals (the {@code rollout.tasks} log
 * lines; all nodes, all incarnations, killed ones included) and what the trainer acknowledged.
 *
 * <p>A task is admitted when the coordinator dispatched it (any attempt). Its end is its latest
 * outcome over all collectors: an acceptance (then it must be in an acknowledged batch), a
 * rejection with a reason, or a discard (stale at hand-out). A task may have outcomes on two
 * collectors (its held outcome went to a successor again); only the latest counts, and an
 * acceptance must then still be delivered exactly once. Evaluation tasks are never batched: each
 * must have an outcome.
 *
 * <p>Strict about delivery: a task the trainer acknowledged must not also end rejected or
 * discarded, whatever the order. A re-run of a delivered task ends as a duplicate (its outcome came
 * after the delivery was known) or is superseded (the collector held its outcome until the
 * acknowledgement came); neither is an outcome.
 *
 * <p>The checks themselves are {@link org.rollout.core.InvariantChecker#accountFor}'s (admitted
 * training tasks vs. delivered and rejected ones), plus: every evaluation task ended, and no
 * outcome names a task that was never dispatched.
 */
final class TaskAccounting {
    private static final Pattern DISPATCH = Pattern.compile(
            "^(\\S+) .*rollout\\.tasks - dispatch task=(\\d+) attempt=(\\d+) eval=(\\w+) index=(-?\\d+) version=(\\d+) node=(\\S+)");
    private static final Pattern OUTCOME = Pattern.compile(
            "^(\\S+) .*rollout\\.tasks - outcome task=(\\d+) attempt=(\\d+) eval=(\\w+) accepted=(\\w+) reason=(\\S+)");
    private static final Pattern DISCARD =
            Pattern.compile("^(\\S+) .*rollout\\.tasks - discard task=(\\d+) reason=(\\S+)");
    private static final Pattern DUPLICATE = Pattern.compile("rollout\\.tasks - duplicate task=(\\d+) attempt=(\\d+)");
    private static final Pattern SUPERSEDED =
            Pattern.compile("rollout\\.tasks - superseded task=(\\d+) attempt=(\\d+)");

    private record End(String time, boolean accepted, String reason) {}

    final Set<Long> training = new HashSet<>();
    final Set<Long> eval = new HashSet<>();
    final Map<String, Long> dispatchesByNode = new TreeMap<>();
    long dispatches;
    long redispatches;
    long duplicatesDropped;
    /** Held outcomes of re-runs dropped because the trainer acknowledged their task's earlier batch. */
    long rerunOutcomesSuperseded;
    /** The nodes each task was dispatched to, in dispatch order. */
    final Map<Long, List<String>> nodesByTask = new HashMap<>();

    private final Map<Long, End> ends = new HashMap<>();
    private final Set<Long> withOutcome = new HashSet<>();
    final Map<String, Long> rejectedByReason = new TreeMap<>();
    final Map<Long, String> rejected = new HashMap<>();
    final List<String> violations = new ArrayList<>();
    long checks;

    /** Reads the journals of {@code processes}. */
    static TaskAccounting read(List<ManagedProcess> processes) throws IOException {
        TaskAccounting a = new TaskAccounting();
        for (ManagedProcess p : processes) {
            for (String line : p.lines()) {
                a.parse(line);
            }
        }
        return a;
    }

    /**
     * A journal read as it grows: each {@link #update} parses only the lines logged since the last
     * one, so that a test can look many times a second at a long run (a full {@link #read} of every
     * log takes longer than a short group runs).
     */
    static final class Follower {
        private final TaskAccounting accounting = new TaskAccounting();
        private final Map<ManagedProcess, Integer> consumed = new java.util.IdentityHashMap<>();

        /** The accounting with every line logged so far by {@code processes}. */
        TaskAccounting update(List<ManagedProcess> processes) throws IOException {
            for (ManagedProcess p : processes) {
                List<String> fresh = p.linesFrom(consumed.getOrDefault(p, 0));
                consumed.merge(p, fresh.size(), Integer::sum);
                fresh.forEach(accounting::parse);
            }
            return accounting;
        }
    }

    private void parse(String line) {
        if (!line.contains("rollout.tasks - ")) {
            return;
        }
        Matcher m = DISPATCH.matcher(line);
        if (m.find()) {
            long task = Long.parseLong(m.group(2));
            dispatches++;
            if (Integer.parseInt(m.group(3)) > 0) {
                redispatches++;
            }
            (Boolean.parseBoolean(m.group(4)) ? eval : training).add(task);
            dispatchesByNode.merge(m.group(7), 1L, Long::sum);
            nodesByTask.computeIfAbsent(task, k -> new ArrayList<>()).add(m.group(7));
            return;
        }
        m = OUTCOME.matcher(line);
        if (m.find()) {
            long task = Long.parseLong(m.group(2));
            withOutcome.add(task);
            end(task, new End(m.group(1), Boolean.parseBoolean(m.group(5)), m.group(6)));
            return;
        }
        m = DISCARD.matcher(line);
        if (m.find()) {
            end(Long.parseLong(m.group(2)), new End(m.group(1), false, m.group(3)));
            return;
        }
        if (DUPLICATE.matcher(line).find()) {
            duplicatesDropped++;
            return;
        }
        if (SUPERSEDED.matcher(line).find()) {
            rerunOutcomesSuperseded++;
        }
    }

    private void end(long task, End e) {
        ends.merge(task, e, (old, now) -> now.time().compareTo(old.time()) >= 0 ? now : old);
    }

    /**
     * Checks every admitted task against what {@code trainer} acknowledged (after a drain, when
     * nothing runs any more); the checker's violations include those of this accounting.
     */
    void accountFor(CheckedTrainer trainer) {
        Set<Long> delivered = trainer.consumedTasks();
        for (long task : training) {
            End e = ends.get(task);
            if (e == null || e.accepted()) {
                continue;
            }
            checks++;
            if (delivered.contains(task)) {
                violations.add("task " + task + " was delivered to the trainer and also ended "
                        + ("-".equals(e.reason()) ? "rejected" : "rejected as " + e.reason()) + " at " + e.time());
                continue;
            }
            rejected.put(task, "-".equals(e.reason()) ? "" : e.reason());
            rejectedByReason.merge(e.reason(), 1L, Long::sum);
        }
        trainer.checker().accountFor(training, rejected);
        for (long task : eval) {
            checks++;
            if (!withOutcome.contains(task)) {
                violations.add("evaluation task " + task + " was dispatched but never finished");
            }
        }
        for (long task : withOutcome) {
            checks++;
            if (!training.contains(task) && !eval.contains(task)) {
                violations.add("task " + task + " has an outcome but was never dispatched");
            }
        }
        violations.forEach(trainer::addViolation);
    }

    /** Tasks whose latest dispatch went to {@code node} and that have no outcome yet. */
    Set<Long> inFlightOn(String node) {
        Set<Long> running = new HashSet<>();
        nodesByTask.forEach((task, nodes) -> {
            if (nodes.getLast().equals(node) && !withOutcome.contains(task) && !ends.containsKey(task)) {
                running.add(task);
            }
        });
        return running;
    }

    /** How many dispatches went to {@code node} (every attempt counts). */
    long dispatchesTo(String node) {
        return dispatchesByNode.getOrDefault(node, 0L);
    }

    /** Whether task {@code task} has an outcome or a discard. */
    boolean ended(long task) {
        return ends.containsKey(task);
    }

    long rejectedCount() {
        return rejected.size();
    }
}
