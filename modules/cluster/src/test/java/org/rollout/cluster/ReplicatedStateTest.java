package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.ddata.LWWRegister;
import org.apache.pekko.cluster.ddata.LWWRegisterKey;
import org.apache.pekko.cluster.ddata.typed.javadsl.DistributedData;
import org.apache.pekko.cluster.ddata.typed.javadsl.Replicator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.cluster.DurableState.Cursor;
import org.rollout.cluster.DurableState.Ledger;
import org.rollout.cluster.DurableState.LedgerEntry;
import org.rollout.cluster.DurableState.LedgerPart;
import org.rollout.cluster.DurableState.OpenTask;

/**
 * The replicated ledger across two nodes (two actor systems over Artery on 127.0.0.1): what one
 * node writes, in many small writes sent without waiting, is what the other reads; the ledger is
 * spread over its keys by task range, each key holding only its own ranges; writes to one key that
 * arrive while its update is in flight go together.
 */
class ReplicatedStateTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    private final TwoNodes nodes = new TwoNodes();

    @AfterEach
    void tearDown() {
        nodes.close();
    }

    private static OpenTask task(long id, boolean accepted) {
        return new OpenTask(id, 0, false, id, 1, accepted, false);
    }

    @Test
    void whatOneNodeWritesInManyConcurrentWritesIsWhatTheOtherReadsAndEachKeyHoldsOnlyItsRanges() throws Exception {
        int range = 4;
        int keys = 5;
        ReplicatedState onA = new ReplicatedState(nodes.a.system(), TIMEOUT, range, keys);
        ReplicatedState onB = new ReplicatedState(nodes.b.system(), TIMEOUT, range, keys);
        DurableState expected = DurableState.inMemory();

        // The coordinator's pattern: admit tasks in order, accept some, reject some, acknowledge
        // accepted ones in batches; the cursor grows with each write.
        Random random = new Random(20261204);
        List<CompletableFuture<Void>> writes = new ArrayList<>();
        Set<Long> open = new HashSet<>();
        Set<Long> accepted = new HashSet<>();
        long next = 0;
        long taken = 0;
        long acceptedCount = 0;
        for (int step = 0; step < 300; step++) {
            List<OpenTask> put = new ArrayList<>();
            List<Long> remove = new ArrayList<>();
            switch (random.nextInt(3)) {
                case 0 -> {
                    int n = 1 + random.nextInt(6);
                    for (int i = 0; i < n; i++) {
                        put.add(task(next, false));
                        open.add(next++);
                        taken++;
                    }
                }
                case 1 -> {
                    for (Long id : List.copyOf(open)) {
                        if (!accepted.contains(id) && random.nextInt(4) == 0) {
                            if (random.nextInt(5) == 0) {
                                remove.add(id);
                                open.remove(id);
                            } else {
                                put.add(task(id, true));
                                accepted.add(id);
                                acceptedCount++;
                            }
                        }
                    }
                }
                default -> {
                    List<Long> batch = accepted.stream().sorted().limit(8).toList();
                    remove.addAll(batch);
                    batch.forEach(id -> {
                        accepted.remove(id);
                        open.remove(id);
                    });
                }
            }
            Cursor cursor = new Cursor(next, taken, acceptedCount, 3);
            expected.writeLedger(put, remove, cursor);
            writes.add(onA.writeLedger(put, remove, cursor).toCompletableFuture());
        }
        CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);

        Ledger want = expected.readLedger().toCompletableFuture().get();
        Ledger read = onB.readLedger().toCompletableFuture().get(60, TimeUnit.SECONDS);
        assertThat(read.cursor()).isEqualTo(new Cursor(next, taken, acceptedCount, 3));
        assertThat(read.open()).isEqualTo(want.open());
        assertThat(want.open()).isNotEmpty();
        assertThat(onA.ledgerUpdates())
                .as("writes to a key while its update was in flight went together")
                .isLessThan(writes.size());

        // Each key holds the tasks of its own ranges only, and every key has a cursor.
        Set<Long> seen = new HashSet<>();
        for (int k = 0; k < keys; k++) {
            String key = "rollout-ledger-part-" + k;
            LedgerPart part = partOn(nodes.b, key);
            assertThat(part.cursor()).as("cursor of %s", key).isNotEqualTo(Cursor.START);
            for (OpenTask t : part.tasks()) {
                assertThat(onA.keyOf(t.taskId()))
                        .as("key of task %d", t.taskId())
                        .isEqualTo(key);
                assertThat(Math.floorMod(t.taskId() / range, keys)).isEqualTo(k);
                seen.add(t.taskId());
            }
        }
        assertThat(seen).isEqualTo(want.open().keySet());
    }

    @Test
    void writesThatWaitForTheirKeyGoTogetherAndEveryWriteIsConfirmed() throws Exception {
        ReplicatedState onA = new ReplicatedState(nodes.a.system(), TIMEOUT, 1_000_000, 1);
        // Every node of a cluster runs its replicator; it starts with the node's first use.
        ReplicatedState onB = new ReplicatedState(nodes.b.system(), TIMEOUT, 1_000_000, 1);
        List<CompletableFuture<Void>> writes = new ArrayList<>();
        for (long id = 0; id < 1000; id++) {
            writes.add(onA.writeLedger(List.of(task(id, false)), List.of(), new Cursor(id + 1, id + 1, 0, 1))
                    .toCompletableFuture());
        }
        CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        assertThat(onA.ledgerUpdates())
                .as("1000 one-task writes to one key, made without waiting")
                .isBetween(1L, 999L);
        Ledger read = onB.readLedger().toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertThat(read.open()).hasSize(1000);
        assertThat(read.cursor()).isEqualTo(new Cursor(1000, 1000, 0, 1));
    }

    @Test
    void aCursorNeverGoesBackInAKeyAndTheReadCursorIsTheLargestOfEachField() throws Exception {
        ReplicatedState onA = new ReplicatedState(nodes.a.system(), TIMEOUT, 4, 3);
        ReplicatedState onB = new ReplicatedState(nodes.b.system(), TIMEOUT, 4, 3);
        onA.writeLedger(List.of(task(0, false)), List.of(), new Cursor(10, 7, 2, 1))
                .toCompletableFuture()
                .get(30, TimeUnit.SECONDS);
        // An older cursor into the same key (task 1 is in task 0's range) leaves the newer one.
        onA.writeLedger(List.of(task(1, false)), List.of(), new Cursor(5, 3, 1, 1))
                .toCompletableFuture()
                .get(30, TimeUnit.SECONDS);
        // Into another key, a cursor newer in some fields only.
        onA.writeLedger(List.of(task(4, false)), List.of(), new Cursor(9, 8, 1, 2))
                .toCompletableFuture()
                .get(30, TimeUnit.SECONDS);
        assertThat(partOn(nodes.b, onA.keyOf(0)).cursor()).isEqualTo(new Cursor(10, 7, 2, 1));
        Ledger read = onB.readLedger().toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertThat(read.cursor()).isEqualTo(new Cursor(10, 8, 2, 2));
        assertThat(read.open().keySet()).containsExactlyInAnyOrder(0L, 1L, 4L);

        // A cursor-only write lands in the key of the next task id and is read back.
        onA.writeLedger(List.of(), List.of(), new Cursor(12, 9, 3, 2))
                .toCompletableFuture()
                .get(30, TimeUnit.SECONDS);
        assertThat(onB.readLedger()
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS)
                        .cursor())
                .isEqualTo(new Cursor(12, 9, 3, 2));
    }

    @SuppressWarnings("unchecked")
    private static LedgerPart partOn(org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit kit, String key)
            throws Exception {
        var k = LWWRegisterKey.<LedgerEntry>create(key);
        // A write confirmed by a majority may reach the reading node by gossip a moment later
        // (when the writer counted only itself, before it saw the reader's replicator): read
        // locally until the key is there, within a deadline.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        Replicator.GetResponse<LWWRegister<LedgerEntry>> reply;
        do {
            reply = AskPattern.<Replicator.Command, Replicator.GetResponse<LWWRegister<LedgerEntry>>>ask(
                            DistributedData.get(kit.system()).replicator(),
                            r -> new Replicator.Get<>(k, Replicator.readLocal(), r),
                            Duration.ofSeconds(10),
                            kit.system().scheduler())
                    .toCompletableFuture()
                    .get(20, TimeUnit.SECONDS);
            if (!(reply instanceof Replicator.NotFound<?>)) break;
            Thread.sleep(100);
        } while (System.nanoTime() < deadline);
        assertThat(reply).as("key %s on the reading node", key).isInstanceOf(Replicator.GetSuccess.class);
        return (LedgerPart)
                ((Replicator.GetSuccess<LWWRegister<LedgerEntry>>) reply).get(k).getValue();
    }
}
