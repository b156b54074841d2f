package org.rollout.cluster;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.ddata.Key;
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
 *   <li>The ledger is split over {@code ledgerKeys} keys ({@code rollout-ledger-part-<n>}): task
 *       ids are cut into ranges of {@code range} consecutive ids, and range {@code r} lives in key
 *       {@code r mod ledgerKeys}. Each key is one {@link LWWRegister} holding a {@link LedgerPart}:
 *       the open tasks of its ranges and the newest cursor written to it (a reader takes each
 *       field's largest value over all keys; every field of the cursor only grows). A write
 *       replaces the key's part with the part changed by it, built from this node's replica.
 *   <li>Distributed Data ships a key's whole value to the majority on each write. As a map of one
 *       register per task (the layout before) that cost a version vector, a dot and the writer's
 *       address per task to serialize, and a merge per task on each receiving node, and at 160,000
 *       open tasks the replicators could confirm only a few hundred admissions a second. As one
 *       value it costs the compact encoding of the key's tasks ({@link LedgerEntrySerializer}, a few
 *       bytes each) and a merge is one comparison of timestamps. A register has no deltas, so
 *       nothing of the ledger goes into the replicator's background delta propagation (one Artery
 *       message for all keys): full-state gossip carries it to the nodes a write did not reach.
 *   <li>The register's timestamp only grows from one write of a key to the next, and a coordinator
 *       of a later incarnation writes above every earlier one ({@code incarnation << 40}): a late
 *       write of a predecessor that was replaced (its update still on its way, or gossiped from a
 *       node it reached alone) never overwrites what its successor wrote. The successor builds its
 *       writes on the parts it read from a majority (a majority read repairs this node's replica).
 *   <li>Writes to one key are committed in groups: while a key's update is on its way to the
 *       majority, the writes that arrive for that key wait, and then go as one update, in the order
 *       they were made. Each write completes when the update that carried it is confirmed.
 * </ul>
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
    private static final LWWRegister.Clock<LedgerEntry> VERSION_CLOCK =
            (current, value) -> ((VersionRecord) value).version();

    /** Consecutive task ids that share a ledger key. */
    static final int DEFAULT_RANGE = 64;

    /** Ledger keys; ranges go round them, so each holds about this fraction of the open tasks. */
    static final int DEFAULT_LEDGER_KEYS = 256;

    /**
     * A coordinator's incarnation, shifted by this, is the least timestamp of its writes: above any
     * timestamp a predecessor reached (2^40 writes of one key).
     */
    static final int INCARNATION_SHIFT = 40;

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
    /** The largest incarnation in a cursor read or written here: this writer's floor for timestamps. */
    private volatile long incarnation;

    private final LWWRegister.Clock<LedgerEntry> partClock = partClock(() -> incarnation);

    /** @param timeout how long a write or read waits for a majority */
    public ReplicatedState(ActorSystem<?> system, Duration timeout) {
        this(system, timeout, DEFAULT_RANGE, Integer.getInteger("rollout.ledger.keys", DEFAULT_LEDGER_KEYS));
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
        this(system, timeout, range, ledgerKeys, grouped, "rollout-ledger-part-");
    }

    private ReplicatedState(
            ActorSystem<?> system, Duration timeout, int range, int ledgerKeys, boolean grouped, String keyPrefix) {
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
            s.add(new Shard(LWWRegisterKey.create(keyPrefix + i)));
        }
        this.shards = List.copyOf(s);
    }

    /**
     * The ledger of trainer rank {@code rank}'s coordinator ({@link RankShare}), under keys of its
     * own ({@code rollout-ledger-rank<r>-part-<n>}; rank 0 keeps {@code rollout-ledger-part-<n>}),
     * laid out as this one's. Its version is this one's: the run has one weight version.
     */
    ReplicatedState forRank(int rank) {
        if (rank == 0) {
            return this;
        }
        return new ReplicatedState(
                system, timeout, range, shards.size(), grouped, "rollout-ledger-rank" + rank + "-part-");
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
        List<CompletableFuture<Read<LWWRegister<LedgerEntry>>>> reads = new ArrayList<>(shards.size());
        for (Shard shard : shards) {
            reads.add(read(shard.key, Replicator.ReadMajority::new).toCompletableFuture());
        }
        return CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new)).thenApply(done -> {
            Cursor cursor = Cursor.START;
            Map<Long, OpenTask> open = new HashMap<>();
            int fellBack = 0;
            Object failure = null;
            for (int i = 0; i < reads.size(); i++) {
                Read<LWWRegister<LedgerEntry>> r = reads.get(i).join();
                if (r.fellBack()) {
                    fellBack++;
                    failure = r.failure();
                }
                if (r.data() == null) {
                    continue;
                }
                if (!(r.data().getValue() instanceof LedgerPart part)) {
                    log.warn(
                            "ledger key {} holds {}, not a ledger part; ignored",
                            shards.get(i).key.id(),
                            r.data().getValue());
                    continue;
                }
                cursor = newest(cursor, part.cursor());
                for (OpenTask t : part.tasks()) {
                    open.put(t.taskId(), t);
                }
            }
            raiseIncarnation(cursor);
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

    private void raiseIncarnation(Cursor cursor) {
        if (cursor != null && cursor.incarnation() > incarnation) {
            synchronized (this) {
                incarnation = Math.max(incarnation, cursor.incarnation());
            }
        }
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
        raiseIncarnation(cursor);
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
    static final class Change {
        final List<OpenTask> put = new ArrayList<>();
        final List<Long> remove = new ArrayList<>();
        final Cursor cursor;
        final CompletableFuture<Void> done = new CompletableFuture<>();

        Change(Cursor cursor, List<OpenTask> put, List<Long> remove) {
            this(cursor);
            this.put.addAll(put);
            this.remove.addAll(remove);
        }

        Change(Cursor cursor) {
            this.cursor = cursor;
        }
    }

    /** A ledger key and the writes waiting for its update in flight. */
    private final class Shard {
        final Key<LWWRegister<LedgerEntry>> key;
        private List<Change> waiting = new ArrayList<>();
        private boolean inFlight;

        Shard(Key<LWWRegister<LedgerEntry>> key) {
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
                batch = waiting;
                waiting = new ArrayList<>();
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
                            LWWRegister.create(self, (LedgerEntry) LedgerPart.EMPTY, partClock),
                            reg -> reg.withValue(self, applied((LedgerPart) reg.getValue(), batch), partClock),
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
     * The timestamps of a writer's ledger parts: one above the timestamp held, and at least its
     * incarnation (the largest of the part's cursor and {@code writerIncarnation}) shifted by {@link
     * #INCARNATION_SHIFT}, so that a later incarnation's write wins over every earlier one's.
     */
    static LWWRegister.Clock<LedgerEntry> partClock(LongSupplier writerIncarnation) {
        return (current, value) -> Math.max(
                current + 1,
                Math.max(((LedgerPart) value).cursor().incarnation(), writerIncarnation.getAsLong())
                        << INCARNATION_SHIFT);
    }

    /** {@code held} with the changes of {@code batch}, in their order; the cursor at its newest. */
    static LedgerPart applied(LedgerPart held, List<Change> batch) {
        Map<Long, OpenTask> changed = new HashMap<>(); // a removed task maps to null
        Cursor cursor = held.cursor();
        boolean put = false;
        for (Change c : batch) {
            for (Long id : c.remove) {
                changed.put(id, null);
            }
            for (OpenTask t : c.put) {
                changed.put(t.taskId(), t);
                put = true;
            }
            if (c.cursor != null) {
                cursor = newest(cursor, c.cursor);
            }
        }
        List<OpenTask> tasks = new ArrayList<>(held.tasks().size() + changed.size());
        for (OpenTask t : held.tasks()) {
            if (!changed.containsKey(t.taskId())) {
                tasks.add(t);
            }
        }
        if (put) {
            for (OpenTask t : changed.values()) {
                if (t != null) {
                    tasks.add(t);
                }
            }
            tasks.sort(BY_ID);
        }
        return new LedgerPart(cursor, tasks);
    }

    private static final Comparator<OpenTask> BY_ID = Comparator.comparingLong(OpenTask::taskId);

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
