package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link CountingMailbox}: the messages waiting in a long-lived actor's mailbox are counted per kind
 * on its node, go down as the actor takes them, and leave the count when the actor stops.
 */
class MailboxDepthsTest {
    private static final Duration DEADLINE = Duration.ofSeconds(10);
    private final ActorTestKit kit = ActorTestKit.create("mailbox-depths-test", TestRollout.PEKKO);

    @AfterEach
    void tearDown() {
        kit.shutdownTestKit();
    }

    /** Blocks on {@code gate} in its first message, then answers each message's number to {@code seen}. */
    private static Behavior<Integer> gated(CountDownLatch gate, ActorRef<Integer> seen) {
        return Behaviors.receiveMessage(n -> {
            if (n == 0 && !gate.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the gate never opened");
            }
            seen.tell(n);
            return Behaviors.same();
        });
    }

    @Test
    void waitingMessagesAreCountedPerKindAndDrainAsTheActorTakesThem() throws Exception {
        MailboxDepths depths = MailboxDepths.get(kit.system());
        assertThat(depths.depths())
                .containsOnlyKeys(MailboxDepths.KINDS)
                .allSatisfy((k, v) -> assertThat(v).isZero());
        CountDownLatch gate = new CountDownLatch(1);
        TestProbe<Integer> seen = kit.createTestProbe();
        ActorRef<Integer> coordinator =
                kit.spawn(gated(gate, seen.ref()), "coordinator", MailboxDepths.mailbox("coordinator"));
        ActorRef<Integer> runner = kit.spawn(gated(new CountDownLatch(0), seen.ref()), "runner", GroupRunner.PROPS);

        for (int i = 0; i <= 10; i++) {
            coordinator.tell(i);
        }
        // Message 0 is taken (the actor blocks in it); 1..10 wait.
        awaitDepth(depths, "coordinator", 10);
        assertThat(depths.depth("collector")).isZero();
        runner.tell(99);
        assertThat(seen.receiveMessage(DEADLINE)).isEqualTo(99);
        awaitDepth(depths, "runner", 0);

        gate.countDown();
        for (int i = 0; i <= 10; i++) {
            assertThat(seen.receiveMessage(DEADLINE)).isEqualTo(i);
        }
        awaitDepth(depths, "coordinator", 0);
    }

    @Test
    void messagesLeftInAStoppedActorsMailboxLeaveTheCount() throws Exception {
        MailboxDepths depths = MailboxDepths.get(kit.system());
        CountDownLatch gate = new CountDownLatch(1);
        TestProbe<Integer> seen = kit.createTestProbe();
        ActorRef<Integer> collector = kit.spawn(
                Behaviors.receiveMessage(n -> {
                    if (n == 0 && !gate.await(30, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("the gate never opened");
                    }
                    seen.tell(n);
                    return n == 0 ? Behaviors.stopped() : Behaviors.same();
                }),
                "collector",
                MailboxDepths.mailbox("collector"));
        for (int i = 0; i <= 5; i++) {
            collector.tell(i);
        }
        awaitDepth(depths, "collector", 5);
        gate.countDown();
        assertThat(seen.receiveMessage(DEADLINE)).isZero();
        // The actor stopped after message 0: its 5 waiting messages went to dead letters.
        awaitDepth(depths, "collector", 0);
    }

    private static void awaitDepth(MailboxDepths depths, String kind, long expected) throws InterruptedException {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (depths.depth(kind) != expected) {
            assertThat(System.nanoTime())
                    .as("%s mailbox depth %d, expected %d", kind, depths.depth(kind), expected)
                    .isLessThan(deadline);
            Thread.sleep(5);
        }
    }
}
