package org.rollout.cluster;

import java.util.ArrayDeque;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * When evaluation passes run and which of their items go next: a pass over the whole evaluation
 * set starts at the initial version and whenever the version reaches a multiple of {@code
 * eval_every}; its groups run beside training ones, at most {@code maxConcurrent} at a time, with
 * no staleness bound. A pass due while the previous one still runs is skipped. Pure: the
 * coordinator dispatches what {@link #next} gives and reports back with {@link #finished}.
 */
final class EvaluationSchedule {

    /** What {@link #start} did. */
    enum Start {
        STARTED,
        /** The previous pass still runs: this one is skipped. */
        SKIPPED,
        /** There is nothing to evaluate. */
        NO_ITEMS
    }

    private final List<Map<String, Object>> items;
    private final int every;
    private final int maxConcurrent;
    private final ArrayDeque<Integer> pending = new ArrayDeque<>();
    private int inFlight;
    private int version;
    /** A version a pass was asked for while another ran ({@link #ask}); -1: none. */
    private int asked = -1;

    /**
     * @param items one pass (empty for none)
     * @param every start a pass when the version is a multiple of this (0: only at the start)
     * @param maxConcurrent evaluation groups in flight at most (at least 1)
     */
    EvaluationSchedule(List<Map<String, Object>> items, int every, int maxConcurrent) {
        this.items = List.copyOf(items);
        this.every = every;
        this.maxConcurrent = Math.max(1, maxConcurrent);
    }

    /** Whether a pass is due when the version moves to {@code v}. */
    boolean dueAt(int v) {
        return every > 0 && v % every == 0;
    }

    /** Starts a pass at version {@code v}, unless one still runs or there is nothing to evaluate. */
    Start start(int v) {
        if (items.isEmpty()) {
            return Start.NO_ITEMS;
        }
        if (running()) {
            return Start.SKIPPED;
        }
        version = v;
        for (int i = 0; i < items.size(); i++) {
            pending.addLast(i);
        }
        return Start.STARTED;
    }

    /**
     * A pass over the weights of version {@code v} is asked for, whether or not {@code every}
     * divides it (a run's final weights): returns true when it is to start now; while a pass at
     * another version runs, it is remembered for when that pass ends ({@link #askedAt}).
     */
    boolean ask(int v) {
        if (!running()) {
            return true;
        }
        if (version != v) {
            asked = v;
        }
        return false;
    }

    /**
     * The pass that ran has ended: the version asked for meanwhile, if the version is still {@code
     * current} (an ask for an older version is forgotten).
     */
    OptionalInt askedAt(int current) {
        int v = asked;
        asked = -1;
        return v == current ? OptionalInt.of(v) : OptionalInt.empty();
    }

    /** The index of the next item to dispatch, counted in flight; empty at the concurrency limit. */
    OptionalInt next() {
        if (pending.isEmpty() || inFlight >= maxConcurrent) {
            return OptionalInt.empty();
        }
        inFlight++;
        return OptionalInt.of(pending.pollFirst());
    }

    /** Puts back an index that {@link #next} gave and that could not be dispatched. */
    void putBack(int index) {
        inFlight--;
        pending.addFirst(index);
    }

    /** An evaluation group ended; returns true when that ended the pass. */
    boolean finished() {
        inFlight--;
        return inFlight == 0 && pending.isEmpty();
    }

    /**
     * A successor goes on with the pass its predecessor started at {@code v}, with {@code open}
     * groups still open; the items its predecessor had not dispatched are not run.
     */
    void resume(int v, int open) {
        version = v;
        inFlight += open;
    }

    /** Item {@code index} of the evaluation set, or null when there is no such item. */
    Map<String, Object> item(long index) {
        return index >= 0 && index < items.size() ? items.get((int) index) : null;
    }

    boolean running() {
        return inFlight > 0 || !pending.isEmpty();
    }

    int inFlight() {
        return inFlight;
    }

    int size() {
        return items.size();
    }

    /** The version of the current (or last) pass. */
    int version() {
        return version;
    }
}
