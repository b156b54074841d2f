package org.rollout.http;

import java.io.FilterInputStream;
import java.io.IOException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The socket's input, each read bounded by a deadline when one is set: the socket's read
 * timeout is set to the time left before each read, so a client that trickles bytes cannot
 * stretch a request past it; or, for a streamed body, by a time per read.
 */
final class Http1DeadlineInput extends FilterInputStream {
    private final Socket socket;
    private long deadline;
    private boolean set;
    private Duration perRead;

    Http1DeadlineInput(Socket socket) throws IOException {
        super(socket.getInputStream());
        this.socket = socket;
    }

    void within(Duration d) {
        deadline = System.nanoTime() + d.toNanos();
        set = true;
        perRead = null;
    }

    void eachRead(Duration d) {
        set = false;
        perRead = d;
    }

    void none() {
        set = false;
        perRead = null;
    }

    private void arm() throws IOException {
        if (perRead != null) {
            socket.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, perRead.toMillis())));
            return;
        }
        if (!set) {
            socket.setSoTimeout(0);
            return;
        }
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
            throw new SocketTimeoutException("deadline passed");
        }
        socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, left));
    }

    @Override
    public int read() throws IOException {
        arm();
        return super.read();
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        arm();
        return super.read(b, off, len);
    }
}
