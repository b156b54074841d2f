package org.rollout.cluster;

import java.time.Duration;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.pubsub.Topic;

/**
 * Collectors as the cluster tests and the singleton harness start them: no staleness limit, a
 * statistics book of their own, and (unless a rank's share is named) the whole run's batches.
 */
final class TestCollectors {
    private TestCollectors() {}

    /**
     * Spawns a version topic {@code name-topic} and, under {@code name}, a collector of
     * {@code batchSize}-group batches on it that answers no coordinator until one attaches.
     */
    static ActorRef<Collector.Command> spawn(
            ActorTestKit kit, String name, int batchSize, Duration ackTimeout, boolean awaitAttach) {
        ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic =
                kit.spawn(Topic.create(WeightVersion.VersionChanged.class, name + "-topic"), name + "-topic");
        return kit.spawn(behavior(batchSize, ackTimeout, topic, null, awaitAttach, RankShare.ALONE), name);
    }

    /** A collector's behaviour with everything but its staleness limit and statistics named. */
    static Behavior<Collector.Command> behavior(
            int batchSize,
            Duration ackTimeout,
            ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic,
            ActorRef<RolloutCoordinator.Command> coordinator,
            boolean awaitAttach,
            RankShare share) {
        return Collector.create(
                batchSize, ackTimeout, Long.MAX_VALUE, new StatsBook(null), topic, coordinator, awaitAttach, share);
    }
}
