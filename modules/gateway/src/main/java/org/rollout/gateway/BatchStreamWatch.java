package org.rollout.gateway;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The stall watch over batch streams under way ({@code gateway.write_timeout}): a stream that wrote
 * nothing for that long has its thread interrupted, which closes its socket; the batch,
 * unacknowledged, is delivered again after {@code batch_ack_timeout} (docs/protocol.md).
 */
final class BatchStreamWatch {
    // Logs under the handler's name, as the gateway's lines always have.
    private static final Logger log = LoggerFactory.getLogger(GatewayHandler.class);

    private final Duration writeTimeout;
    private final GatewayMeters meters;
    /** Batch streams under way, watched for stalls ({@code gateway.write_timeout}). */
    private final Set<Stream> streams = ConcurrentHashMap.newKeySet();

    private volatile boolean closing;

    /** Starts watching, on a virtual thread of its own, until {@link #stop}. */
    BatchStreamWatch(Duration writeTimeout, GatewayMeters meters) {
        this.writeTimeout = writeTimeout;
        this.meters = meters;
        Thread.ofVirtual().name("trainer-gateway-write-watch").start(this::watchStreams);
    }

    /** One batch being streamed: its thread, and the bytes it has written so far. */
    static final class Stream {
        final Thread thread = Thread.currentThread();
        final long batchId;
        final CountingStream out;
        long lastCount = -1;
        long lastProgress = System.nanoTime();
        boolean done;

        private Stream(long batchId, CountingStream out) {
            this.batchId = batchId;
            this.out = out;
        }
    }

    /** Watches batch {@code batchId} streamed through {@code out} by the calling thread. */
    Stream watch(long batchId, CountingStream out) {
        Stream s = new Stream(batchId, out);
        streams.add(s);
        return s;
    }

    /**
     * Ends the watch of {@code s}, on its own thread; clears the interrupt the watch sent when it
     * dropped the stream.
     */
    void unwatch(Stream s) {
        streams.remove(s);
        synchronized (s) {
            if (s.done) {
                // Dropped by the stall watch: the interrupt was for this stream only.
                Thread.interrupted();
            }
            s.done = true;
        }
    }

    /** Stops the stall watch. */
    void stop() {
        closing = true;
    }

    /**
     * Drops every batch stream that wrote nothing for {@code gateway.write_timeout}: its thread is
     * interrupted, which closes its socket; the batch, unacknowledged, is delivered again after
     * {@code batch_ack_timeout} (docs/protocol.md). Runs until the gateway's handler is closed.
     */
    private void watchStreams() {
        long period = Math.max(50, Math.min(1000, writeTimeout.toMillis() / 4));
        while (!closing) {
            try {
                Thread.sleep(period);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            for (Stream s : streams) {
                synchronized (s) {
                    if (s.done) {
                        continue;
                    }
                    if (s.out.count != s.lastCount) {
                        s.lastCount = s.out.count;
                        s.lastProgress = now;
                    } else if (now - s.lastProgress > writeTimeout.toNanos()) {
                        s.done = true;
                        meters.writesTimedOut.incrementAndGet();
                        log.warn(
                                "batch {}: the trainer read nothing for {} ms (gateway.write_timeout) after {} bytes;"
                                        + " the connection is dropped and the batch given to the next pull",
                                s.batchId,
                                writeTimeout.toMillis(),
                                s.out.count);
                        s.thread.interrupt();
                    }
                }
            }
        }
    }

    /**
     * Counts what reached the response stream, for the log line of a trainer that went away and for
     * the stall watch; writes go through in pieces of at most {@link #PIECE} bytes, so a large
     * tensor read slowly still shows progress.
     */
    static final class CountingStream extends FilterOutputStream {
        static final int PIECE = 64 * 1024;
        volatile long count;

        /** Counts what goes to the stream given by {@link #to}. */
        CountingStream() {
            super(null);
        }

        /** Where the counted bytes go: the response body, once it has begun. */
        void to(OutputStream body) {
            this.out = body;
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            for (int done = 0; done < len; ) {
                int n = Math.min(PIECE, len - done);
                out.write(b, off + done, n);
                done += n;
                count += n;
            }
        }
    }
}
