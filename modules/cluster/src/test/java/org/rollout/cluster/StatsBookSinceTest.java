package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.TrainingGroup;
import org.rollout.api.WorkflowContext;

/**
 * What the statistics book answers trainers ({@code GET /v1/stats}): the very text of its file's
 * lines, in version order, and the version below which no line is still to come, held back by an
 * evaluation pass under way.
 */
class StatsBookSinceTest {
    private static final String TRAIN = WorkflowContext.ROLLOUT_SCOPE;
    private static final String EVAL = WorkflowContext.EVAL_ROLLOUT_SCOPE;

    @TempDir
    Path dir;

    private static Collector.GroupFinished accepted(long taskId, int head, int completion) {
        Collector.GroupFinished one = Payloads.oneRowAccepted(taskId, 0, head);
        TrainingGroup g = ((Collector.Accepted) one.outcome()).group();
        TrainingGroup moved = new TrainingGroup(
                g.taskId(), 0, g.rows(), g.slotIndices(), g.slotRowCounts(), head, head, head, completion);
        return new Collector.GroupFinished(
                taskId,
                0,
                false,
                head,
                completion,
                new Collector.Accepted(moved),
                Map.of("target_slot_count", 1.0),
                one.workflowStats(),
                10);
    }

    @Test
    void linesComeInVersionOrderAsTheFileHasThemAndCompleteBelowWaitsForTheEvaluationPass() throws Exception {
        Path file = dir.resolve("stats.jsonl");
        StatsBook book = new StatsBook(file);
        assertThat(book.since(0)).isEqualTo(new StatsBook.Since(List.of(), 0));

        book.evalStarted(0);
        book.record(0, TRAIN, accepted(1, 0, 0));
        book.record(0, EVAL, accepted(2, 0, 0));
        book.flushBefore(1); // version 0's training line; the pass at 0 still runs
        assertThat(book.since(0).lines()).hasSize(1);
        assertThat(book.since(0).completeBelow()).isZero();

        book.record(1, TRAIN, accepted(3, 0, 1));
        book.recordDiscarded(1, RejectReason.STALE);
        book.flushBefore(3); // version 1's line; nothing at all for version 2
        assertThat(book.since(0).completeBelow())
                .as("the pass at 0 is under way")
                .isZero();
        book.record(0, EVAL, accepted(4, 0, 0));
        book.flushEval(0); // the pass ends after version 1's line
        StatsBook.Since all = book.since(0);
        assertThat(all.completeBelow()).isEqualTo(3);

        assertThat(book.awaitWritten(Duration.ofSeconds(10))).isTrue();
        List<String> written = Files.readAllLines(file);
        assertThat(written).hasSize(3);
        // In the file: v0 rollout, v1 rollout, v0 eval; answered in version order, the same text.
        assertThat(all.lines()).containsExactly(written.get(0), written.get(2), written.get(1));
        assertThat(written.get(2)).startsWith("{\"version\":0,\"scope\":\"eval-rollout\",\"groups\":2,");
        assertThat(written.get(1))
                .startsWith("{\"version\":1,\"scope\":\"rollout\",\"groups\":1,\"accepted\":1,\"rejected\":1,"
                        + "\"rejected_reasons\":{\"stale\":1},\"tokens\":10,\"staleness_mean\":1.0,"
                        + "\"staleness_max\":1,");
        assertThat(book.since(1).lines()).containsExactly(written.get(1));
        assertThat(book.since(3)).isEqualTo(new StatsBook.Since(List.of(), 3));

        book.evalStarted(3);
        book.record(3, TRAIN, accepted(5, 3, 3));
        assertThat(book.since(0).completeBelow()).isEqualTo(3);
        book.close(); // shutdown: everything held is written, and in the file
        assertThat(book.since(0).completeBelow()).isEqualTo(4);
        assertThat(book.since(0).lines())
                .hasSize(4)
                .last()
                .isEqualTo(Files.readAllLines(file).get(3));
    }
}
