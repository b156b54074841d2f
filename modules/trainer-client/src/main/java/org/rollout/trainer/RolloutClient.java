package org.rollout.trainer;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.rollout.api.TrainingBatch;

/**
 * A trainer's handle on a running Rollout Engine: pull batches, acknowledge them, publish new
 * weights, read status.
 *
 * <pre>
 *   try (RolloutClient c = …) {
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
 * engine's {@code batch_ack_timeout}, or whose trainer reconnects, is delivered again with the same
 * id; acknowledging twice is harmless.
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

    /** Tells the engine the batch has been consumed. */
    void acknowledge(TrainingBatch batch) throws InterruptedException;

    /**
     * Makes every inference server load {@code weights} and labels tokens generated from now on with
     * {@code version}. Returns when the servers have loaded it (or failed to).
     *
     * @throws WeightPublishException when the version is refused (not newer than the current one) or
     *     no server could load the weights; the message says which and why
     */
    PublishResult publishWeights(int version, Path weights) throws InterruptedException;

    /** A snapshot of the engine's state. */
    RolloutStatus status() throws InterruptedException;

    /** Releases the connection; never throws. */
    @Override
    void close();
}
