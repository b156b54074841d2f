package org.rollout.http;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PushbackInputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import org.rollout.http.Http1Server.Exchange;
import org.rollout.http.Http1Server.Handler;
import org.rollout.http.Http1Server.Options;
import org.rollout.http.Http1Server.Request;
import org.rollout.http.Http1Server.Response;
import org.rollout.http.Http1Server.Timeouts;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection of an {@link Http1Server}: its socket, the write under way on it, if any, for the
 * write watch ({@link Http1WriteWatch}), and its loop: read a request, run the handler on its own
 * virtual thread, meanwhile watch the socket for the client's next request or its disconnect, and
 * keep the connection for the next request or end it.
 */
final class Http1Connection {
    private static final Logger log = LoggerFactory.getLogger(Http1Server.class);

    final Socket socket;
    /** When the write under way on the socket began ({@link System#nanoTime}), 0 when none. */
    volatile long writingSince;

    private final Http1Server server;
    private final Handler handler;
    private final String name;
    private final Options options;

    Http1Connection(Http1Server server, Socket socket, Handler handler, String name, Options options) {
        this.server = server;
        this.socket = socket;
        this.handler = handler;
        this.name = name;
        this.options = options;
    }

    /** Serves the connection's requests until it ends, then closes it. */
    void serve() {
        Timeouts timeouts = options.timeouts();
        try {
            socket.setTcpNoDelay(true);
            Http1DeadlineInput deadline = new Http1DeadlineInput(socket);
            // The 64 KiB buffers each way come with the first byte of a request: a connection that
            // is opened and left idle holds a socket and a few objects, not 128 KiB of heap (a
            // flood of 2 000 of them ran a node with a 256 MiB heap out of it).
            PushbackInputStream first = new PushbackInputStream(deadline, 1);
            if (!awaitFirstByte(first, deadline, null)) {
                return;
            }
            PushbackInputStream in = new PushbackInputStream(new BufferedInputStream(first, 64 * 1024), 1);
            OutputStream out =
                    new BufferedOutputStream(new Http1WriteWatch.Output(socket.getOutputStream(), this), 64 * 1024);
            InetSocketAddress remote = (InetSocketAddress) socket.getRemoteSocketAddress();
            while (!server.isClosing()) {
                Request request;
                CompletableFuture<Void> bodyRead = new CompletableFuture<>();
                BooleanSupplier settle = () -> true;
                deadline.within(timeouts.request());
                try {
                    Http1RequestReader.Head head = Http1RequestReader.readHead(in, remote);
                    if (head == null) {
                        return;
                    }
                    Http1RequestReader.continueIfExpected(head, out);
                    if (options.streamBody().test(head.request(new byte[0]))) {
                        InputStream body =
                                Http1RequestReader.bodyStream(in, head.headers(), () -> bodyRead.complete(null));
                        request = head.request(body);
                        settle = () -> Http1BodyDrain.settle(body, bodyRead);
                        deadline.eachRead(timeouts.idle());
                    } else {
                        request = head.request(Http1RequestReader.readBody(in, head.headers()));
                        bodyRead.complete(null);
                    }
                } catch (Http1RequestReader.BadRequest e) {
                    Http1ResponseWriter.writeResponse(out, error(e.status, e.getMessage()), false);
                    return;
                } catch (SocketTimeoutException e) {
                    String why = "the request was not received within " + timeouts.request();
                    Http1ResponseWriter.writeResponse(out, error(408, why), false);
                    return;
                }
                boolean keepAlive = keepAlive(request);
                Exchange exchange =
                        new Exchange(out, keepAlive, request.version().equals("HTTP/1.0"), settle);
                CompletableFuture<Long> handled = new CompletableFuture<>();
                Thread t = Thread.ofVirtual()
                        .name(name + "-handler")
                        .unstarted(() -> handle(request, exchange, out, handled));
                server.track(handled, t);
                t.start();
                // A body the handler reads is the handler's until its end: then the connection is
                // read again, or, if the handler left some of it, closed after the response.
                CompletableFuture.anyOf(bodyRead, handled).join();
                if (!bodyRead.isDone()) {
                    handled.join();
                    Http1BodyDrain.lingeringClose(name, socket, in, deadline);
                    return;
                }
                // Meanwhile, the client's next byte: its next request, or the end of the
                // connection, which aborts this one if it is still being served.
                boolean more = awaitFirstByte(in, deadline, handled);
                if (!more) {
                    exchange.markDisconnected();
                }
                handled.join();
                if (!more || !exchange.reusable() || socket.isClosed()) {
                    return;
                }
            }
        } catch (IOException e) {
            log.debug("{}: connection from {} ended: {}", name, socket.getRemoteSocketAddress(), e.toString());
        } finally {
            server.ended(this);
            Http1Sockets.closeQuietly(socket, false);
        }
    }

    private Response error(int status, String message) {
        return Http1Errors.response(options.errors(), status, message);
    }

    /**
     * Waits for the first byte of the connection's next request and leaves it unread. False when
     * the connection ended, failed, or stayed idle with no request under way: {@code handled} is
     * null before the first request (then the wait is {@link Timeouts#firstRequest}), else done
     * (then {@link Timeouts#idle} from the response). A request being served is never timed out here.
     */
    private boolean awaitFirstByte(
            PushbackInputStream in, Http1DeadlineInput deadline, CompletableFuture<Long> handled) {
        Duration idle = handled == null
                ? options.timeouts().firstRequest()
                : options.timeouts().idle();
        deadline.within(idle);
        while (true) {
            try {
                int next = in.read();
                deadline.none();
                if (next < 0) {
                    return false;
                }
                in.unread(next);
                return true;
            } catch (SocketTimeoutException e) {
                if (handled != null && !handled.isDone()) {
                    deadline.within(idle);
                } else if (handled != null && System.nanoTime() - handled.join() < idle.toNanos()) {
                    // Idle since the response, not since the last look.
                    deadline.within(Duration.ofNanos(idle.toNanos() - (System.nanoTime() - handled.join())));
                } else {
                    log.debug("{}: closing a connection idle for {}", name, idle);
                    return false;
                }
            } catch (IOException e) {
                return false;
            }
        }
    }

    private void handle(Request request, Exchange exchange, OutputStream out, CompletableFuture<Long> handled) {
        try {
            Response response;
            try {
                response = handler.handle(request, exchange);
            } catch (Exception | Error e) {
                if (exchange.began()) {
                    log.debug(
                            "{}: {} {} failed after its response began: {}",
                            name,
                            request.method(),
                            request.path(),
                            e.toString());
                    Http1Sockets.closeQuietly(socket, false);
                    return;
                }
                log.error("{}: {} {} failed", name, request.method(), request.path(), e);
                response = error(500, "internal error serving " + request.path() + ": " + e);
            }
            if (exchange.began()) {
                if (!exchange.finish()) {
                    Http1Sockets.closeQuietly(socket, false);
                } else if (!exchange.reusable()) {
                    Http1Sockets.endOutput(socket);
                }
                return;
            }
            if (response == null) {
                Http1Sockets.closeQuietly(socket, true);
                return;
            }
            if (!exchange.markResponding()) {
                log.debug("{}: client of {} {} left before the response", name, request.method(), request.path());
                return;
            }
            exchange.settleBody();
            try {
                Http1ResponseWriter.writeResponse(out, exchange.withHeaders(response), exchange.reusable());
                exchange.markResponded();
                if (!exchange.reusable()) {
                    // The client reads the answer to its end, then the connection ends.
                    Http1Sockets.endOutput(socket);
                }
            } catch (IOException e) {
                log.debug(
                        "{}: could not deliver the response to {} {}: {}",
                        name,
                        request.method(),
                        request.path(),
                        e.toString());
                Http1Sockets.closeQuietly(socket, false);
            }
        } finally {
            server.untrack(handled);
            handled.complete(System.nanoTime());
        }
    }

    private static boolean keepAlive(Request r) {
        String connection = r.header("connection");
        boolean close =
                connection != null && connection.toLowerCase(Locale.ROOT).contains("close");
        if (r.version().equals("HTTP/1.0")) {
            return connection != null && connection.toLowerCase(Locale.ROOT).contains("keep-alive");
        }
        return !close;
    }
}
