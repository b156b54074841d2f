package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.DeadLetter;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.FishingOutcomes;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.eventstream.EventStream;
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

    /**
     * Tells {@code entered} when it takes message 0 and blocks there on {@code gate}; then answers
     * each message's number to {@code seen}, and stops after {@code stopAfter} (-1: never).
     */
    private static Behavior<Integer> gated(
            CountDownLatch entered, CountDownLatch gate, ActorRef<Integer> seen, int stopAfter) {
        return Behaviors.receiveMessage(n -> {
            if (n == 0) {
                entered.countDown();
                if (!gate.await(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the gate never opened");
                }
            }
            seen.tell(n);
            return n == stopAfter ? Behaviors.stopped() : Behaviors.same();
        });
    }

    @Test
    void waitingMessagesAreCountedPerKindAndDrainAsTheActorTakesThem() throws Exception {
        MailboxDepths depths = MailboxDepths.get(kit.system());
        assertThat(depths.depths())
                .containsOnlyKeys(MailboxDepths.KINDS)
                .allSatisfy((k, v) -> assertThat(v).isZero());
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch gate = new CountDownLatch(1);
        TestProbe<Integer> seen = kit.createTestProbe();
        ActorRef<Integer> coordinator =
                kit.spawn(gated(entered, gate, seen.ref(), -1), "coordinator", MailboxDepths.mailbox("coordinator"));
        ActorRef<Integer> runner = kit.spawn(
                gated(new CountDownLatch(1), new CountDownLatch(0), seen.ref(), -1), "runner", GroupRunner.PROPS);

        coordinator.tell(0);
        assertThat(entered.await(DEADLINE.toSeconds(), TimeUnit.SECONDS)).isTrue();
        // The actor is blocked in message 0; a local tell enqueues before it returns.
        for (int i = 1; i <= 10; i++) {
            coordinator.tell(i);
        }
        assertThat(depths.depth("coordinator")).isEqualTo(10);
        assertThat(depths.depth("collector")).isZero();
        runner.tell(99);
        // A message is taken from the mailbox (and uncounted) before the actor handles it.
        assertThat(seen.receiveMessage(DEADLINE)).isEqualTo(99);
        assertThat(depths.depth("runner")).isZero();

        gate.countDown();
        for (int i = 0; i <= 10; i++) {
            assertThat(seen.receiveMessage(DEADLINE)).isEqualTo(i);
        }
        assertThat(depths.depth("coordinator")).isZero();
    }

    @Test
    void messagesLeftInAStoppedActorsMailboxLeaveTheCount() throws Exception {
        MailboxDepths depths = MailboxDepths.get(kit.system());
        TestProbe<DeadLetter> deadLetters = kit.createTestProbe();
        kit.system().eventStream().tell(new EventStream.Subscribe<>(DeadLetter.class, deadLetters.ref()));
        awaitSubscribed(deadLetters);
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch gate = new CountDownLatch(1);
        TestProbe<Integer> seen = kit.createTestProbe();
        ActorRef<Integer> collector =
                kit.spawn(gated(entered, gate, seen.ref(), 0), "collector", MailboxDepths.mailbox("collector"));
        collector.tell(0);
        assertThat(entered.await(DEADLINE.toSeconds(), TimeUnit.SECONDS)).isTrue();
        for (int i = 1; i <= 5; i++) {
            collector.tell(i);
        }
        assertThat(depths.depth("collector")).isEqualTo(5);
        gate.countDown();
        assertThat(seen.receiveMessage(DEADLINE)).isZero();
        // The actor stopped after message 0: its 5 waiting messages are taken out of the count as
        // they go to dead letters.
        for (int i = 1; i <= 5; i++) {
            assertThat(nextDeadLetter(deadLetters)).isEqualTo(i);
        }
        assertThat(depths.depth("collector")).isZero();
    }

    /** The next dead letter's message, past any marker of {@link #awaitSubscribed} that came late. */
    private static Object nextDeadLetter(TestProbe<DeadLetter> deadLetters) {
        while (true) {
            Object m = deadLetters.receiveMessage(DEADLINE).message();
            if (!m.equals(-1)) {
                return m;
            }
        }
    }

    /**
     * The event stream takes a subscription asynchronously: dead letters published before it is in
     * place are not delivered to the probe. A dead letter of a stopped actor of our own, sent until
     * one arrives, shows that it is.
     */
    private void awaitSubscribed(TestProbe<DeadLetter> deadLetters) {
        ActorRef<Integer> stopped = kit.spawn(Behaviors.receiveMessage(m -> Behaviors.stopped()), "stops-at-once");
        stopped.tell(0);
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (true) {
            assertThat(System.nanoTime())
                    .as("the dead-letter subscription in place")
                    .isLessThan(deadline);
            stopped.tell(-1);
            try {
                deadLetters.fishForMessage(
                        Duration.ofMillis(200),
                        d -> d.message().equals(-1) ? FishingOutcomes.complete() : FishingOutcomes.continueAndIgnore());
                break;
            } catch (AssertionError notYet) {
                // none within 200 ms: not subscribed yet, or the actor had not stopped; send again
            }
        }
    }
}
