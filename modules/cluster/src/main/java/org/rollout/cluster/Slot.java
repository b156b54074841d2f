package org.rollout.cluster;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.ExtensibleBehavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Signal;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.rollout.api.EpisodeResult;

/**
 * A slot actor: the owner of one sample's episode thread at a time. Slot actors are children of
 * their node's {@link GroupRunner} and pooled there ({@link Pool}): the runner leases G idle slots
 * for each group it starts, each lease runs one episode on a virtual thread of its own, and the slot
 * returns itself to the pool as soon as that episode has returned (or thrown), before its group
 * has heard of it.
 * A slot actor is spawned once, when the pool has no idle slot, and lives as long as its runner.
 *
 * <p>Cancelling a slot is a message, {@link Cancel}, carrying the lease it is about: the slot
 * interrupts that lease's thread if its episode is still running (the engine then aborts the
 * generation on the server); a lease whose episode already returned, or that the slot has since
 * moved past, is left alone. A slot actor that stops (its runner stopped) interrupts the episode it
 * runs. The slot's behaviour has nothing that can throw; what the episode throws stays on the
 * episode's thread and is reported to the group ({@link GroupRun}).
 *
 * <p>Why pooled: spawning and stopping G actors per group cost tens of microseconds per group on a
 * loaded machine, more than the work of a small group against a fast engine (benchmarks/RESULTS.md,
 * section 1b); a leased slot costs a queue poll and offer, and the thread start the episode needs
 * anyway.
 */
final class Slot extends ExtensibleBehavior<Slot.Command> {

    sealed interface Command {}

    /** Interrupt {@code lease}'s episode if it is still running; from the lease's group. */
    record Cancel(Lease lease) implements Command, NodeLocal {}

    private final Cell cell;

    private Slot(Cell cell) {
        this.cell = cell;
    }

    @Override
    public Behavior<Command> receive(TypedActorContext<Command> ctx, Command msg) {
        if (msg instanceof Cancel c) {
            c.lease().interrupt();
        }
        return this;
    }

    @Override
    public Behavior<Command> receiveSignal(TypedActorContext<Command> ctx, Signal signal) {
        if (signal instanceof PostStop) {
            Lease current = cell.lease;
            if (current != null) {
                current.interrupt();
            }
        }
        return this;
    }

    /** A slot as the pool and its leases see it: its actor and the lease it runs (null when idle). */
    static final class Cell {
        private final Pool pool;
        private ActorRef<Command> ref;
        private volatile Lease lease;

        private Cell(Pool pool) {
            this.pool = pool;
        }

        ActorRef<Command> ref() {
            return ref;
        }
    }

    /**
     * A runner's idle slots. Leased on the runner's thread (which spawns a new slot actor when none
     * is idle); returned from the episode threads. Idle slots are kept: the pool holds as many as
     * the node ever ran at once (its capacity × group size, plus slots whose cancelled episodes
     * ignore interruption and have not returned yet).
     */
    static final class Pool {
        private final ConcurrentLinkedQueue<Cell> idle = new ConcurrentLinkedQueue<>();
        private int spawned;

        /** An idle slot, or a new slot actor spawned as a child of {@code runner}; on the runner's thread. */
        Cell lease(ActorContext<?> runner) {
            Cell c = idle.poll();
            if (c != null) {
                return c;
            }
            c = new Cell(this);
            c.ref = runner.spawn(new Slot(c), "slot-" + spawned++, DispatcherSelector.sameAsParent());
            return c;
        }
    }

    /**
     * One episode on one slot: its thread and its state. The episode thread and the canceller race
     * on the state: the thread marks the lease returned when the episode ends, the canceller marks
     * it cancelled before it interrupts; only one wins, so a thread is never interrupted after its
     * episode returned (the group's merge and dump may run on it) and a cancelled episode's result
     * goes nowhere.
     */
    abstract static class Lease implements Runnable {
        private static final int RUNNING = 0;
        private static final int RETURNED = 1;
        private static final int CANCELLED = 2;
        private static final VarHandle STATE;

        static {
            try {
                STATE = MethodHandles.lookup().findVarHandle(Lease.class, "state", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private final Cell cell;
        private final Thread thread;

        @SuppressWarnings("unused") // through STATE
        private volatile int state;

        /** Takes {@code cell} for this lease; the episode starts with {@link #start}. */
        Lease(Cell cell, String threadName) {
            this.cell = cell;
            this.thread = Thread.ofVirtual().name(threadName).unstarted(this);
            cell.lease = this;
        }

        void start() {
            thread.start();
        }

        /** The slot actor that runs this lease (where a {@link Cancel} goes). */
        ActorRef<Command> slot() {
            return cell.ref;
        }

        /** Whether the episode has neither returned nor been cancelled. */
        boolean running() {
            return state == RUNNING;
        }

        /** The episode; on the lease's thread. */
        abstract EpisodeResult episode() throws Exception;

        /**
         * After the episode, on the lease's thread, when the lease was not cancelled first: {@code
         * result} or {@code error} (one of them null). The slot is back in its pool by then.
         */
        abstract void returned(EpisodeResult result, Throwable error);

        @Override
        public final void run() {
            EpisodeResult result = null;
            Throwable error = null;
            try {
                result = episode();
            } catch (Throwable t) {
                error = t;
            }
            boolean mine = STATE.compareAndSet(this, RUNNING, RETURNED);
            // The slot is free: its episode ended (a cancelled one too: its interrupt is spent on
            // this thread, which ends here).
            if (cell.lease == this) {
                cell.lease = null;
            }
            cell.pool.idle.offer(cell);
            if (mine) {
                returned(result, error);
            }
        }

        /** Interrupts the episode if it still runs; on the slot actor (a {@link Cancel}, or it stopped). */
        void interrupt() {
            if (STATE.compareAndSet(this, RUNNING, CANCELLED)) {
                thread.interrupt();
            }
        }
    }
}
