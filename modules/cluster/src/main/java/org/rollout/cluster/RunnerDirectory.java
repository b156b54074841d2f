package org.rollout.cluster;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.rollout.cluster.TaskLedger.Task;

/**
 * The runners the coordinator knows of: listed by the Receptionist, asked for their info, joined
 * (in the {@link TaskLedger}, with their capacity) or gone. Pure: each event returns the steps the
 * coordinator carries out (ask a runner, watch it, look at the listing again shortly, log).
 *
 * <ul>
 *   <li>A listed runner that has not joined is asked for its info once, until it answers or is lost.
 *   <li>A runner that answers joins and is watched.
 *   <li>A runner no longer listed, whose watch fired, or that did not answer is gone: its tasks in
 *       flight wait to be dispatched again (once). If it is still listed it may be alive: a node
 *       restarted on the same host and port is watched while the removal of its previous
 *       incarnation is still going on, and that removal terminates the watch of the new runner at
 *       once; no later listing would name it again. So the listing is looked at again shortly, and
 *       the runner asked again; one that is really gone does not answer, and soon is not listed.
 *   <li>While a successor recovers (and after), every runner listed is asked once what it holds.
 * </ul>
 *
 * @param <R> how a runner is named (its actor ref in the coordinator; anything in tests)
 */
final class RunnerDirectory<R> {

    /** What the coordinator does about runners. */
    sealed interface Step<R> {}

    /** Ask {@code runner} for its info ({@link GroupRunner.GetInfo}). */
    record AskInfo<R>(R runner) implements Step<R> {}

    /** Ask {@code runner} what it runs and holds ({@link GroupRunner.GetHoldings}). */
    record AskHoldings<R>(R runner) implements Step<R> {}

    /** {@code runner} joined: watch it. */
    record Watch<R>(R runner, String node, int capacity) implements Step<R> {}

    /** Look at the latest listing again shortly ({@link #recheck}). */
    record Recheck<R>() implements Step<R> {}

    /** {@code runner} (on {@code node}, if it had joined) is gone; {@code orphans} wait to be dispatched again. */
    record Gone<R>(R runner, Optional<String> node, List<Task<R>> orphans) implements Step<R> {}

    private final TaskLedger<R> tasks;
    /** The runners of the latest listing. */
    private Set<R> listed = Set.of();
    /** Runners asked for their info that have not answered yet. */
    private final Set<R> asked = new HashSet<>();
    /** Runners asked what they hold; null while holdings are not wanted. */
    private Set<R> holdingsAsked;

    RunnerDirectory(TaskLedger<R> tasks) {
        this.tasks = tasks;
    }

    /** A new listing of the Receptionist: {@code runners} are those registered now. */
    List<Step<R>> listing(Set<R> runners) {
        listed = Set.copyOf(runners);
        List<Step<R>> steps = new ArrayList<>();
        for (R r : runners) {
            askHoldings(r, steps);
            if (!tasks.hasRunner(r) && asked.add(r)) {
                steps.add(new AskInfo<>(r));
            }
        }
        for (R r : tasks.knownRunners()) {
            if (!runners.contains(r)) {
                steps.addAll(gone(r));
            }
        }
        return steps;
    }

    /** The recheck is due: the latest listing again. */
    List<Step<R>> recheck() {
        return listing(listed);
    }

    /** {@code runner} answered with its info. */
    List<Step<R>> joined(R runner, String node, int capacity) {
        asked.remove(runner);
        if (tasks.join(runner, node, capacity)) {
            return List.of(new Watch<>(runner, node, capacity));
        }
        return List.of();
    }

    /** {@code runner} is lost here: its watch fired, or it did not answer. */
    List<Step<R>> gone(R runner) {
        asked.remove(runner);
        List<Step<R>> steps = new ArrayList<>();
        if (listed.contains(runner)) {
            steps.add(new Recheck<>());
        }
        Optional<String> node = tasks.node(runner);
        List<Task<R>> orphans = tasks.leave(runner);
        if (node.isPresent() || !orphans.isEmpty()) {
            // Also a runner that never joined here: a successor may have learnt of its tasks from
            // its holdings before it was lost.
            steps.add(new Gone<>(runner, node, orphans));
        }
        return steps;
    }

    /**
     * From now on every runner is asked once what it holds: those known so far (joined, named by a
     * task, or listed) now, and each one listed later.
     */
    List<Step<R>> askHoldings() {
        if (holdingsAsked == null) {
            holdingsAsked = new HashSet<>();
        }
        Set<R> all = tasks.knownRunners();
        all.addAll(listed);
        List<Step<R>> steps = new ArrayList<>();
        all.forEach(r -> askHoldings(r, steps));
        return steps;
    }

    /** Asks {@code runner} what it holds, if holdings are wanted and it was not asked yet. */
    List<Step<R>> askHoldings(R runner) {
        List<Step<R>> steps = new ArrayList<>();
        askHoldings(runner, steps);
        return steps;
    }

    private void askHoldings(R runner, List<Step<R>> steps) {
        if (holdingsAsked != null && holdingsAsked.add(runner)) {
            steps.add(new AskHoldings<>(runner));
        }
    }

    /** How many runners were asked what they hold. */
    int holdingsAsked() {
        return holdingsAsked == null ? 0 : holdingsAsked.size();
    }

    /** The runners of the latest listing. */
    Set<R> listed() {
        return listed;
    }
}
