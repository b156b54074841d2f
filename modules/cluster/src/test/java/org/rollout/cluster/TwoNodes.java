package org.rollout.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;

/**
 * Two actor systems named {@code Rollout} in this JVM, joined into one cluster over Artery TCP on
 * 127.0.0.1 with random ports and Pekko's default frame size: the multi-node test harness.
 * {@link #seenFromA} and {@link #seenFromB} turn a ref of one node into the other node's remote ref.
 */
final class TwoNodes implements AutoCloseable {
    static final Duration DEADLINE = Duration.ofSeconds(60);

    static final Config CLUSTER = ConfigFactory.parseString("""
                    pekko.actor.provider = cluster
                    pekko.remote.artery.transport = tcp
                    pekko.remote.artery.canonical.hostname = "127.0.0.1"
                    pekko.remote.artery.canonical.port = 0
                    pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
                    pekko.cluster.downing-provider-class = "org.apache.pekko.cluster.sbr.SplitBrainResolverProvider"
                    pekko.actor.default-dispatcher.fork-join-executor.parallelism-min = 2
                    pekko.actor.default-dispatcher.fork-join-executor.parallelism-max = 4
                    pekko.remote.artery.advanced.inbound-lanes = 2
                    pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                    # A loaded 2-core machine (and the full GCs of heap measurements) delays heartbeats
                    # by seconds; neither node may be judged unreachable for that.
                    pekko.cluster.failure-detector.acceptable-heartbeat-pause = 30 s
                    """);

    final ActorTestKit a;
    final ActorTestKit b;

    /** Node A with {@code extraA} over the defaults, node B with the defaults; both Up. */
    TwoNodes(Config extraA) {
        this(extraA, ConfigFactory.empty());
    }

    /** Node A with {@code extraA} over the defaults, node B with {@code extraB}; both Up. */
    TwoNodes(Config extraA, Config extraB) {
        a = ActorTestKit.create("Rollout", extraA.withFallback(CLUSTER).withFallback(TestRollout.PEKKO));
        b = ActorTestKit.create("Rollout", extraB.withFallback(CLUSTER).withFallback(TestRollout.PEKKO));
        Cluster ca = Cluster.get(a.system());
        ca.manager().tell(Join.create(ca.selfMember().address()));
        Cluster.get(b.system()).manager().tell(Join.create(ca.selfMember().address()));
        TestRollout.await("both nodes to be Up in both views", DEADLINE, () -> upCount(a) == 2 && upCount(b) == 2);
    }

    TwoNodes() {
        this(ConfigFactory.empty());
    }

    private static long upCount(ActorTestKit kit) {
        return java.util.stream.StreamSupport.stream(
                        Cluster.get(kit.system()).state().getMembers().spliterator(), false)
                .filter(m -> m.status() == MemberStatus.up())
                .count();
    }

    /** {@code refOnA}, an actor of node A, as node B sees it (a remote ref). */
    <T> ActorRef<T> seenFromB(ActorRef<T> refOnA) {
        return move(refOnA, a, b);
    }

    /** {@code refOnB}, an actor of node B, as node A sees it (a remote ref). */
    <T> ActorRef<T> seenFromA(ActorRef<T> refOnB) {
        return move(refOnB, b, a);
    }

    private static <T> ActorRef<T> move(ActorRef<T> ref, ActorTestKit owner, ActorTestKit viewer) {
        String path = ActorRefResolver.get(owner.system()).toSerializationFormat(ref);
        return ActorRefResolver.get(viewer.system()).resolveActorRef(path);
    }

    @Override
    public void close() {
        b.shutdownTestKit();
        a.shutdownTestKit();
    }
}
