package org.rollout.cluster;

import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Down;
import org.apache.pekko.cluster.typed.Subscribe;

/**
 * Downs this node when it finds itself on the minority side of a partition after all, a second
 * line behind the Split Brain Resolver.
 *
 * <p>Why: the resolver decides from this node's view of reachability, which a partition freezes.
 * Cut off right after a flapping link, a node still held other nodes' stale observations of each
 * other ("node-2 cannot reach node-3"), judged both of them indirectly connected, downed them and
 * ran on alone, while the two of them downed it: two clusters, two coordinators handing out the
 * same tasks (PartitionTest found this). The guard counts the members this node lost by downing
 * while its own failure detector could not reach them either: if those outnumber the members
 * left (on a tie: unless the lowest address is on this side, as keep-majority decides), this node
 * was the minority and downs itself. Members downed while this node still reached them (the
 * resolver removing both ends of a one-way cut) do not count; neither do members that leave
 * gracefully. A lost member forgets after {@code window}, or when a node joins on its address.
 */
final class MinorityGuard {
    private MinorityGuard() {}

    static Behavior<ClusterEvent.MemberEvent> create(Duration window) {
        return Behaviors.setup(ctx -> {
            Cluster cluster = Cluster.get(ctx.getSystem());
            org.apache.pekko.cluster.Cluster classic = org.apache.pekko.cluster.Cluster.get(
                    org.apache.pekko.actor.typed.javadsl.Adapter.toClassic(ctx.getSystem()));
            cluster.subscriptions().tell(Subscribe.create(ctx.getSelf(), ClusterEvent.MemberEvent.class));
            Map<Address, Long> lost = new HashMap<>();
            return Behaviors.receiveMessage(event -> {
                long now = System.nanoTime();
                lost.values().removeIf(at -> now - at > window.toNanos());
                Member m = event.member();
                Address self = cluster.selfMember().address();
                if (event instanceof ClusterEvent.MemberDowned && !m.address().equals(self)) {
                    if (!classic.failureDetector().isAvailable(m.address())) {
                        lost.put(m.address(), now);
                    }
                } else if (event instanceof ClusterEvent.MemberJoined || event instanceof ClusterEvent.MemberUp) {
                    lost.remove(m.address());
                }
                if (lost.isEmpty() || cluster.selfMember().status() != MemberStatus.up()) {
                    return Behaviors.same();
                }
                Set<Address> here = java.util.stream.StreamSupport.stream(
                                cluster.state().getMembers().spliterator(), false)
                        .filter(x -> x.status() == MemberStatus.up()
                                || x.status() == MemberStatus.weaklyUp()
                                || x.status() == MemberStatus.joining())
                        .map(Member::address)
                        .collect(Collectors.toSet());
                here.removeAll(lost.keySet());
                if (isMinority(here, lost.keySet())) {
                    ctx.getLog()
                            .error(
                                    "this node is on the minority side: {} member(s) here {}, {} lost by downing while"
                                            + " unreachable from here too {}; downing itself so that only the majority runs",
                                    here.size(),
                                    here,
                                    lost.size(),
                                    lost.keySet());
                    cluster.manager().tell(new Down(self));
                    return Behaviors.stopped();
                }
                return Behaviors.same();
            });
        });
    }

    /**
     * Whether the members {@code here} are the minority against those {@code lost} (disjoint sets):
     * fewer, or as many without the lowest address (keep-majority's tie-break).
     */
    static boolean isMinority(Set<Address> here, Set<Address> lost) {
        int total = here.size() + lost.size();
        return 2 * here.size() < total || (2 * here.size() == total && !here.contains(lowest(here, lost)));
    }

    private static Address lowest(Set<Address> a, Set<Address> b) {
        Comparator<Address> order = Member.addressOrdering()::compare;
        return java.util.stream.Stream.concat(a.stream(), b.stream()).min(order).orElseThrow();
    }
}
