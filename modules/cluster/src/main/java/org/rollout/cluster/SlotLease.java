package org.rollout.cluster;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.rollout.api.EpisodeResult;

/**
 * One sample's slot in a group: its episode, run on a virtual thread of its own, and the race
 * between that episode's end and a cancellation. Owned by its group's actor ({@link GroupRun}),
 * which starts it, cancels it ({@link #interrupt}) when the group ends before the episode returned
 * (a sibling failed, the group timed out, was abandoned or went stale) and when the group actor
 * itself stops (its runner stopped): cancellation goes from the group to its slots, never around
 * it.
 *
 * <pre>
 *   group actor ──start──► virtual thread: episode() ──returns/throws──► RETURNED ──► returned(result, error)
 *        │                                                    ▲ only one wins
 *        └──interrupt──► CANCELLED ──► Thread.interrupt ──────┘ (the engine then aborts the generation on the server)
 * </pre>
 *
 * <p>The episode thread and the canceller race on the state: the thread marks the lease returned
 * when the episode ends, the canceller marks it cancelled before it interrupts; only one wins, so a
 * thread is never interrupted after its episode returned (the group's merge and dump may run on it)
 * and a cancelled episode's result goes nowhere. Nothing here can throw on the group actor's
 * thread; what the episode throws stays on the episode's thread and is handed to {@link #returned}.
 *
 * <p>Why not an actor: a slot's only message would be "cancel", which its group can do itself by
 * interrupting a thread; a slot actor per sample cost a mailbox and a message hop per cancellation,
 * and pooling them (to avoid spawning G actors per group) put the slots under the runner instead of
 * under their group. A lease costs the virtual thread the episode needs anyway.
 */
abstract class SlotLease implements Runnable {
    private static final int RUNNING = 0;
    private static final int RETURNED = 1;
    private static final int CANCELLED = 2;
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(SlotLease.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Thread thread;

    @SuppressWarnings("unused") // through STATE
    private volatile int state;

    /** A lease whose episode starts with {@link #start}, on a virtual thread named {@code threadName}. */
    SlotLease(String threadName) {
        this.thread = Thread.ofVirtual().name(threadName).unstarted(this);
    }

    void start() {
        thread.start();
    }

    /** Whether the episode has neither returned nor been cancelled. */
    boolean running() {
        return state == RUNNING;
    }

    /** The episode; on the lease's thread. */
    abstract EpisodeResult episode() throws Exception;

    /**
     * After the episode, on the lease's thread, when the lease was not cancelled first: {@code
     * result} or {@code error} (one of them null).
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
        if (STATE.compareAndSet(this, RUNNING, RETURNED)) {
            returned(result, error);
        }
    }

    /** Interrupts the episode if it still runs; by the group's actor. */
    void interrupt() {
        if (STATE.compareAndSet(this, RUNNING, CANCELLED)) {
            thread.interrupt();
        }
    }
}
