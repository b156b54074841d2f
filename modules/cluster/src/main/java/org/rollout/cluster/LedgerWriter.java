package org.rollout.cluster;

import java.util.Collection;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Writes the coordinator's changes to the durable ledger ({@link DurableState#writeLedger}) with
 * the current cursor, and runs what waits for a write once it is written: at once when the write
 * completed already, else when its {@link RolloutCoordinator.Persisted} comes back to the actor. A
 * write that is not confirmed is logged and counted, and what waited for it runs anyway.
 */
final class LedgerWriter {

    private final ActorContext<RolloutCoordinator.Command> ctx;
    private final DurableState state;
    private final Supplier<DurableState.Cursor> cursor;
    private long failures;

    /**
     * @param ctx the coordinator's context: completions come back to it as {@link RolloutCoordinator.Persisted}
     * @param state where the ledger is written
     * @param cursor the cursor written with every change
     */
    LedgerWriter(
            ActorContext<RolloutCoordinator.Command> ctx, DurableState state, Supplier<DurableState.Cursor> cursor) {
        this.ctx = ctx;
        this.state = state;
        this.cursor = cursor;
    }

    /** Writes the changes with the current cursor; runs {@code then} once written (or not). */
    void write(Collection<DurableState.OpenTask> put, Collection<Long> remove, Runnable then) {
        var stage = state.writeLedger(put, remove, cursor.get()).toCompletableFuture();
        if (stage.isDone() && !stage.isCompletedExceptionally()) {
            then.run();
        } else {
            ctx.pipeToSelf(stage, (ok, error) -> new RolloutCoordinator.Persisted(then, error));
        }
    }

    /** A write completed (or failed): runs what waited for it; the actor's behaviour stays. */
    Behavior<RolloutCoordinator.Command> completed(RolloutCoordinator.Persisted p) {
        if (p.error() != null) {
            failures++;
            ctx.getLog().warn("ledger write not confirmed ({}); going on", GroupRun.describe(p.error()));
        }
        p.then().run();
        return Behaviors.same();
    }

    /** Writes not confirmed so far. */
    long failures() {
        return failures;
    }
}
