package org.rollout.modelserver;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PushbackInputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A small HTTP/1.1 server on plain sockets and virtual threads, written for one thing the JDK's
 * {@code com.sun.net.httpserver.HttpServer} cannot do: notice that a client closed its connection
 * while its request is still being served. SGLang aborts a request whose client disconnected, and
 * AReaL's vLLM backend cancels a request by closing the connection, so the model server must see
 * it.
 *
 * <pre>
 *   accept thread ──► one virtual thread per connection: read request ─► handler (its own virtual thread)
 *                        │ meanwhile: block reading the socket                 │ writes the response
 *                        │   EOF/reset before the response → exchange.disconnected → abort callbacks
 *                        └── next byte → the next request on this keep-alive connection (after the response)
 * </pre>
 *
 * <p>Supported: request bodies with {@code Content-Length} or chunked transfer coding, {@code Expect:
 * 100-continue}, keep-alive and {@code Connection: close}, HTTP/1.0 clients; the request is read by
 * {@link Http1RequestReader}, which answers what it cannot read with 400, 413 or 431. A request
 * that takes longer than {@link Timeouts#request} to arrive is answered 408, and a connection idle
 * for {@link Timeouts#idle} is closed: a client trickling bytes, or holding connections open with
 * nothing to send, ties up a connection for a bounded time only. Responses always carry
 * {@code Content-Length}. A handler may return {@code null} to drop the connection without answering
 * (used by fault injection). {@link #reset()} closes every socket with SO_LINGER 0, so clients see a
 * connection reset: what a crashed server looks like.
 *
 * <p>Thread-safe. Handlers run concurrently, one virtual thread per request.
 */
final class Http1Server {
    private static final Logger log = LoggerFactory.getLogger(Http1Server.class);

    /** Serves one request. Returns the response, or null to drop the connection unanswered. */
    @FunctionalInterface
    interface Handler {
        Response handle(Request request, Exchange exchange) throws Exception;
    }

    /**
     * One request.
     *
     * @param version {@code HTTP/1.1} or {@code HTTP/1.0}
     * @param headers lower-cased names; repeated headers joined with ", "
     */
    record Request(
            String method,
            String path,
            String query,
            String version,
            Map<String, String> headers,
            byte[] body,
            InetAddress remote) {
        String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }
    }

    /** One response; {@code contentType} null means no Content-Type header. */
    record Response(int status, String contentType, byte[] body) {
        static Response json(int status, byte[] body) {
            return new Response(status, "application/json", body);
        }
    }

    /** The connection's state as the handler sees it: whether the client is still there. */
    static final class Exchange {
        private static final int OPEN = 0;
        private static final int RESPONDED = 1;
        private static final int DISCONNECTED = 2;

        private int state = OPEN;
        private final List<Runnable> onDisconnect = new ArrayList<>();
        final CompletableFuture<Void> disconnected = new CompletableFuture<>();

        /** Runs {@code action} once if the client disconnects before the response (at once if it already has). */
        void onDisconnect(Runnable action) {
            boolean now;
            synchronized (this) {
                now = state == DISCONNECTED;
                if (!now) {
                    onDisconnect.add(action);
                }
            }
            if (now) {
                action.run();
            }
        }

        /** True while the client has neither gone nor been answered. */
        synchronized boolean isOpen() {
            return state == OPEN;
        }

        synchronized boolean markResponding() {
            if (state != OPEN) {
                return false;
            }
            state = RESPONDED;
            return true;
        }

        void markDisconnected() {
            List<Runnable> actions;
            synchronized (this) {
                if (state != OPEN) {
                    return;
                }
                state = DISCONNECTED;
                actions = List.copyOf(onDisconnect);
                onDisconnect.clear();
            }
            disconnected.complete(null);
            for (Runnable r : actions) {
                try {
                    r.run();
                } catch (RuntimeException e) {
                    log.warn("disconnect action failed", e);
                }
            }
        }
    }

    /**
     * How long a client may take. {@code idle}: a connection with no request under way (before its
     * first request, between keep-alive requests) is closed after it. {@code request}: from a
     * request's first byte to its last, else it is answered 408 and the connection closed, so a
     * client that sends a byte at a time (slowloris) holds a connection no longer than this.
     */
    record Timeouts(Duration idle, Duration request) {
        /** Above the JDK client's 30 s and Python clients' 15 s idle keep-alive, so they close first. */
        static final Timeouts DEFAULT = new Timeouts(Duration.ofSeconds(120), Duration.ofSeconds(60));
    }

    private final ServerSocket serverSocket;
    private final Handler handler;
    private final String name;
    private final Timeouts timeouts;
    private final Set<Socket> connections = ConcurrentHashMap.newKeySet();
    private final Set<CompletableFuture<Long>> active = ConcurrentHashMap.newKeySet();
    private volatile boolean closing;

    private Http1Server(ServerSocket serverSocket, Handler handler, String name, Timeouts timeouts) {
        this.serverSocket = serverSocket;
        this.handler = handler;
        this.name = name;
        this.timeouts = timeouts;
    }

    /** Binds {@code host:port} (0 = any free port) and starts accepting, with {@link Timeouts#DEFAULT}. */
    static Http1Server start(String host, int port, Handler handler, String name) throws IOException {
        return start(host, port, handler, name, Timeouts.DEFAULT);
    }

    /** Binds {@code host:port} (0 = any free port) and starts accepting. */
    static Http1Server start(String host, int port, Handler handler, String name, Timeouts timeouts)
            throws IOException {
        ServerSocket ss = new ServerSocket();
        ss.setReuseAddress(true);
        ss.bind(new InetSocketAddress(InetAddress.getByName(host), port), 1024);
        Http1Server server = new Http1Server(ss, handler, name, timeouts);
        Thread.ofPlatform().daemon(true).name(name + "-accept").start(server::acceptLoop);
        return server;
    }

    int port() {
        return serverSocket.getLocalPort();
    }

    /** The address and port the socket is bound to. */
    InetSocketAddress address() {
        return (InetSocketAddress) serverSocket.getLocalSocketAddress();
    }

    /** Connections open now (accepted and not yet closed). */
    int openConnections() {
        return connections.size();
    }

    private void acceptLoop() {
        while (!closing) {
            Socket s;
            try {
                s = serverSocket.accept();
            } catch (IOException e) {
                if (!closing) {
                    log.error("{}: accept failed; the server stops accepting", name, e);
                }
                return;
            }
            if (closing) {
                closeQuietly(s, true);
                continue;
            }
            connections.add(s);
            Thread.ofVirtual().name(name + "-conn").start(() -> serve(s));
        }
    }

    /** Stops accepting new connections; open connections stay. */
    void stopAccepting() {
        closing = true;
        closeQuietly(serverSocket);
    }

    /** Waits up to {@code timeoutMillis} for running handlers, then closes every connection. */
    void close(long timeoutMillis) {
        stopAccepting();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        for (CompletableFuture<Long> f : List.copyOf(active)) {
            long left = deadline - System.nanoTime();
            try {
                f.get(Math.max(0, left), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                log.warn("{}: a request handler was still running at close", name);
                break;
            } catch (Exception e) {
                log.debug("{}: handler ended with {}", name, e.toString());
            }
        }
        for (Socket s : List.copyOf(connections)) {
            closeQuietly(s, false);
        }
    }

    /** Abrupt: closes the listening socket and resets every connection (SO_LINGER 0). */
    void reset() {
        stopAccepting();
        for (Socket s : List.copyOf(connections)) {
            closeQuietly(s, true);
        }
    }

    private void serve(Socket socket) {
        try {
            socket.setTcpNoDelay(true);
            DeadlineInput deadline = new DeadlineInput(socket);
            PushbackInputStream in = new PushbackInputStream(new BufferedInputStream(deadline), 1);
            OutputStream out = new BufferedOutputStream(socket.getOutputStream());
            if (!awaitFirstByte(in, deadline, null)) {
                return;
            }
            while (!closing) {
                Request request;
                deadline.within(timeouts.request());
                try {
                    request = Http1RequestReader.read(in, out, socket.getInetAddress());
                } catch (Http1RequestReader.BadRequest e) {
                    writeResponse(out, Response.json(e.status, Json.errorBody(e.status, e.getMessage())), false);
                    return;
                } catch (SocketTimeoutException e) {
                    String why = "the request was not received within " + timeouts.request();
                    writeResponse(out, Response.json(408, Json.errorBody(408, why)), false);
                    return;
                }
                if (request == null) {
                    return;
                }
                boolean keepAlive = keepAlive(request);
                Exchange exchange = new Exchange();
                CompletableFuture<Long> handled = new CompletableFuture<>();
                active.add(handled);
                Thread.ofVirtual()
                        .name(name + "-handler")
                        .start(() -> handle(request, exchange, socket, out, keepAlive, handled));
                // Meanwhile, the client's next byte: its next request, or the end of the
                // connection, which aborts this one if it is still being served.
                boolean more = awaitFirstByte(in, deadline, handled);
                if (!more) {
                    exchange.markDisconnected();
                }
                handled.join();
                if (!more || !keepAlive || socket.isClosed()) {
                    return;
                }
            }
        } catch (IOException e) {
            log.debug("{}: connection from {} ended: {}", name, socket.getRemoteSocketAddress(), e.toString());
        } finally {
            connections.remove(socket);
            closeQuietly(socket, false);
        }
    }

    /**
     * Waits for the first byte of the connection's next request and leaves it unread. False when
     * the connection ended, failed, or stayed idle for {@link Timeouts#idle} with no request under
     * way ({@code handled} done, or null before the first request): a request being served is
     * never timed out here.
     */
    private boolean awaitFirstByte(PushbackInputStream in, DeadlineInput deadline, CompletableFuture<Long> handled) {
        deadline.within(timeouts.idle());
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
                    deadline.within(timeouts.idle());
                } else if (handled != null
                        && System.nanoTime() - handled.join() < timeouts.idle().toNanos()) {
                    // Idle since the response, not since the last look.
                    deadline.within(Duration.ofNanos(timeouts.idle().toNanos() - (System.nanoTime() - handled.join())));
                } else {
                    log.debug("{}: closing a connection idle for {}", name, timeouts.idle());
                    return false;
                }
            } catch (IOException e) {
                return false;
            }
        }
    }

    private void handle(
            Request request,
            Exchange exchange,
            Socket socket,
            OutputStream out,
            boolean keepAlive,
            CompletableFuture<Long> handled) {
        try {
            Response response;
            try {
                response = handler.handle(request, exchange);
            } catch (Exception | Error e) {
                log.error("{}: {} {} failed", name, request.method(), request.path(), e);
                response =
                        Response.json(500, Json.errorBody(500, "internal error serving " + request.path() + ": " + e));
            }
            if (response == null) {
                closeQuietly(socket, true);
                return;
            }
            if (!exchange.markResponding()) {
                log.debug("{}: client of {} {} left before the response", name, request.method(), request.path());
                return;
            }
            try {
                writeResponse(out, response, keepAlive);
                if (!keepAlive) {
                    socket.close();
                }
            } catch (IOException e) {
                log.debug(
                        "{}: could not deliver the response to {} {}: {}",
                        name,
                        request.method(),
                        request.path(),
                        e.toString());
                closeQuietly(socket, false);
            }
        } finally {
            active.remove(handled);
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

    private static void writeResponse(OutputStream out, Response r, boolean keepAlive) throws IOException {
        StringBuilder head = new StringBuilder(128);
        head.append("HTTP/1.1 ")
                .append(r.status())
                .append(' ')
                .append(reason(r.status()))
                .append("\r\n");
        if (r.contentType() != null) {
            head.append("Content-Type: ").append(r.contentType()).append("\r\n");
        }
        head.append("Content-Length: ").append(r.body().length).append("\r\n");
        if (!keepAlive) {
            head.append("Connection: close\r\n");
        }
        head.append("\r\n");
        out.write(head.toString().getBytes(StandardCharsets.US_ASCII));
        out.write(r.body());
        out.flush();
    }

    static String reason(int status) {
        return switch (status) {
            case 100 -> "Continue";
            case 200 -> "OK";
            case 400 -> "Bad Request";
            case 403 -> "Forbidden";
            case 404 -> "Not Found";
            case 408 -> "Request Timeout";
            case 405 -> "Method Not Allowed";
            case 409 -> "Conflict";
            case 411 -> "Length Required";
            case 413 -> "Content Too Large";
            case 431 -> "Request Header Fields Too Large";
            case 500 -> "Internal Server Error";
            case 501 -> "Not Implemented";
            case 503 -> "Service Unavailable";
            default -> "Status " + status;
        };
    }

    /**
     * The socket's input, each read bounded by a deadline when one is set: the socket's read
     * timeout is set to the time left before each read, so a client that trickles bytes cannot
     * stretch a request past it.
     */
    private static final class DeadlineInput extends FilterInputStream {
        private final Socket socket;
        private long deadline;
        private boolean set;

        DeadlineInput(Socket socket) throws IOException {
            super(socket.getInputStream());
            this.socket = socket;
        }

        void within(Duration d) {
            deadline = System.nanoTime() + d.toNanos();
            set = true;
        }

        void none() {
            set = false;
        }

        private void arm() throws IOException {
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

    private static void closeQuietly(ServerSocket s) {
        try {
            s.close();
        } catch (IOException e) {
            log.debug("closing the listening socket: {}", e.toString());
        }
    }

    private static void closeQuietly(Socket s, boolean reset) {
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
