package org.rollout.cluster;

import java.io.IOException;
import java.io.OutputStream;
import java.util.List;
import java.util.function.LongConsumer;
import org.rollout.trainer.wire.EncodedBatch;

/**
 * A batch in RBATCH form read from its holder's data plane and copied, as its bytes arrive, to a
 * trainer's stream on this node: it is never decoded here nor held whole, only one buffer of
 * {@value #BUFFER} bytes at a time. Written once; closing it closes the connection to the holder.
 *
 * <p>Thread safety: one thread writes or closes it (the pull's virtual thread).
 */
final class RelayedBatch implements EncodedBatch {
    /** The buffer a relayed batch's bytes go through on their way from one socket to the other. */
    static final int BUFFER = 1 << 20;

    private final DirectRef ref;
    private final DataPlaneClient.BatchStream stream;
    private final long batchId;
    private final int groups;
    private final List<Long> taskIds;
    private final LongConsumer relayed;
    private boolean written;

    /**
     * @param relayed told the batch's length once it has been written whole
     */
    RelayedBatch(
            DirectRef ref,
            DataPlaneClient.BatchStream stream,
            long batchId,
            int groups,
            List<Long> taskIds,
            LongConsumer relayed) {
        this.ref = ref;
        this.stream = stream;
        this.batchId = batchId;
        this.groups = groups;
        this.taskIds = List.copyOf(taskIds);
        this.relayed = relayed;
    }

    @Override
    public long batchId() {
        return batchId;
    }

    @Override
    public int groups() {
        return groups;
    }

    @Override
    public List<Long> taskIds() {
        return taskIds;
    }

    @Override
    public long length() {
        return stream.length();
    }

    @Override
    public long writeTo(OutputStream out) throws IOException {
        if (written) {
            throw new IllegalStateException(what() + " was written already");
        }
        written = true;
        try (stream) {
            byte[] buffer = new byte[BUFFER];
            long left = stream.length();
            while (left > 0) {
                int n;
                try {
                    n = stream.in().read(buffer, 0, (int) Math.min(buffer.length, left));
                } catch (IOException e) {
                    throw new SourceFailedException(
                            what() + ": reading it from " + holder() + " failed after " + (stream.length() - left)
                                    + " of " + stream.length() + " bytes: " + e,
                            e);
                }
                if (n < 0) {
                    throw new SourceFailedException(
                            what() + ": " + holder() + " closed the connection after " + (stream.length() - left)
                                    + " of " + stream.length() + " bytes",
                            null);
                }
                out.write(buffer, 0, n);
                left -= n;
            }
            relayed.accept(stream.length());
            return stream.length();
        }
    }

    @Override
    public void close() {
        stream.close();
    }

    private String what() {
        return "batch " + batchId;
    }

    private String holder() {
        return ref.host() + ":" + ref.port();
    }
}
