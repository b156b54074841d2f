package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * An actor's outbox: runs of one kind to one recipient leave as one message, and nothing overtakes
 * what was told before it. Messages here are strings; those starting with "+" may go together.
 */
class OutboxTest {

    private final List<String> sent = new ArrayList<>();
    private int wakes;
    private final Outbox<String, String> outbox = new Outbox<>(
            () -> wakes++, (to, m) -> sent.add(to + ":" + m), m -> m.startsWith("+"), run -> String.join("", run));

    @Test
    void aRunLeavesAsOneMessageAtTheFlushWithOneWake() {
        outbox.tell("c", "+1");
        outbox.tell("c", "+2");
        outbox.tell("c", "+3");
        assertThat(sent).isEmpty();
        assertThat(outbox.pending()).isEqualTo(3);

        outbox.flush();

        assertThat(sent).containsExactly("c:+1+2+3");
        assertThat(wakes).isEqualTo(1);
        assertThat(outbox.pending()).isZero();
    }

    @Test
    void aRunOfOneLeavesAsItself() {
        outbox.tell("c", "+1");
        outbox.flush();
        assertThat(sent).containsExactly("c:+1");
    }

    @Test
    void aMessageThatDoesNotJoinSendsTheRunBeforeItAndLeavesAtOnce() {
        outbox.tell("c", "+1");
        outbox.tell("c", "+2");
        outbox.tell("c", "x");
        outbox.tell("c", "y");
        assertThat(sent).containsExactly("c:+1+2", "c:x", "c:y");
        outbox.tell("c", "+3");
        outbox.flush();
        assertThat(sent).containsExactly("c:+1+2", "c:x", "c:y", "c:+3");
        assertThat(wakes).as("a wake per run").isEqualTo(2);
    }

    @Test
    void anotherRecipientSendsTheRunToTheRecipientItWasToldFor() {
        outbox.tell("old", "+1");
        outbox.tell("old", "+2");
        outbox.tell("new", "+3");
        outbox.tell("new", "x");
        assertThat(sent).containsExactly("old:+1+2", "new:+3", "new:x");
    }

    @Test
    void aFlushWithNothingHeldSendsNothing() {
        outbox.flush();
        outbox.tell("c", "x");
        outbox.flush();
        assertThat(sent).containsExactly("c:x");
        assertThat(wakes).isZero();
    }

    @Test
    void noRecipientIsRefusedAndNothingIsHeld() {
        assertThatThrownBy(() -> outbox.tell(null, "+1"))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("recipient");
        assertThat(outbox.pending()).isZero();
    }

    @Test
    void everyMessageArrivesOnceAtItsRecipientInTheOrderToldWhateverTheFlushes() {
        SplittableRandom random = new SplittableRandom(20261206);
        List<String> told = new ArrayList<>();
        List<String> arrived = new ArrayList<>();
        Outbox<String, List<String>> o = new Outbox<>(
                () -> {},
                (to, m) -> m.forEach(one -> arrived.add(to + ":" + one)),
                m -> m.getFirst().startsWith("+"),
                run -> run.stream().flatMap(List::stream).toList());
        String to = "a";
        for (int i = 0; i < 5_000; i++) {
            switch (random.nextInt(12)) {
                case 0 -> o.flush();
                case 1 -> to = "r" + random.nextInt(3);
                default -> {}
            }
            String m = (random.nextInt(4) == 0 ? "x" : "+") + i;
            o.tell(to, List.of(m));
            told.add(to + ":" + m);
        }
        o.flush();
        assertThat(arrived).isEqualTo(told);
    }
}
