package org.rollout.cluster;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * Where a runner sends each task's outcome: the collector of the task's trainer rank, as the
 * rank's coordinator last named it (in a dispatch, a holdings request or a resend). Task {@code id}
 * is rank {@code id mod ranks}'s. A new number of ranks forgets the collectors of the old one.
 *
 * <p><b>Threading.</b> Confined to the runner's actor.
 */
final class RankCollectors {
    /** By rank; empty before the first task or holdings request. */
    private List<ActorRef<Collector.Command>> byRank = new ArrayList<>();

    /** {@code ref} is the collector of rank {@code rank} of {@code ranks}. */
    void learn(int rank, int ranks, ActorRef<Collector.Command> ref) {
        if (ranks < 1 || rank < 0 || rank >= ranks) {
            return; // not a collector of any run: nothing learnt
        }
        if (byRank.size() != ranks) {
            byRank = new ArrayList<>(Collections.nCopies(ranks, null));
        }
        byRank.set(rank, ref);
    }

    /** The collector that takes task {@code taskId}, or null while none is known. */
    ActorRef<Collector.Command> of(long taskId) {
        return byRank.isEmpty() ? null : byRank.get((int) Math.floorMod(taskId, (long) byRank.size()));
    }
}
