package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.Test;

/**
 * The benchmark's count of what Artery dropped is observed, not assumed: a message over the frame
 * sent to another node is counted as dropped oversized under its class, and the sizes of messages
 * that were sent are noted by the remote instrument.
 */
class WireWatchTest {

    @Test
    void anOversizedMessageToAnotherNodeIsCountedAndASentOnesSizeNoted() throws Exception {
        SingletonHarness.WireWatch.reset();
        try (TwoNodes nodes = new TwoNodes(ConfigFactory.parseString(
                "pekko.remote.artery.advanced.instruments = [\"org.rollout.cluster.SingletonHarness$FrameSizes\"]"))) {
            SingletonHarness.WireWatch.watch(nodes.a.system());
            TestProbe<GroupRunner.Command> probe = nodes.b.createTestProbe();
            ActorRef<GroupRunner.Command> remote = nodes.seenFromA(probe.getRef());
            remote.tell(new GroupRunner.Forget(List.of(1L, 2L, 3L)));
            assertThat(probe.expectMessageClass(GroupRunner.Forget.class).taskIds())
                    .containsExactly(1L, 2L, 3L);
            List<Long> many = new ArrayList<>();
            for (long i = 0; i < 100_000; i++) {
                many.add(1_000_000_000L + i); // ~9 bytes each as CBOR: ~900 KB, over the 256 KiB frame
            }
            remote.tell(new GroupRunner.Forget(many));
            TestRollout.await(
                    "the oversized message to be counted",
                    Duration.ofSeconds(30),
                    () -> SingletonHarness.WireWatch.oversized().getOrDefault("Forget", 0L) == 1);
            probe.expectNoMessage(Duration.ofMillis(500));
            long[] sent = SingletonHarness.WireWatch.sent("Forget");
            assertThat(sent[0]).as("Forget messages sent").isEqualTo(1);
            assertThat(sent[2]).as("the largest sent").isBetween(20L, 1_000L);
            assertThat(SingletonHarness.WireWatch.dropped()).doesNotContainKey("Forget");
        }
    }
}
