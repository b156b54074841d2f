package org.rollout.trainer.wire;

import java.time.Duration;
import java.util.Optional;
import org.rollout.trainer.BatchLease;

/**
 * An engine that can hand out its next batch already in RBATCH form, which a trainer gateway
 * writes as it is: a batch held on another node is then relayed from that node's encoding instead
 * of being decoded and encoded again on the gateway's.
 */
public interface EncodedBatchSource {

    /**
     * The next batch, or empty when none is ready within {@code wait}. The caller writes it (or
     * closes it) and then acknowledges or releases it by its id, as for a pulled batch.
     */
    Optional<EncodedBatch> nextEncodedBatch(Duration wait) throws InterruptedException;

    /**
     * As {@link #nextEncodedBatch(Duration)}, the batch held for {@code holder}: under {@code
     * lease} when it is not null, else only named in the status as its holder.
     */
    default Optional<EncodedBatch> nextEncodedBatch(Duration wait, String holder, BatchLease lease)
            throws InterruptedException {
        return nextEncodedBatch(wait);
    }
}
