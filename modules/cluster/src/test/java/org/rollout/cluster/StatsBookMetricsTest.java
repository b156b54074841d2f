package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.distribution.CountAtBucket;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.api.TrainingGroup;
import org.rollout.api.WorkflowContext;

/**
 * The statistics book's part of the metrics: counts since start per scope (over versions that were
 * flushed), rejections by reason, and each accepted training group's staleness recorded in the
 * histogram it is given, with the bucket bounds {@link EngineMetrics} registers.
 */
class StatsBookMetricsTest {

    private static Collector.GroupFinished accepted(long taskId, int head, int completion, long tokens) {
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
                Map.of(),
                one.workflowStats(),
                tokens);
    }

    private static Collector.GroupFinished rejected(long taskId, RejectReason reason, long tokens) {
        Collector.GroupFinished one = Payloads.oneRowAccepted(taskId, 0, 0);
        return new Collector.GroupFinished(
                taskId, 0, false, 0, 0, new Collector.Rejected(reason, "test"), Map.of(), one.workflowStats(), tokens);
    }

    @Test
    void totalsAndTheStalenessHistogramFollowEveryRecordedGroup() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        DistributionSummary staleness = DistributionSummary.builder("rollout_staleness")
                .serviceLevelObjectives(EngineMetrics.STALENESS_BUCKETS)
                .register(registry);
        StatsBook book = new StatsBook(null);
        book.recordStalenessIn(staleness);

        String train = WorkflowContext.ROLLOUT_SCOPE;
        book.record(0, train, accepted(1, 0, 0, 10));
        book.record(2, train, accepted(2, 0, 2, 20));
        book.flushBefore(2); // totals live on across flushed versions
        book.record(2, train, accepted(3, 1, 2, 30));
        book.record(2, train, rejected(4, RejectReason.RETURNED_NONE, 5));
        book.recordDiscarded(2, RejectReason.STALE);
        book.record(2, WorkflowContext.EVAL_ROLLOUT_SCOPE, accepted(5, 2, 2, 7));

        StatsBook.Totals t = book.totals(train);
        assertThat(t.groups()).isEqualTo(4);
        assertThat(t.accepted()).isEqualTo(3);
        assertThat(t.tokens()).isEqualTo(65);
        assertThat(t.rejectedByReason()).isEqualTo(Map.of("returned_none", 1L, "stale", 1L));
        assertThat(book.totals(WorkflowContext.EVAL_ROLLOUT_SCOPE).accepted()).isEqualTo(1);
        assertThat(book.totals("nothing-here").groups()).isZero();

        // Training groups only: staleness 0, 2 and 1.
        assertThat(staleness.count()).isEqualTo(3);
        Map<Double, Double> cumulative = new java.util.TreeMap<>();
        for (CountAtBucket b : staleness.takeSnapshot().histogramCounts()) {
            cumulative.put(b.bucket(), b.count());
        }
        assertThat(cumulative.get(0.5)).isEqualTo(1.0);
        assertThat(cumulative.get(1.5)).isEqualTo(2.0);
        assertThat(cumulative.get(2.5)).isEqualTo(3.0);
    }
}
