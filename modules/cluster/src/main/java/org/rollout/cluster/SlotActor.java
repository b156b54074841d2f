package org.rollout.cluster;

import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.rollout.api.EpisodeResult;

/**
 * Runs one slot of a group: one {@code runEpisode} call on its own virtual thread, with the slot's
 * {@link org.rollout.api.WorkflowContext} bound.
 *
 * <p>Protocol: none from outside; its only message is node-local ({@link NodeLocal}). It reports exactly once to its group — {@link
 * GroupActor.SlotDone} or {@link GroupActor.SlotFailed} — and stops.
 *
 * <p>Failure and cancellation: when the group stops this actor before the episode ends (a sibling
 * failed, the group timed out or went stale), {@code PostStop} interrupts the episode's thread; the
 * engine then aborts the in-flight generation on its server. A workflow that ignores interruption
 * keeps its thread until it returns, but its result goes nowhere.
 */
final class SlotActor {
    sealed interface Command extends NodeLocal {}

    private record Finished(EpisodeResult result, Throwable error) implements Command {}

    private SlotActor() {}

    static Behavior<Command> create(
            long taskId, int slot, Callable<EpisodeResult> episode, ActorRef<GroupActor.Command> group) {
        return Behaviors.setup(ctx -> {
            CompletableFuture<EpisodeResult> done = new CompletableFuture<>();
            Thread thread = Thread.ofVirtual()
                    .name("slot-" + taskId + "-" + slot)
                    .start(() -> {
                        try {
                            done.complete(episode.call());
                        } catch (Throwable t) {
                            done.completeExceptionally(t);
                        }
                    });
            ctx.pipeToSelf(done, Finished::new);
            return Behaviors.receive(Command.class)
                    .onMessage(Finished.class, f -> {
                        if (f.error() == null) {
                            group.tell(new GroupActor.SlotDone(slot, f.result()));
                        } else {
                            group.tell(new GroupActor.SlotFailed(slot, unwrap(f.error())));
                        }
                        return Behaviors.stopped();
                    })
                    .onSignal(PostStop.class, s -> {
                        if (!done.isDone()) {
                            thread.interrupt();
                        }
                        return Behaviors.same();
                    })
                    .build();
        });
    }

    private static Throwable unwrap(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }
}
