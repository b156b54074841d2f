package org.rollout.cluster;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.ddata.Key;
import org.apache.pekko.cluster.ddata.LWWMap;
import org.apache.pekko.cluster.ddata.LWWMapKey;
import org.apache.pekko.cluster.ddata.LWWRegister;
import org.apache.pekko.cluster.ddata.LWWRegisterKey;
import org.apache.pekko.cluster.ddata.ReplicatedData;
import org.apache.pekko.cluster.ddata.SelfUniqueAddress;
import org.apache.pekko.cluster.ddata.typed.javadsl.DistributedData;
import org.apache.pekko.cluster.ddata.typed.javadsl.Replicator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link DurableState} replicated with Pekko Distributed Data: a write completes once a majority
 * of the cluster's nodes hold it, and a read asks a majority, so what one coordinator wrote is
 * what its successor reads, wherever the singleton moves.
 *
 * <ul>
 *   <li>The version is an {@link LWWRegister} whose clock is the version itself: the newest
 *       version always wins a merge, so it can never go backwards, whatever the order in which
 *       replicas meet.
 *   <li>The ledger is one {@link LWWMap}: {@code "cursor"} and {@code "t<task id>"} for each open
 *       task; a write of several entries and the cursor is one update, so a reader sees all of it
 *       or none. Entries are small (ids and counters; prompts are re-read from the source by
 *       index), so a ledger of thousands of open tasks stays far below Artery's frame size.
 * </ul>
 *
 * <p>A write that does not reach a majority within {@code timeout} fails its stage with {@link
 * NotReplicatedException} (it is still held locally and gossiped later); a read that cannot reach
 * a majority falls back to this node's replica and logs it.
 */
public final class ReplicatedState implements DurableState {
    private static final Logger log = LoggerFactory.getLogger(ReplicatedState.class);
    private static final Key<LWWRegister<LedgerEntry>> VERSION = LWWRegisterKey.create("rollout-version");
    private static final Key<LWWMap<String, LedgerEntry>> LEDGER = LWWMapKey.create("rollout-ledger");
    private static final String CURSOR = "cursor";
    private static final LWWRegister.Clock<LedgerEntry> VERSION_CLOCK =
            (current, value) -> ((VersionRecord) value).version();

    /** A write that reached this node but not a majority in time. */
    public static final class NotReplicatedException extends RuntimeException {
        NotReplicatedException(String what, Duration timeout) {
            super(what + " did not reach a majority of nodes within " + timeout);
        }
    }

    private final ActorSystem<?> system;
    private final ActorRef<Replicator.Command> replicator;
    private final SelfUniqueAddress self;
    private final Duration timeout;

    /** @param timeout how long a write or read waits for a majority */
    public ReplicatedState(ActorSystem<?> system, Duration timeout) {
        this.system = system;
        DistributedData dd = DistributedData.get(system);
        this.replicator = dd.replicator();
        this.self = dd.selfUniqueAddress();
        this.timeout = timeout;
    }

    @Override
    public CompletionStage<VersionRecord> readVersion() {
        return read(VERSION, "the weight version")
                .thenApply(reg -> reg == null ? VersionRecord.INITIAL : (VersionRecord) reg.getValue());
    }

    @Override
    public CompletionStage<Void> writeVersion(VersionRecord record) {
        return update(
                VERSION,
                LWWRegister.create(self, (LedgerEntry) VersionRecord.INITIAL, VERSION_CLOCK),
                reg -> ((VersionRecord) reg.getValue()).version() > record.version()
                        ? reg
                        : reg.withValue(self, record, VERSION_CLOCK),
                "version " + record.version());
    }

    @Override
    public CompletionStage<Ledger> readLedger() {
        return read(LEDGER, "the task ledger").thenApply(map -> {
            if (map == null) {
                return Ledger.EMPTY;
            }
            Cursor cursor = Cursor.START;
            Map<Long, OpenTask> open = new HashMap<>();
            for (Map.Entry<String, LedgerEntry> e : map.getEntries().entrySet()) {
                switch (e.getValue()) {
                    case Cursor c -> cursor = c;
                    case OpenTask t -> open.put(t.taskId(), t);
                    case VersionRecord v -> log.warn("ledger entry {} holds a version record; ignored", e.getKey());
                }
            }
            return new Ledger(cursor, open);
        });
    }

    @Override
    public CompletionStage<Void> writeLedger(Collection<OpenTask> put, Collection<Long> remove, Cursor cursor) {
        return update(
                LEDGER,
                LWWMap.<String, LedgerEntry>create(),
                map -> {
                    LWWMap<String, LedgerEntry> m = map;
                    for (Long id : remove) {
                        m = m.remove(self, "t" + id);
                    }
                    for (OpenTask t : put) {
                        m = m.put(self, "t" + t.taskId(), t);
                    }
                    return cursor == null ? m : m.put(self, CURSOR, cursor);
                },
                put.size() + " task(s) written, " + remove.size() + " removed");
    }

    private <T extends ReplicatedData> CompletionStage<T> read(Key<T> key, String what) {
        return this.<Replicator.GetResponse<T>>ask(
                        r -> new Replicator.Get<>(key, new Replicator.ReadMajority(timeout), r))
                .thenCompose(reply -> switch (reply) {
                    case Replicator.GetSuccess<T> ok -> CompletableFuture.completedFuture(ok.get(key));
                    case Replicator.NotFound<T> nf -> CompletableFuture.completedFuture(null);
                    default -> {
                        log.warn(
                                "reading {} from a majority of nodes failed ({}); using this node's replica",
                                what,
                                reply);
                        yield this.<Replicator.GetResponse<T>>ask(
                                        r -> new Replicator.Get<>(key, Replicator.readLocal(), r))
                                .thenApply(local -> local instanceof Replicator.GetSuccess<T> ok ? ok.get(key) : null);
                    }
                });
    }

    private <T extends ReplicatedData> CompletionStage<Void> update(
            Key<T> key, T initial, Function<T, T> modify, String what) {
        return this.<Replicator.UpdateResponse<T>>ask(
                        r -> new Replicator.Update<>(key, initial, new Replicator.WriteMajority(timeout), r, modify))
                .thenApply(reply -> {
                    if (reply instanceof Replicator.UpdateSuccess<T>) {
                        return null;
                    }
                    if (reply instanceof Replicator.UpdateTimeout<T>) {
                        throw new NotReplicatedException(what, timeout);
                    }
                    throw new IllegalStateException(what + ": replicated update failed: " + reply);
                });
    }

    private <R> CompletionStage<R> ask(Function<ActorRef<R>, Replicator.Command> message) {
        return AskPattern.ask(replicator, message::apply, timeout.plusSeconds(5), system.scheduler());
    }
}
