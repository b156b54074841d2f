package org.rollout.http;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Ending and closing the server's sockets, quietly: a socket that fails to close is already gone. */
final class Http1Sockets {
    private static final Logger log = LoggerFactory.getLogger(Http1Server.class);

    private Http1Sockets() {}

    /** Ends what the server sends on {@code s} (the client sees the end of the stream); closes it if that fails. */
    static void endOutput(Socket s) {
        try {
            s.shutdownOutput();
        } catch (IOException | UnsupportedOperationException e) {
            closeQuietly(s, false);
        }
    }

    static void closeQuietly(ServerSocket s) {
        try {
            s.close();
        } catch (IOException e) {
            log.debug("closing the listening socket: {}", e.toString());
        }
    }

    static void closeQuietly(Socket s, boolean reset) {
        try {
            if (reset && !s.isClosed()) {
                s.setSoLinger(true, 0);
            }
            s.close();
        } catch (IOException e) {
            log.debug("closing a socket: {}", e.toString());
        }
    }
}
