package org.rollout.cluster;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
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
 *   <li>The ledger is split over {@code ledgerKeys} {@link LWWMap}s ({@code rollout-ledger-<n>}):
 *       task ids are cut into ranges of {@code range} consecutive ids, and range {@code r} lives
 *       in key {@code r mod ledgerKeys}. A key holds {@code "t<task id>"} for each open task of its
 *       ranges and a {@code "cursor"}: every write puts the cursor it was given into each key it
 *       touches, and a reader takes each field's largest value over all keys (every field of the
 *       cursor only grows). Distributed Data ships a key's whole state to the majority on each
 *       write, so one map of every open task made each write cost as much as the whole ledger; a
 *       key holds about {@code 1 / ledgerKeys} of it, and stays far below Artery's frame size
 *       even with a hundred thousand open tasks.
 *   <li>Writes to one key are committed in groups: while a key's update is on its way to the
 *       majority, the writes that arrive for that key wait, and then go as one update, in the order
 *       they were made. Each write completes when the update that carried it is confirmed.
 * </ul>
 *
 * <p>What crosses Artery stays inside its frame: the values are a few bytes each ({@link
 *       LedgerEntrySerializer}); an update of {@code max-delta-size} changes or more (the cluster
 *       module's {@code reference.conf} sets 4; the cursor counts as one) goes to the majority as the
 *       key's gzipped full state instead of its delta, and the replicator's background delta
 *       propagation, one message for all keys, carries fewer than that many changes of each key (the
 *       rest by full-state gossip), so it is bounded by the number of keys, not by the admission
 *       rate (docs/scaling.md).
 *
 * <p>The part of one write that falls in one key is applied as one update, so a reader sees all of
 * it or none; a write that spans keys (a batch acknowledgement across ranges) is one update per
 * key, each confirmed on its own.
 *
 * <p>A write that does not reach a majority within {@code timeout} fails its stage with {@link
 * NotReplicatedException} (it is still held locally and gossiped later); a read that cannot reach
 * a majority falls back to this node's replica and logs it.
 */
public final class ReplicatedState implements DurableState {
    private static final Logger log = LoggerFactory.getLogger(ReplicatedState.class);
    private static final Key<LWWRegister<LedgerEntry>> VERSION = LWWRegisterKey.create("rollout-version");
    private static final String CURSOR = "cursor";
    private static final LWWRegister.Clock<LedgerEntry> VERSION_CLOCK =
            (current, value) -> ((VersionRecord) value).version();

    /** Consecutive task ids that share a ledger key. */
    static final int DEFAULT_RANGE = 64;

    /** Ledger keys; ranges go round them, so each holds about this fraction of the open tasks. */
    static final int DEFAULT_LEDGER_KEYS = 256;

    /**
     * Entries a grouped update carries at most (one write is never split): an update goes to the
     * majority as its delta, which must stay well inside Artery's frame.
     */
    static final int MAX_ENTRIES_PER_UPDATE = 256;

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
    private final int range;
    private final boolean grouped;
    private final List<Shard> shards;
    private final AtomicLong ledgerUpdates = new AtomicLong();
    /** Changes (entries put or removed, the cursor counts) from which an update goes as full state. */
    private final int fullStateFrom;

    /** @param timeout how long a write or read waits for a majority */
    public ReplicatedState(ActorSystem<?> system, Duration timeout) {
        this(system, timeout, DEFAULT_RANGE, DEFAULT_LEDGER_KEYS);
    }

    /**
     * @param range consecutive task ids that share a key
     * @param ledgerKeys how many keys the ledger is split over
     */
    ReplicatedState(ActorSystem<?> system, Duration timeout, int range, int ledgerKeys) {
        this(system, timeout, range, ledgerKeys, true);
    }

    /**
     * @param grouped false sends each write's update at once, even while another one to the same key
     *     is in flight: with one key, the layout before the ledger was split (a benchmark's baseline)
     */
    ReplicatedState(ActorSystem<?> system, Duration timeout, int range, int ledgerKeys, boolean grouped) {
        if (range < 1 || ledgerKeys < 1) {
            throw new IllegalArgumentException(
                    "ledger range and keys must be positive, got " + range + " and " + ledgerKeys);
        }
        this.system = system;
        DistributedData dd = DistributedData.get(system);
        this.replicator = dd.replicator();
        this.self = dd.selfUniqueAddress();
        this.timeout = timeout;
        this.range = range;
        this.grouped = grouped;
        List<Shard> s = new ArrayList<>(ledgerKeys);
        for (int i = 0; i < ledgerKeys; i++) {
            s.add(new Shard(LWWMapKey.create("rollout-ledger-" + i)));
        }
        this.shards = List.copyOf(s);
        this.fullStateFrom = Math.max(
                2, system.settings().config().getInt("pekko.cluster.distributed-data.delta-crdt.max-delta-size"));
    }

    /** Ledger updates sent to the replicator so far: fewer than the writes when writes were grouped. */
    long ledgerUpdates() {
        return ledgerUpdates.get();
    }

    /** The name of the key that holds task {@code taskId}. */
    String keyOf(long taskId) {
        return shardOf(taskId).key.id();
    }

    private Shard shardOf(long taskId) {
        return shards.get((int) Math.floorMod(Math.floorDiv(taskId, range), (long) shards.size()));
    }

    @Override
    public CompletionStage<VersionRecord> readVersion() {
        return read(VERSION, Replicator.ReadMajority::new).thenApply(r -> {
            if (r.fellBack()) {
                log.warn(
                        "reading the weight version from a majority of nodes failed ({}); using this node's replica",
                        r.failure());
            }
            return r.data() == null
                    ? VersionRecord.INITIAL
                    : (VersionRecord) r.data().getValue();
        });
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
        List<CompletableFuture<Read<LWWMap<String, LedgerEntry>>>> reads = new ArrayList<>(shards.size());
        for (Shard shard : shards) {
            reads.add(read(shard.key, Replicator.ReadMajority::new).toCompletableFuture());
        }
        return CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new)).thenApply(done -> {
            Cursor cursor = Cursor.START;
            Map<Long, OpenTask> open = new HashMap<>();
            int fellBack = 0;
            Object failure = null;
            for (CompletableFuture<Read<LWWMap<String, LedgerEntry>>> f : reads) {
                Read<LWWMap<String, LedgerEntry>> r = f.join();
                if (r.fellBack()) {
                    fellBack++;
                    failure = r.failure();
                }
                if (r.data() == null) {
                    continue;
                }
                for (Map.Entry<String, LedgerEntry> e : r.data().getEntries().entrySet()) {
                    switch (e.getValue()) {
                        case Cursor c -> cursor = newest(cursor, c);
                        case OpenTask t -> open.put(t.taskId(), t);
                        case VersionRecord v -> log.warn("ledger entry {} holds a version record; ignored", e.getKey());
                    }
                }
            }
            if (fellBack > 0) {
                log.warn(
                        "reading {} of {} ledger keys from a majority of nodes failed ({}); using this node's replicas",
                        fellBack,
                        shards.size(),
                        failure);
            }
            return new Ledger(cursor, open);
        });
    }

    /** Each field at its largest: every field of a cursor only grows from one write to the next. */
    static Cursor newest(Cursor a, Cursor b) {
        return new Cursor(
                Math.max(a.nextTaskId(), b.nextTaskId()),
                Math.max(a.trainTaken(), b.trainTaken()),
                Math.max(a.accepted(), b.accepted()),
                Math.max(a.incarnation(), b.incarnation()));
    }

    @Override
    public CompletionStage<Void> writeLedger(Collection<OpenTask> put, Collection<Long> remove, Cursor cursor) {
        Map<Shard, Change> byShard = new LinkedHashMap<>();
        for (Long id : remove) {
            byShard.computeIfAbsent(shardOf(id), s -> new Change(cursor)).remove.add(id);
        }
        for (OpenTask t : put) {
            byShard.computeIfAbsent(shardOf(t.taskId()), s -> new Change(cursor))
                    .put
                    .add(t);
        }
        if (byShard.isEmpty()) {
            if (cursor == null) {
                return CompletableFuture.completedFuture(null);
            }
            byShard.put(shardOf(cursor.nextTaskId()), new Change(cursor));
        }
        List<CompletableFuture<Void>> written = new ArrayList<>(byShard.size());
        byShard.forEach((shard, change) -> written.add(shard.submit(change)));
        if (written.size() == 1) {
            return written.get(0);
        }
        return CompletableFuture.allOf(written.toArray(CompletableFuture[]::new));
    }

    /** One write's part in one key. */
    private static final class Change {
        final List<OpenTask> put = new ArrayList<>();
        final List<Long> remove = new ArrayList<>();
        final Cursor cursor;
        final CompletableFuture<Void> done = new CompletableFuture<>();

        Change(Cursor cursor) {
            this.cursor = cursor;
        }
    }

    /** A ledger key and the writes waiting for its update in flight. */
    private final class Shard {
        final Key<LWWMap<String, LedgerEntry>> key;
        private List<Change> waiting = new ArrayList<>();
        private boolean inFlight;

        Shard(Key<LWWMap<String, LedgerEntry>> key) {
            this.key = key;
        }

        CompletableFuture<Void> submit(Change change) {
            if (!grouped) {
                send(List.of(change));
                return change.done;
            }
            boolean send;
            synchronized (this) {
                waiting.add(change);
                send = !inFlight;
                inFlight = true;
            }
            if (send) {
                sendWaiting();
            }
            return change.done;
        }

        private void sendWaiting() {
            List<Change> batch;
            synchronized (this) {
                if (waiting.isEmpty()) {
                    inFlight = false;
                    return;
                }
                int entries = 0;
                int taken = 0;
                while (taken < waiting.size() && (taken == 0 || entries < MAX_ENTRIES_PER_UPDATE)) {
                    Change c = waiting.get(taken++);
                    entries += c.put.size() + c.remove.size();
                }
                batch = List.copyOf(waiting.subList(0, taken));
                waiting = new ArrayList<>(waiting.subList(taken, waiting.size()));
            }
            send(batch).whenComplete((ok, error) -> sendWaiting());
        }

        /** One update carrying {@code batch}, in order; completes each write's stage when confirmed. */
        private CompletableFuture<Void> send(List<Change> batch) {
            ledgerUpdates.incrementAndGet();
            int puts = 0;
            int removes = 0;
            for (Change c : batch) {
                puts += c.put.size();
                removes += c.remove.size();
            }
            return update(
                            key,
                            LWWMap.<String, LedgerEntry>create(),
                            map -> {
                                LWWMap<String, LedgerEntry> m = map;
                                Cursor newest = null;
                                for (Change c : batch) {
                                    for (Long id : c.remove) {
                                        m = m.remove(self, "t" + id);
                                    }
                                    for (OpenTask t : c.put) {
                                        m = m.put(self, "t" + t.taskId(), t);
                                    }
                                    if (c.cursor != null) {
                                        newest = newest == null ? c.cursor : newest(newest, c.cursor);
                                    }
                                }
                                int changes = 0;
                                for (Change c : batch) {
                                    changes += c.put.size() + c.remove.size();
                                }
                                if (newest != null) {
                                    changes++;
                                    scala.Option<LedgerEntry> held = m.get(CURSOR);
                                    if (held.isDefined() && held.get() instanceof Cursor c) {
                                        newest = newest(c, newest);
                                    }
                                    m = m.put(self, CURSOR, newest);
                                }
                                return changes >= fullStateFrom ? withoutDelta(m) : m;
                            },
                            key.id() + ": " + puts + " task(s) written, " + removes + " removed in " + batch.size()
                                    + " write(s)")
                    .toCompletableFuture()
                    .whenComplete((ok, error) -> {
                        for (Change c : batch) {
                            if (error == null) {
                                c.done.complete(null);
                            } else {
                                c.done.completeExceptionally(unwrap(error));
                            }
                        }
                    });
        }
    }

    /**
     * {@code m} without its delta: the replicator then writes the key's full state (gzipped) to the
     * majority, and leaves the key out of its background delta propagation for this change (full-state
     * gossip carries it to the other nodes). Distributed Data checks a delta's size against
     * {@code max-delta-size} only when it merges several updates, so without this one update of many
     * changes would go into the one message that carries every key's recent changes, and could
     * outgrow Artery's frame.
     */
    @SuppressWarnings("unchecked")
    private static LWWMap<String, LedgerEntry> withoutDelta(LWWMap<String, LedgerEntry> m) {
        return (LWWMap<String, LedgerEntry>) (Object) m.resetDelta();
    }

    private static Throwable unwrap(Throwable error) {
        return error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    }

    /** What a read found, and whether it is this node's replica because a majority did not answer. */
    private record Read<T>(T data, boolean fellBack, Object failure) {}

    private <T extends ReplicatedData> CompletionStage<Read<T>> read(
            Key<T> key, Function<Duration, Replicator.ReadConsistency> majority) {
        return this.<Replicator.GetResponse<T>>ask(r -> new Replicator.Get<>(key, majority.apply(timeout), r))
                .thenCompose(reply -> switch (reply) {
                    case Replicator.GetSuccess<T> ok ->
                        CompletableFuture.completedFuture(new Read<>(ok.get(key), false, null));
                    case Replicator.NotFound<T> nf -> CompletableFuture.completedFuture(new Read<T>(null, false, null));
                    default ->
                        this.<Replicator.GetResponse<T>>ask(r -> new Replicator.Get<>(key, Replicator.readLocal(), r))
                                .thenApply(local -> new Read<>(
                                        local instanceof Replicator.GetSuccess<T> ok ? ok.get(key) : null,
                                        true,
                                        reply));
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
