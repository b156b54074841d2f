package org.rollout.cluster;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * An actor's messages to its peers, sent in the order given, where a run of messages of one kind
 * to one recipient leaves as a single message: one for all of that kind the actor produced while it
 * worked through the messages in its own mailbox, not one each.
 *
 * <p>The first message of a run asks for a {@link #flush} ({@code wake}: the actor sends itself a
 * message, which comes after what its mailbox holds now). A quiet actor sends at once, a busy one
 * after its backlog. Any other message, or one to another recipient, sends the run first: nothing
 * overtakes what was told before it.
 *
 * @param <R> the recipients' reference
 * @param <M> the messages
 */
final class Outbox<R, M> {

    private final Runnable wake;
    private final BiConsumer<R, M> send;
    private final Predicate<M> joins;
    private final Function<List<M>, M> join;
    private final ArrayList<M> run = new ArrayList<>();
    private R to;

    /**
     * @param wake asks for a {@link #flush} after the messages the actor holds now
     * @param send sends a message to a recipient
     * @param joins which messages may go together
     * @param join makes one message of a run of two or more, in order
     */
    Outbox(Runnable wake, BiConsumer<R, M> send, Predicate<M> joins, Function<List<M>, M> join) {
        this.wake = wake;
        this.send = send;
        this.joins = joins;
        this.join = join;
    }

    /** Tells {@code recipient} {@code message}: at once, or with the run it joins. */
    void tell(R recipient, M message) {
        Objects.requireNonNull(recipient, "recipient");
        boolean joining = joins.test(message);
        if (!run.isEmpty() && (!joining || !to.equals(recipient))) {
            flush();
        }
        if (!joining) {
            send.accept(recipient, message);
            return;
        }
        if (run.isEmpty()) {
            wake.run();
        }
        to = recipient;
        run.add(message);
    }

    /** Sends the run, if there is one. */
    void flush() {
        if (run.isEmpty()) {
            return;
        }
        M message = run.size() == 1 ? run.getFirst() : join.apply(List.copyOf(run));
        run.clear();
        send.accept(to, message);
    }

    /** Messages held in the run. */
    int pending() {
        return run.size();
    }
}
