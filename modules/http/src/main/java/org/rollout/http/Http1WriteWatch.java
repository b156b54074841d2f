package org.rollout.http;

import java.io.IOException;
import java.io.OutputStream;
import java.time.Duration;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The write watch: each connection's writes are timed ({@link Output}), and a connection whose
 * client took nothing of a write for {@link Http1Server.Timeouts#write} is reset, so a client that
 * stops reading cannot hold a handler in a write forever.
 */
final class Http1WriteWatch implements Runnable {
    private static final Logger log = LoggerFactory.getLogger(Http1Server.class);

    private final String name;
    private final Duration write;
    private final Set<Http1Connection> connections;
    private final BooleanSupplier closing;

    /** Watches {@code connections} until {@code closing} and none is left. */
    Http1WriteWatch(String name, Duration write, Set<Http1Connection> connections, BooleanSupplier closing) {
        this.name = name;
        this.write = write;
        this.connections = connections;
        this.closing = closing;
    }

    /** Resets connections whose client took nothing of a write for {@link Http1Server.Timeouts#write}. */
    @Override
    public void run() {
        long limit = write.toNanos();
        long period = Math.max(50, Math.min(1000, write.toMillis() / 4));
        while (!closing.getAsBoolean() || !connections.isEmpty()) {
            try {
                Thread.sleep(period);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            for (Http1Connection c : connections) {
                long since = c.writingSince;
                if (since != 0 && now - since > limit) {
                    log.warn(
                            "{}: the client at {} took nothing for {}; its connection is reset",
                            name,
                            c.socket.getRemoteSocketAddress(),
                            write);
                    Http1Sockets.closeQuietly(c.socket, true);
                }
            }
        }
    }

    /** The socket's output, each write timed for the write watch. */
    static final class Output extends OutputStream {
        private final OutputStream out;
        private final Http1Connection connection;

        Output(OutputStream out, Http1Connection connection) {
            this.out = out;
            this.connection = connection;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            // In pieces, so a large write read slowly shows progress.
            for (int done = 0; done < len; ) {
                int n = Math.min(PIECE, len - done);
                connection.writingSince = System.nanoTime();
                try {
                    out.write(b, off + done, n);
                } finally {
                    connection.writingSince = 0;
                }
                done += n;
            }
        }

        @Override
        public void flush() throws IOException {
            connection.writingSince = System.nanoTime();
            try {
                out.flush();
            } finally {
                connection.writingSince = 0;
            }
        }

        @Override
        public void close() throws IOException {
            out.close();
        }

        private static final int PIECE = 256 * 1024;
    }
}
