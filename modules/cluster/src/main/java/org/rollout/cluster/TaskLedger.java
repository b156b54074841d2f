package org.rollout.cluster;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * The coordinator's book of tasks: which are in flight and where, which are accepted and wait for
 * a trainer's acknowledgement, which wait to be dispatched again, and how loaded each runner is.
 * Pure: no actor, no I/O; the coordinator writes what changes to its {@link DurableState} and
 * tells runners ({@link RolloutCoordinator}).
 *
 * <pre>
 *   dispatch ─► in flight ──finish(accepted)──► accepted, unacknowledged ──consume──► gone
 *                  │   └──finish(rejected)──► gone               └──discard (stale)──► gone
 *                  └─ runner lost ─► to dispatch again ─► dispatch (attempt + 1)
 * </pre>
 *
 * <p>A runner's load counts the tasks in flight on it, evaluation ones apart, so that evaluation
 * never takes a training place ({@link #leastLoaded}).
 *
 * @param <R> how a runner is named (its actor ref in the coordinator; anything in tests)
 */
final class TaskLedger<R> {

    /** A task in flight or accepted: what the ledger writes of it, and where it runs. */
    record Task<R>(
            long taskId,
            int attempt,
            Map<String, Object> data,
            boolean isEval,
            long sourceIndex,
            R runner,
            int dispatchVersion,
            long startedNanos,
            boolean possiblyDelivered) {

        /** Its durable entry. */
        DurableState.OpenTask entry(boolean accepted) {
            return new DurableState.OpenTask(
                    taskId, attempt, isEval, sourceIndex, dispatchVersion, accepted, possiblyDelivered);
        }
    }

    /** What the ledger knows of one runner: its capacity and what was dispatched there. */
    static final class RunnerLoad {
        final String node;
        final int capacity;
        int inFlight;
        int evalInFlight;
        /** Groups dispatched here so far: breaks ties between equally loaded runners. */
        long dispatched;
        /** When it joined, among the ledger's runners: the last tie-break, as a scan in join order. */
        long joined;

        RunnerLoad(String node, int capacity) {
            this.node = node;
            this.capacity = capacity;
        }
    }

    /**
     * The order in which {@link #leastLoaded(Map, boolean)} prefers runners: lower load relative to
     * capacity, then fewer groups dispatched, then the earlier join. Loads compare as exact
     * fractions.
     */
    static final Comparator<RunnerLoad> PREFERENCE = (a, b) -> {
        int byLoad =
                Long.compare((long) a.inFlight * Math.max(1, b.capacity), (long) b.inFlight * Math.max(1, a.capacity));
        if (byLoad != 0) {
            return byLoad;
        }
        int byDispatched = Long.compare(a.dispatched, b.dispatched);
        return byDispatched != 0 ? byDispatched : Long.compare(a.joined, b.joined);
    };

    /** What a trainer's acknowledgement did to each of its tasks. */
    record Consumed<R>(List<Task<R>> retired, List<Task<R>> rerunsStopped, int unknown) {}

    private final Map<Long, Task<R>> inFlight = new HashMap<>();
    private final Map<Long, Task<R>> acceptedUnacked = new HashMap<>();
    private final ArrayDeque<Task<R>> toRedispatch = new ArrayDeque<>();
    private final Map<R, RunnerLoad> runners = new LinkedHashMap<>();
    /** The joined runners in {@link #PREFERENCE} order, kept as loads change: a dispatch is O(log n). */
    private final TreeMap<RunnerLoad, R> byPreference = new TreeMap<>(PREFERENCE);

    private long joins;

    // ---- runners ----

    /** Whether {@code runner} has joined. */
    boolean hasRunner(R runner) {
        return runners.containsKey(runner);
    }

    /**
     * {@code runner} joined with {@code capacity}; the tasks already in flight on it (a successor
     * learnt of them from its holdings) count toward its load. False when it had joined before.
     */
    boolean join(R runner, String node, int capacity) {
        if (runners.containsKey(runner)) {
            return false;
        }
        RunnerLoad load = new RunnerLoad(node, capacity);
        load.joined = joins++;
        runners.put(runner, load);
        for (Task<R> t : inFlight.values()) {
            if (runner.equals(t.runner())) {
                load.inFlight++;
                if (t.isEval()) {
                    load.evalInFlight++;
                }
            }
        }
        byPreference.put(load, runner);
        return true;
    }

    /** The node of a joined runner, if it joined. */
    Optional<String> node(R runner) {
        return Optional.ofNullable(runners.get(runner)).map(l -> l.node);
    }

    /**
     * {@code runner} is gone: its tasks in flight wait to be dispatched again (also when it never
     * joined here: a successor may have learnt of its tasks from its holdings). Returns them.
     */
    List<Task<R>> leave(R runner) {
        RunnerLoad gone = runners.remove(runner);
        if (gone != null) {
            byPreference.remove(gone);
        }
        List<Task<R>> orphans = new ArrayList<>();
        for (Task<R> t : inFlight.values()) {
            if (runner.equals(t.runner()) && !toRedispatch.contains(t)) {
                orphans.add(t);
            }
        }
        toRedispatch.addAll(orphans);
        return orphans;
    }

    /** Every runner this ledger knows: joined, or named by a task in flight. */
    Set<R> knownRunners() {
        Set<R> known = new HashSet<>(runners.keySet());
        inFlight.values().stream().map(Task::runner).filter(Objects::nonNull).forEach(known::add);
        return known;
    }

    /**
     * The runner with the lowest load relative to its capacity, or null. With {@code overCapacity}
     * false (training admission) only runners whose training groups are below capacity qualify.
     */
    R leastLoaded(boolean overCapacity) {
        for (Map.Entry<RunnerLoad, R> e : byPreference.entrySet()) {
            if (overCapacity || hasTrainingPlace(e.getKey())) {
                return e.getValue();
            }
        }
        return null;
    }

    private static boolean hasTrainingPlace(RunnerLoad s) {
        return s.inFlight - s.evalInFlight < Math.max(1, s.capacity);
    }

    /**
     * {@link #leastLoaded(boolean)} over {@code runners}: among runners equally loaded, the one that
     * was given the fewest groups so far. Without that tie-break, groups that end faster than they
     * are admitted (every runner idle at each admission) would all go to the runner that joined
     * first, and the other nodes would idle. A scan of every runner: the rule, which the ledger
     * keeps in {@link #PREFERENCE} order instead.
     */
    static <K> K leastLoaded(Map<K, RunnerLoad> runners, boolean overCapacity) {
        K best = null;
        double bestLoad = Double.MAX_VALUE;
        long bestDispatched = Long.MAX_VALUE;
        for (var e : runners.entrySet()) {
            RunnerLoad s = e.getValue();
            int cap = Math.max(1, s.capacity);
            if (!overCapacity && s.inFlight - s.evalInFlight >= cap) {
                continue;
            }
            double load = (double) s.inFlight / cap;
            if (load < bestLoad || (load == bestLoad && s.dispatched < bestDispatched)) {
                bestLoad = load;
                bestDispatched = s.dispatched;
                best = e.getKey();
            }
        }
        return best;
    }

    /** The joined runners' loads, in join order (read-only). */
    Map<R, RunnerLoad> loads() {
        return Collections.unmodifiableMap(runners);
    }

    /** Tasks in flight per node, over the joined runners. */
    Map<String, Integer> inFlightByNode() {
        Map<String, Integer> byNode = new LinkedHashMap<>();
        runners.values().forEach(s -> byNode.merge(s.node, s.inFlight, Integer::sum));
        return byNode;
    }

    // ---- tasks ----

    /** Records {@code t} as in flight on its runner (replacing an earlier attempt of the same task). */
    Task<R> dispatch(Task<R> t) {
        Task<R> previous = inFlight.put(t.taskId(), t);
        if (previous != null) {
            release(previous);
        }
        RunnerLoad load = runners.get(t.runner());
        if (load != null) {
            byPreference.remove(load);
            load.inFlight++;
            load.dispatched++;
            if (t.isEval()) {
                load.evalInFlight++;
            }
            byPreference.put(load, t.runner());
        }
        return t;
    }

    /** Puts back tasks that a recovering coordinator found open (no load counted: runners join later). */
    void restore(Collection<Task<R>> open, Collection<Task<R>> accepted, Collection<Task<R>> again) {
        open.forEach(t -> inFlight.put(t.taskId(), t));
        accepted.forEach(t -> acceptedUnacked.put(t.taskId(), t));
        toRedispatch.addAll(again);
        for (Task<R> t : inFlight.values()) {
            RunnerLoad load = t.runner() == null ? null : runners.get(t.runner());
            if (load != null) {
                byPreference.remove(load);
                load.inFlight++;
                if (t.isEval()) {
                    load.evalInFlight++;
                }
                byPreference.put(load, t.runner());
            }
        }
    }

    /** Whether {@code t} is still the task's current attempt (not finished nor dispatched again). */
    boolean isCurrent(Task<R> t) {
        return inFlight.get(t.taskId()) == t;
    }

    /** The next task that waits to be dispatched again and still should be, if any. */
    Optional<Task<R>> nextToRedispatch() {
        while (!toRedispatch.isEmpty()) {
            Task<R> t = toRedispatch.pollFirst();
            if (isCurrent(t)) {
                return Optional.of(t);
            }
        }
        return Optional.empty();
    }

    /** Queues {@code t} to be dispatched again (its runner left before it was sent). */
    void redispatchLater(Task<R> t) {
        toRedispatch.addLast(t);
    }

    boolean hasRedispatches() {
        return !toRedispatch.isEmpty();
    }

    /** Task {@code taskId} ended: it leaves the in-flight set; returns it, or null when it was not in flight. */
    Task<R> finish(long taskId) {
        Task<R> t = inFlight.remove(taskId);
        if (t != null) {
            release(t);
            toRedispatch.removeIf(r -> r.taskId() == taskId);
        }
        return t;
    }

    /** An accepted training task now waits for the trainer's acknowledgement. */
    void accepted(Task<R> t) {
        acceptedUnacked.put(t.taskId(), t);
    }

    boolean isAcceptedUnacked(long taskId) {
        return acceptedUnacked.containsKey(taskId);
    }

    /** An accepted group was dropped before hand-out; returns its task, or null. */
    Task<R> discard(long taskId) {
        return acceptedUnacked.remove(taskId);
    }

    /**
     * A trainer consumed {@code taskIds}: accepted ones are retired; one that is in flight again
     * (a predecessor's batch, its outcome lost with that node) leaves the in-flight set, its re-run
     * to be stopped; one found nowhere was retired before.
     */
    Consumed<R> consume(Collection<Long> taskIds) {
        List<Task<R>> retired = new ArrayList<>();
        List<Task<R>> stopped = new ArrayList<>();
        int unknown = 0;
        for (Long id : taskIds) {
            Task<R> t = acceptedUnacked.remove(id);
            if (t != null) {
                retired.add(t);
            } else if ((t = finish(id)) != null) {
                stopped.add(t);
            } else {
                unknown++;
            }
        }
        return new Consumed<>(retired, stopped, unknown);
    }

    /** Accepted, unacknowledged tasks per runner that holds their outcome. */
    Map<R, List<Long>> acceptedByRunner() {
        Map<R, List<Long>> byRunner = new HashMap<>();
        acceptedUnacked
                .values()
                .forEach(t -> byRunner.computeIfAbsent(t.runner(), k -> new ArrayList<>())
                        .add(t.taskId()));
        return byRunner;
    }

    /** Tasks in flight or accepted and unacknowledged, per runner that runs them or holds their outcome. */
    Map<R, List<Long>> openByRunner() {
        Map<R, List<Long>> byRunner = new HashMap<>();
        Stream.concat(inFlight.values().stream(), acceptedUnacked.values().stream())
                .filter(t -> t.runner() != null)
                .forEach(t -> byRunner.computeIfAbsent(t.runner(), k -> new ArrayList<>())
                        .add(t.taskId()));
        return byRunner;
    }

    /** Every task in flight or accepted and unacknowledged: what the collector still wants. */
    Set<Long> openTaskIds() {
        Set<Long> open = new HashSet<>(inFlight.keySet());
        open.addAll(acceptedUnacked.keySet());
        return open;
    }

    /**
     * Tasks that a trainer may hold from a batch a lost collector handed out ({@link #handedOut}):
     * in flight again (their outcome was lost), or accepted with their outcome held by a runner.
     */
    List<Long> possiblyDelivered() {
        return Stream.concat(inFlight.values().stream(), acceptedUnacked.values().stream())
                .filter(Task::possiblyDelivered)
                .map(Task::taskId)
                .toList();
    }

    /**
     * The accepted tasks {@code taskIds} are being handed out in a batch: each is marked possibly
     * delivered. Returns the ledger entries that changed (tasks marked before, by an earlier
     * hand-out of the same batch, or not accepted here, are left out).
     */
    List<DurableState.OpenTask> handedOut(Collection<Long> taskIds) {
        List<DurableState.OpenTask> changed = new ArrayList<>();
        for (Long id : taskIds) {
            Task<R> t = acceptedUnacked.get(id);
            if (t == null || t.possiblyDelivered()) {
                continue;
            }
            Task<R> marked = new Task<>(
                    t.taskId(),
                    t.attempt(),
                    t.data(),
                    t.isEval(),
                    t.sourceIndex(),
                    t.runner(),
                    t.dispatchVersion(),
                    t.startedNanos(),
                    true);
            acceptedUnacked.put(id, marked);
            changed.add(marked.entry(true));
        }
        return changed;
    }

    /** Whether training task {@code taskId} is in flight (running, or ended with its outcome not yet taken). */
    boolean isInFlightTraining(long taskId) {
        Task<R> t = inFlight.get(taskId);
        return t != null && !t.isEval();
    }

    /** Tasks in flight (running, or finished with the outcome not yet recorded). */
    int inFlight() {
        return inFlight.size();
    }

    /** How long the oldest task in flight has run, at {@code nowNanos}. */
    long oldestNanos(long nowNanos) {
        long oldest = 0;
        for (Task<R> t : inFlight.values()) {
            oldest = Math.max(oldest, nowNanos - t.startedNanos());
        }
        return oldest;
    }

    private void release(Task<R> t) {
        RunnerLoad load = t.runner() == null ? null : runners.get(t.runner());
        if (load != null) {
            byPreference.remove(load);
            load.inFlight--;
            if (t.isEval()) {
                load.evalInFlight--;
            }
            byPreference.put(load, t.runner());
        }
    }
}
