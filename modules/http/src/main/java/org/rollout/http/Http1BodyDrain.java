package org.rollout.http;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What becomes of a request body the handler did not read to its end: a little of it is read and
 * dropped to keep the connection for the next request, and a connection closed over a body still
 * arriving drops what arrives first, so the close does not reset it.
 */
final class Http1BodyDrain {
    private static final Logger log = LoggerFactory.getLogger(Http1Server.class);

    private Http1BodyDrain() {}

    /**
     * Reads what a handler left of a streamed body, up to {@link #DRAIN_LIMIT} bytes, so that the
     * connection can serve the next request; false when more is left (the response then closes the
     * connection, and says so) or the body could not be read.
     */
    static boolean settle(InputStream body, CompletableFuture<Void> bodyRead) {
        byte[] skip = new byte[8192];
        try {
            for (long left = DRAIN_LIMIT; left > 0 && !bodyRead.isDone(); ) {
                int n = body.read(skip, 0, (int) Math.min(skip.length, left));
                if (n < 0) {
                    break;
                }
                left -= n;
            }
        } catch (IOException e) {
            return false;
        }
        return bodyRead.isDone();
    }

    /** The most of a body a handler did not read that is read and dropped to keep the connection. */
    private static final long DRAIN_LIMIT = 64 * 1024;

    /**
     * Ends a connection whose client may still be sending a body nobody reads: what arrives within
     * {@link #LINGER} is read and dropped first, so that the close does not reset the connection
     * (and lose the answer the client has not read yet).
     */
    static void lingeringClose(String name, Socket socket, InputStream in, Http1DeadlineInput deadline) {
        try {
            Http1Sockets.endOutput(socket);
            deadline.within(LINGER);
            byte[] skip = new byte[64 * 1024];
            while (in.read(skip) >= 0) {
                // Dropped.
            }
        } catch (IOException e) {
            log.debug(
                    "{}: lingering close of a connection from {}: {}",
                    name,
                    socket.getRemoteSocketAddress(),
                    e.toString());
        }
    }

    private static final Duration LINGER = Duration.ofSeconds(2);
}
