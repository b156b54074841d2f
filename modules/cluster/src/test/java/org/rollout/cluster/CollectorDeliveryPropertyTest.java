package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.cluster.BatchBook.DroppedStale;
import org.rollout.cluster.BatchBook.HandOut;
import org.rollout.cluster.BatchBook.Step;
import org.rollout.cluster.Collector.GroupFinished;
import org.rollout.cluster.CollectorIntake.Decision;
import org.rollout.cluster.CollectorIntake.Verdict;

/**
 * The collector's intake and book driven as the collector drives them, by random sequences (fixed
 * seeds) of outcomes of several attempts, ledger writes that come late, pulls, acknowledgements,
 * releases, version changes and time passing: no task is handed out in two different batch ids, a
 * batch id always carries the same tasks, an acknowledged task is never handed out again, no batch
 * carries an evaluation group or a rejected one, each task is taken once, and after a drain every
 * accepted training group was acknowledged, dropped as stale or is still buffered: nothing is lost.
 */
class CollectorDeliveryPropertyTest {
    private static final long S = 1_000_000_000L;
    private static final Duration ACK_TIMEOUT = Duration.ofSeconds(60);

    private final Map<Long, Long> batchOfTask = new HashMap<>();
    private final Map<Long, List<Long>> tasksOfBatch = new HashMap<>();
    private final Set<Long> acknowledgedTasks = new HashSet<>();
    private final Set<Long> droppedStale = new HashSet<>();
    private final Set<Long> evalTasks = new HashSet<>();
    private final Set<Long> rejectedTasks = new HashSet<>();
    /** Batches trainers hold (several trainers may hold the same batch id after a redelivery). */
    private final List<TrainingBatch> held = new ArrayList<>();

    private int handOuts;

    @ParameterizedTest(name = "seed {0}, batches of {1}, staleness limit {2}")
    @CsvSource({"20261205, 1, -1", "7, 3, -1", "42, 4, 2", "1234, 2, 0"})
    void noTaskIsHandedOutInTwoBatchIdsAndNoAcceptedGroupIsLost(long seed, int batchSize, long staleness) {
        Random random = new Random(seed);
        CollectorIntake intake = new CollectorIntake(ACK_TIMEOUT, true);
        BatchBook<Integer> book = new BatchBook<>(batchSize, ACK_TIMEOUT, staleness < 0 ? Long.MAX_VALUE : staleness);
        long now = 0;
        intake.attach(0, List.of(), List.of(), true, now);
        book.attach(1, true);
        Map<Long, Integer> taken = new HashMap<>();
        Set<Long> buffered = new HashSet<>();
        List<Long> unrecorded = new ArrayList<>();
        int pullers = 0;
        int version = 0;
        long frontier = 0; // tasks finish roughly in order, with re-runs and late attempts behind

        for (int step = 0; step < 30_000; step++) {
            int op = random.nextInt(100);
            if (op < 30) {
                long task = Math.max(0, frontier - random.nextInt(8));
                if (random.nextInt(10) < 7) {
                    frontier++;
                }
                Decision d = intake.decide(outcome(task, random.nextInt(3), random, version), now);
                if (d.verdict() == Verdict.TAKEN) {
                    taken.merge(task, 1, Integer::sum);
                    if (d.buffered()) {
                        buffered.add(task);
                        check(book.accept(
                                task, ((Collector.Accepted) d.finished().outcome()).group(), now));
                        unrecorded.add(task);
                    } else if (!d.finished().isEval()) {
                        rejectedTasks.add(task);
                    }
                }
            } else if (op < 50 && !unrecorded.isEmpty()) {
                check(book.acceptRecorded(unrecorded.remove(random.nextInt(unrecorded.size())), now));
            } else if (op < 62) {
                check(book.pull(pullers++, "", 0, now + random.nextInt(20) * S, now));
            } else if (op < 72 && !book.marking().isEmpty()) {
                List<TrainingBatch> marking = List.copyOf(book.marking());
                check(book.handOutRecorded(
                        marking.get(random.nextInt(marking.size())).batchId(), now));
            } else if (op < 84 && !held.isEmpty()) {
                acknowledge(book, held.remove(random.nextInt(held.size())));
            } else if (op < 87 && !held.isEmpty()) {
                book.release(held.remove(random.nextInt(held.size())).batchId());
                check(book.serve(now));
            } else if (op < 88) {
                version++;
                book.advanceVersion(version);
            } else {
                now += random.nextInt(30) * S;
                assertThat(intake.releaseDue(now)).isEmpty();
                book.expirePulls(now);
                book.returnDue(now);
                check(book.serve(now));
            }
        }

        // Drain: every acceptance and hand-out is written, trainers acknowledge what they get.
        unrecorded.forEach(t -> check(book.acceptRecorded(t, 0)));
        for (int round = 0; round < 1_000 && (book.unacknowledged() > 0 || book.backlog() >= batchSize); round++) {
            now += 61 * S;
            book.returnDue(now);
            for (int p = book.backlog() / batchSize + book.unacknowledged(); p >= 0; p--) {
                check(book.pull(pullers++, "", 0, now + S, now));
            }
            for (TrainingBatch b : List.copyOf(book.marking())) {
                check(book.handOutRecorded(b.batchId(), now));
            }
            List.copyOf(held).forEach(b -> acknowledge(book, b));
            held.clear();
            book.expirePulls(now + S);
        }

        assertThat(book.unacknowledged()).isZero();
        assertThat(taken.values()).containsOnly(1);
        Set<Long> stillBuffered = book.groupsHeld().keySet();
        assertThat(stillBuffered).hasSizeLessThan(batchSize);
        Set<Long> accounted = new HashSet<>(acknowledgedTasks);
        accounted.addAll(droppedStale);
        accounted.addAll(stillBuffered);
        assertThat(acknowledgedTasks.size() + droppedStale.size() + stillBuffered.size())
                .as("each accepted group ends once")
                .isEqualTo(accounted.size());
        assertThat(accounted).as("every accepted group is accounted for").isEqualTo(buffered);
        assertThat(handOuts).as("the sequence exercised hand-outs").isGreaterThan(50);
        if (staleness >= 0) {
            assertThat(droppedStale).isNotEmpty();
        }
    }

    private GroupFinished outcome(long task, int attempt, Random random, int version) {
        if (task % 10 == 9) {
            evalTasks.add(task);
            GroupFinished a = Payloads.oneRowAccepted(task, attempt, version);
            return new GroupFinished(
                    task, attempt, true, version, version, a.outcome(), Map.of(), ScalarStats.Totals.EMPTY, 1);
        }
        if (random.nextInt(5) == 0) {
            return CollectorIntakeTest.rejected(task, attempt);
        }
        return Payloads.oneRowAccepted(task, attempt, version);
    }

    private void acknowledge(BatchBook<Integer> book, TrainingBatch batch) {
        TrainingBatch known = book.acknowledge(batch.batchId());
        if (known != null) {
            assertThat(known).isEqualTo(batch);
            known.groups().forEach(g -> acknowledgedTasks.add(g.taskId()));
        }
    }

    private void check(List<Step<Integer>> steps) {
        for (Step<Integer> step : steps) {
            if (step instanceof DroppedStale<Integer> d) {
                assertThat(droppedStale.add(d.group().taskId())).isTrue();
                assertThat(batchOfTask).doesNotContainKey(d.group().taskId());
            } else if (step instanceof HandOut<Integer> h) {
                handOuts++;
                TrainingBatch b = h.batch();
                List<Long> ids = b.groups().stream().map(TrainingGroup::taskId).toList();
                List<Long> before = tasksOfBatch.putIfAbsent(b.batchId(), ids);
                if (before != null && !before.equals(ids)) {
                    fail("batch " + b.batchId() + " carried " + before + ", now " + ids);
                }
                for (long id : ids) {
                    Long other = batchOfTask.putIfAbsent(id, b.batchId());
                    if (other != null && other != b.batchId()) {
                        fail("task " + id + " handed out in batch " + other + " and in batch " + b.batchId());
                    }
                    assertThat(acknowledgedTasks).as("acknowledged tasks").doesNotContain(id);
                    assertThat(evalTasks).as("evaluation tasks").doesNotContain(id);
                    assertThat(rejectedTasks).as("rejected tasks").doesNotContain(id);
                }
                held.add(b);
            }
        }
    }
}
