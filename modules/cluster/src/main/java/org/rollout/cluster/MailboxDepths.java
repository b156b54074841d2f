package org.rollout.cluster;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.actor.typed.MailboxSelector;
import org.apache.pekko.actor.typed.Props;

/**
 * Messages waiting in the mailboxes of this node's long-lived actors, by kind ({@code coordinator},
 * {@code collector}, {@code weight_version}, {@code runner}), as {@link CountingMailbox} counts them.
 * A kind whose actor does not run on this node (a singleton elsewhere) reads 0. Thread-safe.
 */
public final class MailboxDepths implements Extension {
    /** The kinds of actor whose mailboxes are counted, as the metric's {@code actor} label spells them. */
    public static final List<String> KINDS = List.of("coordinator", "collector", "weight_version", "runner");

    /** The mailbox configuration of each kind: {@code pekko.actor.rollout-mailbox.<kind>}. */
    public static String configPath(String kind) {
        return "pekko.actor.rollout-mailbox." + kind;
    }

    /** Props that give an actor of {@code kind} its counting mailbox. */
    public static Props mailbox(String kind) {
        return MailboxSelector.fromConfig(configPath(kind));
    }

    private static final Id ID = new Id();

    /** Pekko's handle of this extension. */
    public static final class Id extends ExtensionId<MailboxDepths> {
        @Override
        public MailboxDepths createExtension(ActorSystem<?> system) {
            return new MailboxDepths();
        }
    }

    private final ConcurrentHashMap<String, LongAdder> counters = new ConcurrentHashMap<>();

    private MailboxDepths() {
        KINDS.forEach(this::counter);
    }

    public static MailboxDepths get(ActorSystem<?> system) {
        return ID.apply(system);
    }

    /** The shared count of {@code kind}'s mailboxes on this node. */
    LongAdder counter(String kind) {
        return counters.computeIfAbsent(kind, k -> new LongAdder());
    }

    /** Messages waiting in {@code kind}'s mailboxes now. */
    public long depth(String kind) {
        LongAdder c = counters.get(kind);
        return c == null ? 0 : c.sum();
    }

    /** Every kind's depth, by kind. */
    public Map<String, Long> depths() {
        Map<String, Long> out = new TreeMap<>();
        counters.forEach((k, v) -> out.put(k, v.sum()));
        return out;
    }
}
