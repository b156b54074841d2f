package org.rollout.cluster;

import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Adapter;
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
 * resolver removing both ends of a one-way cut) are not lost: they were on this side of the cut
 * and count with it. Without that, a one-way cut into node-3 of three went wrong: node-3's gossip
 * still reached the others and said it heard neither, so the resolver downed node-2 and node-3 as
 * indirectly connected, and node-1, left to compare itself (one) with node-3 (one), lost the tie
 * and downed itself too; the whole cluster stopped (LinkFaultTest found this). Members that leave
 * gracefully do not count. A downed member is forgotten after {@code window}, or when a node joins
 * on its address.
 */
final class MinorityGuard {
    private MinorityGuard() {}

    static Behavior<ClusterEvent.MemberEvent> create(Duration window) {
        return Behaviors.setup(ctx -> {
            Cluster cluster = Cluster.get(ctx.getSystem());
            org.apache.pekko.cluster.Cluster classic =
                    org.apache.pekko.cluster.Cluster.get(Adapter.toClassic(ctx.getSystem()));
            cluster.subscriptions().tell(Subscribe.create(ctx.getSelf(), ClusterEvent.MemberEvent.class));
            Tally tally = new Tally(window);
            return Behaviors.receiveMessage(event -> {
                long now = System.nanoTime();
                Member m = event.member();
                Address self = cluster.selfMember().address();
                if (event instanceof ClusterEvent.MemberDowned && !m.address().equals(self)) {
                    tally.downed(m.address(), classic.failureDetector().isAvailable(m.address()), now);
                } else if (event instanceof ClusterEvent.MemberJoined || event instanceof ClusterEvent.MemberUp) {
                    tally.joined(m.address());
                }
                if (cluster.selfMember().status() != MemberStatus.up()) {
                    return Behaviors.same();
                }
                Set<Address> up = StreamSupport.stream(
                                cluster.state().getMembers().spliterator(), false)
                        .filter(x -> x.status() == MemberStatus.up()
                                || x.status() == MemberStatus.weaklyUp()
                                || x.status() == MemberStatus.joining())
                        .map(Member::address)
                        .collect(Collectors.toSet());
                if (tally.isMinority(up, now)) {
                    ctx.getLog()
                            .error(
                                    "this node is on the minority side: {} member(s) on this side {}, {} lost by downing"
                                            + " while unreachable from here too {}; downing itself so that only the"
                                            + " majority runs",
                                    tally.thisSide(up).size(),
                                    tally.thisSide(up),
                                    tally.lost().size(),
                                    tally.lost());
                    cluster.manager().tell(new Down(self));
                    return Behaviors.stopped();
                }
                return Behaviors.same();
            });
        });
    }

    /**
     * The members this node saw downed lately, on which side of a cut each was: lost (this node
     * could not reach it either) or on this side (downed while this node still reached it). Each is
     * forgotten after the window, or when a node joins on its address. Not thread-safe: the
     * guard's own state.
     */
    static final class Tally {
        private final long windowNanos;
        private final Map<Address, Long> lost = new HashMap<>();
        private final Map<Address, Long> downedReachable = new HashMap<>();

        Tally(Duration window) {
            this.windowNanos = window.toNanos();
        }

        void downed(Address member, boolean reachableFromHere, long now) {
            if (reachableFromHere) {
                lost.remove(member);
                downedReachable.put(member, now);
            } else {
                downedReachable.remove(member);
                lost.put(member, now);
            }
        }

        void joined(Address member) {
            lost.remove(member);
            downedReachable.remove(member);
        }

        Set<Address> lost() {
            return Set.copyOf(lost.keySet());
        }

        /** The members up on this side, with those downed while this node still reached them. */
        Set<Address> thisSide(Set<Address> up) {
            Set<Address> side = new HashSet<>(up);
            side.addAll(downedReachable.keySet());
            side.removeAll(lost.keySet());
            return side;
        }

        /** Whether this side, given the members {@code up} now, is the minority against those lost. */
        boolean isMinority(Set<Address> up, long now) {
            lost.values().removeIf(at -> now - at > windowNanos);
            downedReachable.values().removeIf(at -> now - at > windowNanos);
            return !lost.isEmpty() && MinorityGuard.isMinority(thisSide(up), lost.keySet());
        }
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
        return Stream.concat(a.stream(), b.stream()).min(order).orElseThrow();
    }
}
