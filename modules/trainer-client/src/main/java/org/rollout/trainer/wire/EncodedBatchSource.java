package org.rollout.trainer.wire;

import java.net.URI;
import java.time.Duration;
import java.util.Objects;
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

    /**
     * The answer to a pull that may be sent elsewhere: a batch (to write, then acknowledge or
     * release), none within the wait, or the base URL of another trainer gateway to pull from
     * instead ({@code readFrom}, nothing handed out).
     */
    record Pulled(Optional<EncodedBatch> batch, URI readFrom) {
        public Pulled {
            Objects.requireNonNull(batch, "batch");
            if (readFrom != null && batch.isPresent()) {
                throw new IllegalArgumentException("a pull answers a batch or where to read, not both");
            }
        }

        /** A batch, or none. */
        public static Pulled of(Optional<EncodedBatch> batch) {
            return new Pulled(batch, null);
        }

        /** Pull from the trainer gateway at {@code gateway} instead. */
        public static Pulled readFrom(URI gateway) {
            return new Pulled(Optional.empty(), Objects.requireNonNull(gateway, "gateway"));
        }
    }

    /**
     * As {@link #nextEncodedBatch(Duration, String, BatchLease)}; with {@code readElsewhere}, an
     * engine whose batches are held on another node that has a trainer gateway of its own may
     * answer that gateway's URL instead of a batch ({@link Pulled#readFrom}), handing nothing out.
     */
    default Pulled pullEncoded(Duration wait, String holder, BatchLease lease, boolean readElsewhere)
            throws InterruptedException {
        return Pulled.of(nextEncodedBatch(wait, holder, lease));
    }
}
