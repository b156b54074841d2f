package org.rollout.cluster;

import com.typesafe.config.Config;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.LongAdder;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.dispatch.Envelope;
import org.apache.pekko.dispatch.MailboxType;
import org.apache.pekko.dispatch.MessageQueue;
import org.apache.pekko.dispatch.ProducesMessageQueue;
import org.apache.pekko.dispatch.UnboundedMessageQueueSemantics;
import scala.Option;

/**
 * The unbounded mailbox of the engine's long-lived actors, which also counts the messages waiting
 * in it, per kind of actor and node ({@link MailboxDepths}), for {@code
 * rollout_actor_mailbox_messages}. Configured per kind (the cluster module's reference.conf):
 *
 * <pre>
 *   pekko.actor.rollout-mailbox.coordinator { mailbox-type = "org.rollout.cluster.CountingMailbox", actor = "coordinator" }
 * </pre>
 *
 * <p>As Pekko's default mailbox, a lock-free queue; counting costs one {@link LongAdder} update per
 * message in and one per message out, which a scrape sums. Thread-safe: many senders, one reader.
 */
public final class CountingMailbox implements MailboxType, ProducesMessageQueue<CountingMailbox.Queue> {
    private final String actor;

    /** Pekko's constructor of a mailbox type: its settings and this mailbox's configuration section. */
    public CountingMailbox(ActorSystem.Settings settings, Config config) {
        this.actor = config.getString("actor");
    }

    @Override
    public MessageQueue create(Option<ActorRef> owner, Option<ActorSystem> system) {
        LongAdder depth = system.isDefined()
                ? MailboxDepths.get(Adapter.toTyped(system.get())).counter(actor)
                : new LongAdder();
        return new Queue(depth);
    }

    /** One actor's queue; its waiting messages are also in the shared count of its kind. */
    public static final class Queue implements MessageQueue, UnboundedMessageQueueSemantics {
        private final ConcurrentLinkedQueue<Envelope> queue = new ConcurrentLinkedQueue<>();
        private final LongAdder depth;

        Queue(LongAdder depth) {
            this.depth = depth;
        }

        @Override
        public void enqueue(ActorRef receiver, Envelope handle) {
            queue.add(handle);
            depth.increment();
        }

        @Override
        public Envelope dequeue() {
            Envelope e = queue.poll();
            if (e != null) {
                depth.decrement();
            }
            return e;
        }

        @Override
        public int numberOfMessages() {
            return queue.size();
        }

        @Override
        public boolean hasMessages() {
            return !queue.isEmpty();
        }

        @Override
        public void cleanUp(ActorRef owner, MessageQueue deadLetters) {
            for (Envelope e = dequeue(); e != null; e = dequeue()) {
                deadLetters.enqueue(owner, e);
            }
        }
    }
}
