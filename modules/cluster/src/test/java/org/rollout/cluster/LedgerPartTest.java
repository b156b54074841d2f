package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.pekko.actor.Address;
import org.apache.pekko.cluster.UniqueAddress;
import org.apache.pekko.cluster.ddata.LWWRegister;
import org.apache.pekko.cluster.ddata.SelfUniqueAddress;
import org.junit.jupiter.api.Test;
import org.rollout.cluster.DurableState.Cursor;
import org.rollout.cluster.DurableState.LedgerEntry;
import org.rollout.cluster.DurableState.LedgerPart;
import org.rollout.cluster.DurableState.OpenTask;
import org.rollout.cluster.ReplicatedState.Change;

/**
 * A ledger key's part as {@link ReplicatedState} changes and timestamps it, without a cluster: the
 * writes of a grouped update applied in their order, and the register's clock, under which a
 * replaced coordinator's late writes never win over its successor's.
 */
class LedgerPartTest {

    private static OpenTask task(long id, boolean accepted) {
        return new OpenTask(id, 0, false, id, 1, accepted, false);
    }

    private static List<Long> ids(LedgerPart part) {
        return part.tasks().stream().map(OpenTask::taskId).toList();
    }

    @Test
    void theWritesOfAnUpdateApplyInTheirOrder() {
        LedgerPart held =
                new LedgerPart(new Cursor(4, 4, 0, 1), List.of(task(1, false), task(2, false), task(3, false)));
        record Case(String what, List<Change> batch, List<Long> open, List<Long> accepted) {}
        List<Case> cases = List.of(
                new Case(
                        "a removal and a put",
                        List.of(new Change(null, List.of(task(4, false)), List.of(2L))),
                        List.of(1L, 3L, 4L),
                        List.of()),
                new Case(
                        "a put, then its removal",
                        List.of(
                                new Change(null, List.of(task(5, false)), List.of()),
                                new Change(null, List.of(), List.of(5L))),
                        List.of(1L, 2L, 3L),
                        List.of()),
                new Case(
                        "a removal, then the same task put again (accepted)",
                        List.of(
                                new Change(null, List.of(), List.of(1L)),
                                new Change(null, List.of(task(1, true)), List.of())),
                        List.of(1L, 2L, 3L),
                        List.of(1L)),
                new Case(
                        "a put replaces the task held",
                        List.of(new Change(null, List.of(task(3, true)), List.of())),
                        List.of(1L, 2L, 3L),
                        List.of(3L)),
                new Case(
                        "puts out of order come out ascending",
                        List.of(
                                new Change(null, List.of(task(9, false), task(0, false)), List.of()),
                                new Change(null, List.of(task(7, false)), List.of())),
                        List.of(0L, 1L, 2L, 3L, 7L, 9L),
                        List.of()),
                new Case(
                        "removing what is not held changes nothing",
                        List.of(new Change(null, List.of(), List.of(42L))),
                        List.of(1L, 2L, 3L),
                        List.of()));
        for (Case c : cases) {
            LedgerPart after = ReplicatedState.applied(held, c.batch());
            assertThat(ids(after)).as(c.what()).isEqualTo(c.open());
            assertThat(after.tasks().stream()
                            .filter(OpenTask::accepted)
                            .map(OpenTask::taskId)
                            .toList())
                    .as(c.what())
                    .isEqualTo(c.accepted());
            assertThat(after.cursor())
                    .as(c.what() + ": no cursor written keeps the one held")
                    .isEqualTo(held.cursor());
        }
    }

    @Test
    void theCursorOfAnUpdateIsEachFieldsLargestOfTheHeldAndTheWritten() {
        LedgerPart held = new LedgerPart(new Cursor(10, 7, 2, 1), List.of());
        LedgerPart after = ReplicatedState.applied(
                held, List.of(new Change(new Cursor(9, 8, 1, 1)), new Change(new Cursor(5, 3, 3, 2))));
        assertThat(after.cursor()).isEqualTo(new Cursor(10, 8, 3, 2));
    }

    @Test
    void randomWritesGroupedAnyWayGiveWhatTheyGiveOneByOne() {
        Random random = new Random(20261206);
        for (int round = 0; round < 200; round++) {
            List<Change> writes = new ArrayList<>();
            Map<Long, OpenTask> model = new TreeMap<>();
            for (int w = 0; w < 1 + random.nextInt(12); w++) {
                List<OpenTask> put = new ArrayList<>();
                List<Long> remove = new ArrayList<>();
                for (int i = 0; i < random.nextInt(4); i++) {
                    remove.add((long) random.nextInt(20));
                }
                for (int i = 0; i < random.nextInt(4); i++) {
                    put.add(task(random.nextInt(20), random.nextBoolean()));
                }
                remove.forEach(model::remove);
                put.forEach(t -> model.put(t.taskId(), t));
                writes.add(new Change(null, put, remove));
            }
            LedgerPart grouped = ReplicatedState.applied(LedgerPart.EMPTY, writes);
            LedgerPart oneByOne = LedgerPart.EMPTY;
            for (Change c : writes) {
                oneByOne = ReplicatedState.applied(oneByOne, List.of(c));
            }
            assertThat(grouped.tasks()).as("round %d", round).containsExactlyElementsOf(model.values());
            assertThat(oneByOne).as("round %d", round).isEqualTo(grouped);
        }
    }

    @Test
    void aReplacedCoordinatorsLateWriteNeverWinsOverItsSuccessorsPart() {
        SelfUniqueAddress first = node("node-1", 1);
        SelfUniqueAddress second = node("node-2", 2);
        LWWRegister.Clock<LedgerEntry> firstClock = ReplicatedState.partClock(() -> 1);
        LWWRegister.Clock<LedgerEntry> secondClock = ReplicatedState.partClock(() -> 2);
        // Incarnation 1 writes a key many times; its successor read it after the tenth write.
        LWWRegister<LedgerEntry> predecessor = LWWRegister.create(first, LedgerPart.EMPTY, firstClock);
        LWWRegister<LedgerEntry> readBySuccessor = null;
        for (long id = 0; id < 5_000; id++) {
            predecessor = predecessor.withValue(
                    first, new LedgerPart(new Cursor(id + 1, id + 1, 0, 1), List.of(task(id, false))), firstClock);
            if (id == 9) {
                readBySuccessor = predecessor;
            }
        }
        LedgerPart successorsPart = new LedgerPart(new Cursor(100, 100, 0, 2), List.of(task(99, true)));
        LWWRegister<LedgerEntry> successor = readBySuccessor.withValue(second, successorsPart, secondClock);
        assertThat(successor.merge(predecessor).getValue()).isEqualTo(successorsPart);
        assertThat(predecessor.merge(successor).getValue()).isEqualTo(successorsPart);
        // Its own writes go on rising, one above the other, from the floor of its incarnation.
        LWWRegister<LedgerEntry> next = successor.withValue(second, LedgerPart.EMPTY, secondClock);
        assertThat(next.timestamp()).isEqualTo(successor.timestamp() + 1);
        assertThat(successor.timestamp()).isEqualTo(2L << ReplicatedState.INCARNATION_SHIFT);
    }

    private static SelfUniqueAddress node(String host, long uid) {
        return new SelfUniqueAddress(new UniqueAddress(new Address("pekko", "rollout", host, 2552), uid));
    }
}
