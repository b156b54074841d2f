package org.rollout.cluster;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * What the engine's singletons keep so that a successor can continue where they stopped: the
 * weight version with the path it was loaded from, and the coordinator's ledger of open tasks with
 * its cursor. In a cluster it is replicated to a majority of nodes before a write completes
 * ({@link ReplicatedState}); in one JVM it lives in memory ({@link #inMemory()}), because there is
 * no successor to hand it to.
 *
 * <p>What it is for:
 *
 * <ul>
 *   <li><b>The version never goes backwards.</b> The weight version writes a new version after the
 *       servers loaded it and before it tells anyone; a successor starts from the newest version
 *       written. A replicated version is a register whose newest version always wins a merge.
 *   <li><b>No task is lost, none is delivered twice.</b> The coordinator writes a task before it
 *       dispatches it and removes it only when it is rejected or when the trainer acknowledged the
 *       batch that carried it. A successor re-creates the ledger from what is written and from what
 *       the surviving runners still hold.
 * </ul>
 */
public interface DurableState {

    /** The newest version written, or {@link VersionRecord#INITIAL} when none was. */
    CompletionStage<VersionRecord> readVersion();

    /** Writes {@code record}; a lower version than the one held is ignored (never goes backwards). */
    CompletionStage<Void> writeVersion(VersionRecord record);

    /** The ledger as written, or {@link Ledger#EMPTY} on a fresh start. */
    CompletionStage<Ledger> readLedger();

    /**
     * Puts {@code put}, removes {@code remove}, and sets the cursor, as one change.
     *
     * @param cursor the new cursor, or null to keep it
     */
    CompletionStage<Void> writeLedger(Collection<OpenTask> put, Collection<Long> remove, Cursor cursor);

    /** A weight version and the weights it was loaded from ({@code path} empty for the initial one). */
    record VersionRecord(int version, String path) implements LedgerEntry {
        public static final VersionRecord INITIAL = new VersionRecord(0, "");
    }

    /**
     * An admitted task not yet done with: running, or accepted and not yet acknowledged by a trainer.
     *
     * @param sourceIndex for training, the index of its prompt in the prompt source; for
     *     evaluation, the index of its item in the eval dataset
     * @param dispatchVersion the version it was admitted at (for evaluation: the pass's version)
     * @param accepted true once the collector accepted it for training
     * @param possiblyDelivered true once a batch that carried it is being handed out (written before
     *     the batch leaves the collector): a trainer may hold it and still acknowledge it after a
     *     fail-over, so its outcome at a successor, re-sent or of a re-run, is held until that
     *     acknowledgement has had its chance (see {@link RolloutCoordinator})
     */
    record OpenTask(
            long taskId,
            int attempt,
            boolean isEval,
            long sourceIndex,
            int dispatchVersion,
            boolean accepted,
            boolean possiblyDelivered)
            implements LedgerEntry {}

    /**
     * The coordinator's position.
     *
     * @param nextTaskId the next task id to hand out
     * @param trainTaken training prompts taken from the source so far
     * @param accepted training groups accepted so far (the staleness budget's {@code accepted})
     * @param incarnation how many coordinators started before this one; batch ids embed it
     */
    record Cursor(long nextTaskId, long trainTaken, long accepted, long incarnation) implements LedgerEntry {
        public static final Cursor START = new Cursor(0, 0, 0, 0);
    }

    /**
     * One ledger key's share of the ledger, as {@link ReplicatedState} replicates it: the open tasks
     * of the key's task ranges, by ascending id, and the newest cursor written to the key. The whole
     * part is one value, replaced by each write to the key (one timestamp, not one per task), so a
     * write costs a few bytes per open task of its key and a merge costs nothing per task.
     *
     * @param tasks ascending by task id, ids distinct
     */
    record LedgerPart(Cursor cursor, List<OpenTask> tasks) implements LedgerEntry {
        public static final LedgerPart EMPTY = new LedgerPart(Cursor.START, List.of());

        public LedgerPart {
            Objects.requireNonNull(cursor, "cursor");
            tasks = List.copyOf(tasks);
            for (int i = 1; i < tasks.size(); i++) {
                if (tasks.get(i - 1).taskId() >= tasks.get(i).taskId()) {
                    throw new IllegalArgumentException("ledger part: task ids must ascend, got "
                            + tasks.get(i - 1).taskId() + " before "
                            + tasks.get(i).taskId());
                }
            }
        }
    }

    /**
     * What is replicated: one of the records above. Serialized by {@link LedgerEntrySerializer}
     * ({@code rollout-ledger}, bound to this interface in the module's {@code reference.conf}): a few
     * varints an entry. The Jackson annotations are kept so that the entries can still be bound to
     * {@code jackson-cbor} (how they were written before; {@code bench singletons
     * --ledger-serializer cbor} measures against it); a cluster must not mix the two bindings.
     */
    @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "type")
    @JsonSubTypes({
        @JsonSubTypes.Type(value = VersionRecord.class, name = "version"),
        @JsonSubTypes.Type(value = OpenTask.class, name = "task"),
        @JsonSubTypes.Type(value = Cursor.class, name = "cursor"),
        @JsonSubTypes.Type(value = LedgerPart.class, name = "part")
    })
    sealed interface LedgerEntry permits VersionRecord, OpenTask, Cursor, LedgerPart {}

    /** The ledger: the cursor and the open tasks by id. */
    record Ledger(Cursor cursor, Map<Long, OpenTask> open) {
        public static final Ledger EMPTY = new Ledger(Cursor.START, Map.of());

        public Ledger {
            open = Map.copyOf(open);
        }

        /** True when nothing was ever written (a fresh start). */
        public boolean isFresh() {
            return cursor.equals(Cursor.START) && open.isEmpty();
        }
    }

    /**
     * The weight version of {@code versions} and the ledger of {@code ledger}: a trainer rank's
     * coordinator keeps a ledger of its own and reads the run's one version.
     */
    static DurableState ledgerApart(DurableState versions, DurableState ledger) {
        return new DurableState() {
            @Override
            public CompletionStage<VersionRecord> readVersion() {
                return versions.readVersion();
            }

            @Override
            public CompletionStage<Void> writeVersion(VersionRecord record) {
                return versions.writeVersion(record);
            }

            @Override
            public CompletionStage<Ledger> readLedger() {
                return ledger.readLedger();
            }

            @Override
            public CompletionStage<Void> writeLedger(Collection<OpenTask> put, Collection<Long> remove, Cursor cursor) {
                return ledger.writeLedger(put, remove, cursor);
            }
        };
    }

    /** State kept in this JVM only: for an engine in one process, which has no successor. */
    static DurableState inMemory() {
        return new DurableState() {
            private final Map<Long, OpenTask> open = new HashMap<>();
            private Cursor cursor = Cursor.START;
            private VersionRecord version = VersionRecord.INITIAL;

            @Override
            public synchronized CompletionStage<VersionRecord> readVersion() {
                return CompletableFuture.completedFuture(version);
            }

            @Override
            public synchronized CompletionStage<Void> writeVersion(VersionRecord record) {
                if (record.version() >= version.version()) {
                    version = record;
                }
                return CompletableFuture.completedFuture(null);
            }

            @Override
            public synchronized CompletionStage<Ledger> readLedger() {
                return CompletableFuture.completedFuture(new Ledger(cursor, open));
            }

            @Override
            public synchronized CompletionStage<Void> writeLedger(
                    Collection<OpenTask> put, Collection<Long> remove, Cursor newCursor) {
                remove.forEach(open::remove);
                put.forEach(t -> open.put(t.taskId(), t));
                if (newCursor != null) {
                    cursor = newCursor;
                }
                return CompletableFuture.completedFuture(null);
            }
        };
    }
}
