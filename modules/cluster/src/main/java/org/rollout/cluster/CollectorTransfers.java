package org.rollout.cluster;

import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.cluster.Collector.BatchReply;
import org.rollout.cluster.Collector.GroupFinished;
import org.rollout.cluster.Collector.PullReply;
import org.rollout.cluster.Collector.Rejected;
import org.rollout.cluster.Collector.StreamedBatchReply;
import org.rollout.cluster.Collector.StreamedGroupFinished;

/**
 * How a group's outcome reaches its collector and a batch its puller: as it is when the receiver
 * is in this actor system or the message is small, else streamed in chunks ({@link
 * LargePayloads}); and how a streamed outcome is read back, or rejected as {@code failed} when it
 * cannot be.
 *
 * <p>Across nodes, groups and batches travel as Kryo ({@link KryoSerializable}), everything else
 * as CBOR. A group or batch above {@code rollout.large_payload_threshold} for another node is
 * streamed ({@link Collector.StreamedGroupFinished}, {@link Collector.StreamedBatchReply}); the
 * collector reads a streamed group back before it handles it like any other, and one that cannot
 * be read is rejected as {@code failed}.
 */
final class CollectorTransfers {
    private CollectorTransfers() {}

    /** Sends {@code finished} to {@code collector}, streamed when it is big and for another node. */
    static void deliver(ActorRef<Collector.Command> collector, GroupFinished finished, LargePayloads payloads) {
        if (LargePayloads.isLocal(collector)) {
            collector.tell(finished); // nothing is serialized: no need to estimate the size
            return;
        }
        long bytes = LargePayloads.estimatedBytes(finished);
        if (!payloads.streams(collector, bytes)) {
            collector.tell(finished);
            return;
        }
        String what = "task " + finished.taskId() + " attempt " + finished.attempt();
        DirectRef direct = payloads.offerDirect(finished, what);
        collector.tell(new StreamedGroupFinished(
                finished.taskId(),
                finished.attempt(),
                finished.isEval(),
                finished.dispatchVersion(),
                finished.completionVersion(),
                finished.generatedTokens(),
                bytes,
                direct == null ? payloads.offer(finished, what) : null,
                direct));
    }

    /**
     * Hands {@code batch} to a puller, streamed when it is big and for another node. A streamed
     * batch that never arrives stays unacknowledged and is delivered again after {@code
     * batch_ack_timeout}.
     */
    static void reply(ActorRef<PullReply> to, TrainingBatch batch, LargePayloads payloads) {
        long bytes = LargePayloads.isLocal(to) ? 0 : LargePayloads.estimatedBytes(batch);
        if (payloads.streams(to, bytes)) {
            BatchReply reply = new BatchReply(batch);
            String what = "batch " + batch.batchId();
            DirectRef direct = payloads.offerDirect(reply, what);
            to.tell(new StreamedBatchReply(
                    batch.batchId(),
                    batch.size(),
                    batch.groups().stream().map(TrainingGroup::taskId).toList(),
                    bytes,
                    direct == null ? payloads.offer(reply, what) : null,
                    direct));
        } else {
            to.tell(new BatchReply(batch));
        }
    }

    /** Reads back the outcome {@code s} announces. */
    static CompletionStage<GroupFinished> receive(StreamedGroupFinished s, LargePayloads payloads) {
        String what = "task " + s.taskId() + " attempt " + s.attempt();
        return payloads.receive(s.bytes(), s.direct(), GroupFinished.class, what);
    }

    /**
     * Why the outcome read back for header {@code h} ({@code finished}, or the {@code error} that
     * ended the transfer) cannot be taken; null when it can.
     */
    static String failure(StreamedGroupFinished h, GroupFinished finished, Throwable error) {
        if (error == null && (finished.taskId() != h.taskId() || finished.attempt() != h.attempt())) {
            error = new IllegalStateException(
                    "the stream carried task " + finished.taskId() + " attempt " + finished.attempt());
        }
        if (error == null) {
            return null;
        }
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        return "the group's result (about " + h.estimatedBytes() + " bytes) could not be received: "
                + cause.getMessage();
    }

    /** The outcome of {@code h}'s task when it could not be received: rejected as {@code failed}. */
    static GroupFinished failed(StreamedGroupFinished h, String detail) {
        return new GroupFinished(
                h.taskId(),
                h.attempt(),
                h.isEval(),
                h.dispatchVersion(),
                h.completionVersion(),
                new Rejected(RejectReason.FAILED, detail),
                Map.of(),
                ScalarStats.Totals.EMPTY,
                h.generatedTokens());
    }
}
