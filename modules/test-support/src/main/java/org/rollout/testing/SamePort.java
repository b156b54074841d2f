package org.rollout.testing;

import java.io.IOException;
import java.net.BindException;
import java.time.Duration;
import java.util.concurrent.Callable;

/**
 * Starting a server again on the port it had before it crashed. Between the crash and the restart
 * the port can be held for a moment by another socket on the machine: an outgoing connection that
 * drew it as its ephemeral port, or a health probe that connected to itself on the dead port. The
 * start is retried on a bind failure until a deadline; any other failure is thrown at once.
 */
public final class SamePort {
    private SamePort() {}

    /**
     * Runs {@code start} until it does not fail to bind, or {@code deadline} has passed.
     *
     * @throws IOException the last bind failure at the deadline, or the first other failure
     */
    public static <T> T restart(Duration deadline, Callable<T> start) throws Exception {
        long end = System.nanoTime() + deadline.toNanos();
        while (true) {
            try {
                return start.call();
            } catch (IOException e) {
                if (!isBindFailure(e) || System.nanoTime() - end > 0) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    static boolean isBindFailure(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof BindException) {
                return true;
            }
        }
        return false;
    }
}
