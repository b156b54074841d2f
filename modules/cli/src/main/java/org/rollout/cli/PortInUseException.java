package org.rollout.cli;

import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.Optional;

/**
 * A port a command must listen on is taken. Its message is the one line {@code rollout local} and
 * {@code rollout node} print (exit 1, no stack trace unless {@code --debug}): what listens, the
 * host and port, and the setting that chose the port (the configuration key and the command-line
 * flag, when there is one).
 */
final class PortInUseException extends IOException {
    PortInUseException(String what, String setting, String host, int port, Throwable cause) {
        super(
                "cannot listen on " + host + ":" + port + " for " + what + " (" + setting
                        + "): the port is in use; set another port, or 0 for a free one",
                cause);
    }

    /** Something that binds a port. */
    @FunctionalInterface
    interface Binding<T> {
        T bind() throws IOException;
    }

    /**
     * Runs {@code binding}; a failure caused by the port being in use becomes a {@link
     * PortInUseException} naming {@code setting}, any other failure is thrown as it is.
     */
    static <T> T binding(String what, String setting, String host, int port, Binding<T> binding) throws IOException {
        try {
            return binding.bind();
        } catch (IOException | RuntimeException e) {
            if (e instanceof PortInUseException || !causedByBind(e)) {
                throw e;
            }
            throw new PortInUseException(what, setting, host, port, e);
        }
    }

    /**
     * Refuses a port ({@code > 0}) that another process listens on now, before anything starts; a
     * port 0 (any free one) or a problem other than the port being taken is left to the real bind.
     */
    static void requireFree(String what, String setting, String host, int port) throws PortInUseException {
        if (port <= 0) {
            return;
        }
        try (ServerSocket probe = new ServerSocket()) {
            // Not refused for a port whose last connection is only in TIME_WAIT, as the real bind is not.
            probe.setReuseAddress(true);
            probe.bind(new InetSocketAddress(host, port));
        } catch (BindException e) {
            throw new PortInUseException(what, setting, host, port, e);
        } catch (IOException | RuntimeException e) {
            // An unresolvable host and the like: the listener's own start reports it.
        }
    }

    /** True when {@code t} or one of its causes is a {@link BindException}. */
    static boolean causedByBind(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof BindException) {
                return true;
            }
        }
        return false;
    }

    /** The port-in-use failure in {@code t}'s cause chain, if there is one. */
    static Optional<PortInUseException> in(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof PortInUseException p) {
                return Optional.of(p);
            }
        }
        return Optional.empty();
    }
}
