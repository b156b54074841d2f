package org.rollout.http;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the accept loop does after a failed accept while its socket is open (out of file
 * descriptors, most often: idle clients holding every one): it pauses, 10 ms doubling to 500 ms,
 * and tries again, so that the server accepts as soon as descriptors are free while the
 * connections it has go on; a run of failures is logged once per {@link #LOG_EVERY}. The JDK's
 * server behaves the same; stopping to accept for good left a node's gateway deaf for the rest of
 * its life after one moment at its file limit.
 */
final class Http1AcceptRetry {
    private static final Logger log = LoggerFactory.getLogger(Http1Server.class);
    private static final Duration LOG_EVERY = Duration.ofSeconds(10);

    private final String name;
    private long pauseMillis;
    private long lastLogged;
    private int failedSinceLog;

    Http1AcceptRetry(String name) {
        this.name = name;
    }

    /**
     * Accepts on {@code socket} and hands each connection to {@code serve} until {@code closing}
     * holds or the socket closes; a connection accepted as the server began closing is closed.
     */
    static void acceptUntilClosed(ServerSocket socket, String name, BooleanSupplier closing, Consumer<Socket> serve) {
        Http1AcceptRetry retry = new Http1AcceptRetry(name);
        while (!closing.getAsBoolean()) {
            Socket s;
            try {
                s = socket.accept();
                retry.succeeded();
            } catch (IOException e) {
                if (closing.getAsBoolean() || socket.isClosed() || !retry.failed(e)) {
                    return;
                }
                continue;
            }
            if (closing.getAsBoolean()) {
                Http1Sockets.closeQuietly(s, true);
                continue;
            }
            serve.accept(s);
        }
    }

    void succeeded() {
        pauseMillis = 0;
    }

    /** Logs (when due) and pauses; false when interrupted meanwhile (the loop ends). */
    boolean failed(IOException e) {
        failedSinceLog++;
        long now = System.nanoTime();
        if (lastLogged == 0 || now - lastLogged > LOG_EVERY.toNanos()) {
            log.warn(
                    "{}: accept failed ({} time(s) since the last warning): {}; retrying",
                    name,
                    failedSinceLog,
                    e.toString());
            lastLogged = now;
            failedSinceLog = 0;
        }
        pauseMillis = Math.min(500, Math.max(10, pauseMillis * 2));
        try {
            Thread.sleep(pauseMillis);
            return true;
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
