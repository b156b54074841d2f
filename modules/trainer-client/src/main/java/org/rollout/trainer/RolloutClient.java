package org.rollout.trainer;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.rollout.api.TrainingBatch;

/**
 * A trainer's handle on a running Rollout Engine: pull batches, acknowledge them, publish new
 * weights, read status.
 *
 * <p>A trainer outside the engine's process connects through the trainer gateway of one or more
 * engine nodes ({@link #connect}); inside the engine's JVM, the engine hands out its own client.
 *
 * <pre>
 *   try (RolloutClient c = RolloutClient.connect(ClientConfig.of("http://127.0.0.1:8470").withToken(token))) {
 *       for (int step = 0; step &lt; steps; step++) {
 *           TrainingBatch b = c.nextBatch();          // blocks until consumer_batch_size groups are ready
 *           Path weights = train(b);                  // your update
 *           c.acknowledge(b);                         // the engine may now forget the batch
 *           c.publishWeights(step + 1, weights);      // servers load it; new tokens carry version step+1
 *       }
 *   }
 * </pre>
 *
 * <p>Back-pressure: the engine admits a new prompt only while its staleness budget allows
 * (η = {@code max_head_offpolicyness} versions ahead of the trainer), so a trainer that stops pulling
 * or publishing stops generation; memory stays bounded.
 *
 * <p>Delivery: a batch is kept until acknowledged. A batch that is not acknowledged within the
 * engine's {@code batch_ack_timeout} (the trainer crashed, or its connection broke mid-batch) is
 * delivered again with the same id and the same groups; a trainer that sees an id it has already
 * trained on should only acknowledge it again. Acknowledging twice is harmless.
 *
 * <p>Weight versions are fenced: a publish whose version is not greater than the current one is
 * refused with a reason, never applied.
 *
 * <p>Thread safety: implementations are thread-safe, but a trainer normally drives one from one
 * thread. Every blocking call honours interruption.
 */
public interface RolloutClient extends AutoCloseable {

    /** The next batch, waiting as long as it takes. */
    TrainingBatch nextBatch() throws InterruptedException;

    /** The next batch, or empty if none is ready within {@code timeout}. */
    Optional<TrainingBatch> nextBatch(Duration timeout) throws InterruptedException;

    /**
     * Connects to the engine through the trainer gateways at {@code config}'s contact points (tried
     * in order, failing over). Connecting is lazy: nothing is sent until the first call, so an
     * unreachable engine shows on that call.
     */
    static RolloutClient connect(ClientConfig config) {
        return new HttpRolloutClient(config);
    }

    /**
     * Tells the engine the batch has been consumed. Only the batch's id matters: implementations
     * must not depend on its groups, so that {@link #acknowledge(long)} can acknowledge by id.
     */
    void acknowledge(TrainingBatch batch) throws InterruptedException;

    /**
     * Acknowledges the batch with id {@code batchId}, as {@link #acknowledge(TrainingBatch)} does for
     * that batch (what a gateway receives from a trainer is only the id).
     */
    default void acknowledge(long batchId) throws InterruptedException {
        acknowledge(new TrainingBatch(batchId, List.of(), 0));
    }

    /**
     * Acknowledges batch {@code batchId}, which carried the groups of tasks {@code taskIds}. An
     * engine whose collector was lost with its node, and so no longer knows the id, still retires
     * those tasks, so they are not delivered again. The default ignores the task ids.
     */
    default void acknowledge(long batchId, List<Long> taskIds) throws InterruptedException {
        acknowledge(batchId);
    }

    /**
     * Says that batch {@code batchId} was not received whole (the connection that carried it broke
     * before its end), so the engine delivers it again to the next pull instead of after {@code
     * batch_ack_timeout}. Only for a batch that cannot have been trained on; harmless for one that is
     * acknowledged or unknown. Never blocks; the default does nothing, and the batch comes again
     * after the timeout.
     */
    default void release(long batchId) {}

    /**
     * The next batch, or empty if none is ready within {@code timeout}, held under {@code lease}:
     * it goes back to the next pull as soon as the lease lapses unrenewed ({@link BatchLease}). The
     * default ignores the lease (the batch comes again after {@code batch_ack_timeout}).
     */
    default Optional<TrainingBatch> nextBatch(Duration timeout, BatchLease lease) throws InterruptedException {
        return nextBatch(timeout);
    }

    /**
     * Renews {@code lease} for every batch its holder has pulled under a lease and not yet
     * acknowledged, for another {@code lease.duration()}. Returns the ids of the batches renewed:
     * a batch the caller holds that is not among them went back (its lease had lapsed) or is not
     * known to this engine's collector (it took over from a lost one); its acknowledgement may
     * find it delivered again. The default renews nothing.
     */
    default List<Long> renewLease(BatchLease lease) throws InterruptedException {
        return List.of();
    }

    /**
     * Makes every inference server load {@code weights} and labels tokens generated from now on with
     * {@code version}. Returns when the servers have loaded it (or failed to). The servers read the
     * file themselves: it must be at a path they can read (a shared file system when the trainer
     * runs elsewhere).
     *
     * @throws WeightPublishException when the version is refused (not newer than the current one) or
     *     no server could load the weights; the message says which and why
     */
    PublishResult publishWeights(int version, Path weights) throws InterruptedException;

    /** A snapshot of the engine's state. */
    RolloutStatus status() throws InterruptedException;

    /**
     * The per-version statistics known to the engine's collector node (the lines of its {@code
     * stats.jsonl}) for versions ≥ {@code sinceVersion}, in version order; for a trainer's own
     * logger. A version's training line is written once the version is left behind, an evaluation
     * pass's when the pass ends. The default has none to give.
     *
     * @throws IllegalArgumentException when {@code sinceVersion} is negative
     * @throws UnsupportedOperationException when this client cannot read statistics
     */
    default StatsPage stats(int sinceVersion) throws InterruptedException {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " has no per-version statistics");
    }

    /** Releases the connection; never throws. */
    @Override
    void close();
}
