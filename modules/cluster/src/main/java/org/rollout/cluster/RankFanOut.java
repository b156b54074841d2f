package org.rollout.cluster;

import java.time.Duration;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Stands for the coordinators of a run with several trainer ranks where one coordinator is
 * expected (the weight version's pause and resume): every message goes to each rank's
 * coordinator. A {@link RolloutCoordinator.ResumeAdmission} that asks for a confirmation is
 * answered once every coordinator confirmed, with the lowest version they admit at, so a publish
 * returns only after each rank admits at its version.
 */
final class RankFanOut {

    private RankFanOut() {}

    static Behavior<RolloutCoordinator.Command> create(List<ActorRef<RolloutCoordinator.Command>> coordinators) {
        List<ActorRef<RolloutCoordinator.Command>> all = List.copyOf(coordinators);
        return Behaviors.receive((ctx, message) -> {
            if (message instanceof RolloutCoordinator.ResumeAdmission r && r.replyTo() != null) {
                ActorRef<Integer> confirmations = ctx.spawnAnonymous(confirmations(all.size(), r.replyTo()));
                all.forEach(
                        c -> c.tell(new RolloutCoordinator.ResumeAdmission(r.updateId(), r.version(), confirmations)));
            } else {
                all.forEach(c -> c.tell(message));
            }
            return Behaviors.same();
        });
    }

    /**
     * How long the confirmations of one resume are waited for; the weight version gives up sooner
     * (its own timeout), this only bounds how long a coordinator that never answers keeps the
     * waiting actor alive.
     */
    static final Duration GIVE_UP = Duration.ofMinutes(10);

    /** Versions are never negative: this one stands for "no more confirmations will come". */
    private static final int GAVE_UP = -1;

    /** Waits for {@code expected} versions, answers {@code replyTo} with the lowest, and stops. */
    private static Behavior<Integer> confirmations(int expected, ActorRef<Integer> replyTo) {
        return Behaviors.setup(ctx -> new Object() {
            int seen;
            int lowest = Integer.MAX_VALUE;

            Behavior<Integer> waiting() {
                ctx.setReceiveTimeout(GIVE_UP, GAVE_UP);
                return Behaviors.receiveMessage(version -> {
                    if (version == GAVE_UP) {
                        return Behaviors.stopped();
                    }
                    seen++;
                    lowest = Math.min(lowest, version);
                    if (seen < expected) {
                        return Behaviors.same();
                    }
                    replyTo.tell(lowest);
                    return Behaviors.stopped();
                });
            }
        }.waiting());
    }
}
