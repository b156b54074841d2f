package org.rollout.trainer.wire;

import java.io.IOException;
import java.io.OutputStream;
import java.util.List;
import org.rollout.api.TrainingBatch;

/**
 * A batch in its RBATCH form ({@link BatchWireFormat}), ready to be written once: what a trainer
 * gateway sends for a pull. Either encoded here from the batch object ({@link #of}), or relayed
 * as bytes from the node that holds the batch, which encodes it there: then the node in between
 * never decodes the batch nor holds it whole.
 */
public interface EncodedBatch extends AutoCloseable {

    /** The batch's id. */
    long batchId();

    /** The number of groups in the batch. */
    int groups();

    /** The task id of each group, in order. */
    List<Long> taskIds();

    /** The exact number of bytes {@link #writeTo} writes. */
    long length();

    /**
     * Writes the batch's {@link #length()} bytes to {@code out}; does not flush or close it. Call
     * at most once.
     *
     * @return the number of bytes written
     * @throws SourceFailedException when the batch's bytes stop coming from where they are read
     *     (the node holding it failed or stalled), as opposed to {@code out} failing
     */
    long writeTo(OutputStream out) throws IOException;

    /** Frees what the batch holds open (a connection to the node that holds it). Idempotent. */
    @Override
    default void close() {}

    /** The batch's bytes stopped coming from where they were read; {@code out} was not at fault. */
    final class SourceFailedException extends IOException {
        private static final long serialVersionUID = 1L;

        public SourceFailedException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** {@code batch} encoded in this JVM (its group metadata encoded now, the tensors as written). */
    static EncodedBatch of(TrainingBatch batch) throws IOException {
        BatchWireFormat.Prepared prepared = BatchWireFormat.prepare(batch);
        List<Long> taskIds = batch.groups().stream().map(g -> g.taskId()).toList();
        return new EncodedBatch() {
            @Override
            public long batchId() {
                return batch.batchId();
            }

            @Override
            public int groups() {
                return batch.size();
            }

            @Override
            public List<Long> taskIds() {
                return taskIds;
            }

            @Override
            public long length() {
                return prepared.length();
            }

            @Override
            public long writeTo(OutputStream out) throws IOException {
                return prepared.writeTo(out);
            }
        };
    }
}
