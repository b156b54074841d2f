package org.rollout.cluster;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.RestartSupervisorStrategy;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The supervision of the long-lived actors, applied where they are spawned ({@link LocalRollout},
 * {@link ClusterRollout}, {@link GroupRunner} for its groups). Pekko's default stops an actor that
 * throws; here each is restarted or stopped according to what it holds, so that one unexpected
 * exception does not stop a node's runner or a singleton for good:
 *
 * <ul>
 *   <li>coordinator: restart. The new incarnation recovers from the ledger as a successor does,
 *       beside a collector that lives on: outcomes, acknowledgements and weight updates that come
 *       before it has recovered wait in its stash, and the collector announces again the accepted
 *       outcomes it holds and forgets the rejected ones it took, so that their runners' delivering
 *       them again reaches the new incarnation (a {@code TaskFinished} may have died with the
 *       failed one).
 *   <li>collector: restart, and the coordinator is told ({@link RolloutCoordinator.CollectorRestarted}):
 *       it re-attaches the collector under a new incarnation (new batch ids) and has the runners
 *       deliver again what they hold of every task still open, so the empty buffer is refilled from
 *       the runners' outboxes; pulls that were waiting are answered empty (trainers pull again). As
 *       after the loss of the collector's node, a batch handed out and not yet acknowledged is
 *       buffered again: if the trainer acknowledges it (with its task ids) before it is handed out
 *       again it is retired, otherwise its groups reach the trainer a second time.
 *   <li>weight version: restart. The new incarnation reads the version from the durable state; an
 *       update in flight when it failed is abandoned by the failing incarnation ({@link
 *       org.apache.pekko.actor.typed.PreRestart}): admission resumes, runners open their gates, the
 *       publisher hears the failure.
 *   <li>runner: restart with its groups, outbox and pool of group actors kept (they live
 *       outside the restarted behaviour, its children are not stopped): see {@link GroupRunner#create}.
 *   <li>group: stop; a group actor reports the group it owns {@code failed} as it stops and is not
 *       reused; its runner watches it and ends a group it was handed but had not taken ({@link
 *       GroupRun}).
 * </ul>
 *
 * <p>Every restart is limited to {@value #MAX_RESTARTS} within {@link #WITHIN}: an actor that fails
 * on every start stops, as before, instead of spinning.
 */
final class Supervision {
    static final int MAX_RESTARTS = 10;
    static final Duration WITHIN = Duration.ofMinutes(1);

    private Supervision() {}

    /**
     * What a long-lived actor's behaviour passes through where it is spawned, inside its supervision,
     * by the actor's name ({@code coordinator}, {@code collector}, {@code weight-version}, {@code
     * runner}, {@code group}): {@link #IDENTITY} leaves it as it is; a wrapper that intercepts its
     * messages sees (and may disturb) them as the actor does, under the same supervision.
     */
    interface Wrapper {
        Wrapper IDENTITY = new Wrapper() {
            @Override
            public <T> Behavior<T> wrap(String actor, Behavior<T> behavior) {
                return behavior;
            }
        };

        <T> Behavior<T> wrap(String actor, Behavior<T> behavior);
    }

    static RestartSupervisorStrategy restart() {
        return SupervisorStrategy.restart().withLimit(MAX_RESTARTS, WITHIN);
    }

    static Behavior<RolloutCoordinator.Command> coordinator(Behavior<RolloutCoordinator.Command> behavior) {
        return Behaviors.supervise(behavior).onFailure(restart());
    }

    static Behavior<WeightVersion.Command> weightVersion(Behavior<WeightVersion.Command> behavior) {
        return Behaviors.supervise(behavior).onFailure(restart());
    }

    /**
     * The collector, restarted on failure; every start after the first tells the coordinator (null
     * while there is none) that it restarted with an empty buffer.
     */
    static Behavior<Collector.Command> collector(
            Behavior<Collector.Command> behavior, Supplier<ActorRef<RolloutCoordinator.Command>> coordinator) {
        AtomicBoolean first = new AtomicBoolean(true);
        return Behaviors.supervise(Behaviors.<Collector.Command>setup(ctx -> {
                    ActorRef<RolloutCoordinator.Command> c = coordinator.get();
                    if (!first.getAndSet(false) && c != null) {
                        ctx.getLog()
                                .warn(
                                        "the collector restarted after a failure; the runners deliver what they hold again");
                        c.tell(new RolloutCoordinator.CollectorRestarted(ctx.getSelf()));
                    }
                    return behavior;
                }))
                .onFailure(restart());
    }
}
