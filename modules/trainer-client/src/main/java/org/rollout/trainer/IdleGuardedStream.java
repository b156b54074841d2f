package org.rollout.trainer;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Abandons a body from which no byte arrives for {@code read_idle_timeout}: closing the HTTP
 * client's stream wakes the blocked reader, which then fails with a message saying so.
 */
final class IdleGuardedStream extends FilterInputStream {
    private static final System.Logger log = System.getLogger(HttpRolloutClient.class.getName());

    private final URI base;
    private final String what;
    private final Duration readIdleTimeout;
    private final ScheduledFuture<?> check;
    private volatile long lastProgress = System.nanoTime();
    private volatile boolean expired;

    IdleGuardedStream(
            InputStream in, URI base, String what, Duration readIdleTimeout, ScheduledExecutorService watchdog) {
        super(in);
        this.base = base;
        this.what = what;
        this.readIdleTimeout = readIdleTimeout;
        long period = Math.max(10, Math.min(1000, readIdleTimeout.toMillis() / 4));
        this.check = watchdog.scheduleWithFixedDelay(this::checkIdle, period, period, TimeUnit.MILLISECONDS);
    }

    private void checkIdle() {
        if (System.nanoTime() - lastProgress > readIdleTimeout.toNanos()) {
            expired = true;
            check.cancel(false);
            try {
                in.close();
            } catch (IOException e) {
                log.log(System.Logger.Level.DEBUG, "closing a stalled body from {0}: {1}", base, e);
            }
        }
    }

    @Override
    public int read() throws IOException {
        try {
            int b = super.read();
            lastProgress = System.nanoTime();
            return b;
        } catch (IOException e) {
            throw stalled(e);
        }
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        try {
            int n = super.read(b, off, len);
            lastProgress = System.nanoTime();
            return n;
        } catch (IOException e) {
            throw stalled(e);
        }
    }

    private IOException stalled(IOException e) {
        if (!expired) {
            return e;
        }
        return new IOException(
                "no data from " + base + " for " + readIdleTimeout.toMillis()
                        + " ms (read_idle_timeout) while trying to " + what,
                e);
    }

    @Override
    public void close() throws IOException {
        check.cancel(false);
        super.close();
    }
}
