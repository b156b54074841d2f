package org.rollout.http;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
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
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import javax.net.ssl.SSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's HTTP/1.1 server, on plain sockets (or TLS) and virtual threads: the model server,
 * the trainer gateway, the agent proxy and a node's metrics listener all run on it. Written for one
 * thing the JDK's built-in server cannot do: notice that a client closed its connection while its
 * request is still being served. SGLang aborts a request whose client disconnected, and AReaL's
 * vLLM backend cancels a request by closing the connection, so the model server must see it.
 *
 * <pre>
 *   accept thread ──► one virtual thread per connection: read request ─► handler (its own virtual thread)
 *                        │ meanwhile: block reading the socket                 │ writes the response
 *                        │   EOF/reset before the response ends → exchange disconnected → abort callbacks
 *                        └── next byte → the next request on this keep-alive connection (after the response)
 * </pre>
 *
 * <p>Supported: request bodies with {@code Content-Length} or chunked transfer coding, {@code Expect:
 * 100-continue}, keep-alive and {@code Connection: close}, HTTP/1.0 clients, TLS ({@link
 * Options#tls}). The request is read by {@link Http1RequestReader}, which answers what it cannot
 * read with 400, 413 or 431; a body is read whole before the handler runs, unless {@link
 * Options#streamBody} says to hand it over as a stream (an upload the handler copies to disk).
 *
 * <p>A handler answers in one of two ways: it returns a {@link Response} (sent whole, with {@code
 * Content-Length}), or it begins the response on the {@link Exchange} ({@link Exchange#respond}) and
 * writes the body to the stream it gets, of a known length or in chunked transfer coding, flushed
 * when the handler flushes (Server-Sent Events); the value it then returns is ignored. A handler
 * that returns null without beginning a response drops the connection unanswered (fault injection).
 *
 * <p>Time limits ({@link Timeouts}): a request that takes longer than {@code request} to arrive is
 * answered 408, a connection idle for {@code idle} is closed, and a write the client does not read
 * for {@code write} resets the connection; the handler's own time, and a streamed response of many
 * minutes that keeps being read, are not limited. {@link #reset()} closes every socket with
 * SO_LINGER 0, so clients see a connection reset: what a crashed server looks like.
 *
 * <p>Thread-safe. Handlers run concurrently, one virtual thread per request.
 */
public final class Http1Server {
    private static final Logger log = LoggerFactory.getLogger(Http1Server.class);

    /** Serves one request: returns the response, or begins it on the exchange (see the class doc). */
    @FunctionalInterface
    public interface Handler {
        Response handle(Request request, Exchange exchange) throws Exception;
    }

    /** The body of an error answer the server gives itself (400, 408, 413, 431, 500), as JSON. */
    @FunctionalInterface
    public interface ErrorBody {
        byte[] of(int status, String message);

        /** {@code {"error": {"message": …, "code": status}}}. */
        ErrorBody DEFAULT =
                (status, message) -> ("{\"error\":{\"message\":\"" + escape(message) + "\",\"code\":" + status + "}}")
                        .getBytes(StandardCharsets.UTF_8);
    }

    /**
     * One request. Header names are lower-cased; repeated headers joined with ", ". The body is
     * either read already ({@link #body()}) or left on the connection ({@link #bodyStream()}, when
     * {@link Options#streamBody} chose so).
     */
    public static final class Request {
        private final String method;
        private final String path;
        private final String query;
        private final String version;
        private final Map<String, String> headers;
        private final byte[] body;
        private final InputStream bodyStream;
        private final InetSocketAddress remote;

        Request(
                String method,
                String path,
                String query,
                String version,
                Map<String, String> headers,
                byte[] body,
                InputStream bodyStream,
                InetSocketAddress remote) {
            this.method = method;
            this.path = path;
            this.query = query;
            this.version = version;
            this.headers = Collections.unmodifiableMap(headers);
            this.body = body;
            this.bodyStream = bodyStream;
            this.remote = remote;
        }

        /** Upper-cased, e.g. {@code POST}. */
        public String method() {
            return method;
        }

        /** The target's path, as sent (not percent-decoded). */
        public String path() {
            return path;
        }

        /** The target's query, as sent, without {@code ?}; empty when none. */
        public String query() {
            return query;
        }

        /** {@code HTTP/1.1} or {@code HTTP/1.0}. */
        public String version() {
            return version;
        }

        public Map<String, String> headers() {
            return headers;
        }

        /** The header's value, or null; {@code name} in any case. */
        public String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }

        /** The body read whole; empty when it is streamed instead. */
        public byte[] body() {
            return body == null ? new byte[0] : body;
        }

        /** The body as a stream: over the bytes read, or read from the connection as it arrives. */
        public InputStream bodyStream() {
            return bodyStream == null ? new ByteArrayInputStream(body) : bodyStream;
        }

        /** The client's address and port. */
        public InetSocketAddress remote() {
            return remote;
        }
    }

    /**
     * A response sent whole. {@code contentType} null means no Content-Type header; {@code headers}
     * are more header fields (the server adds Content-Length and Connection).
     */
    public record Response(int status, String contentType, byte[] body, Map<String, String> headers) {
        public Response {
            headers = Map.copyOf(headers);
        }

        public Response(int status, String contentType, byte[] body) {
            this(status, contentType, body, Map.of());
        }

        public static Response json(int status, byte[] body) {
            return new Response(status, "application/json", body);
        }

        /** This response with one more header field. */
        public Response withHeader(String name, String value) {
            Map<String, String> more = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
            more.putAll(headers);
            more.put(name, value);
            return new Response(status, contentType, body, more);
        }
    }

    /**
     * How long a client may take. {@code idle}: a connection with no request under way (before its
     * first request, between keep-alive requests) is closed after it; a streamed request body that
     * sends nothing for it fails. {@code request}: from a request's first byte to its last (a body
     * read whole included), else it is answered 408 and the connection closed, so a client that
     * sends a byte at a time (slowloris) holds a connection no longer than this. {@code write}: a
     * write of the response that the client does not take for this long resets the connection.
     */
    public record Timeouts(Duration idle, Duration request, Duration write) {
        /** Above the JDK client's 30 s and Python clients' 15 s idle keep-alive, so they close first. */
        public static final Timeouts DEFAULT =
                new Timeouts(Duration.ofSeconds(120), Duration.ofSeconds(60), Duration.ofSeconds(300));

        public Timeouts(Duration idle, Duration request) {
            this(idle, request, DEFAULT_WRITE);
        }

        private static final Duration DEFAULT_WRITE = Duration.ofSeconds(300);
    }

    /**
     * How a server runs.
     *
     * @param timeouts the clients' time limits
     * @param tls the TLS context to serve HTTPS with, or null for plain HTTP
     * @param errors the body of the answers the server gives itself
     * @param streamBody given a request whose body is not read yet (empty), whether to hand the body
     *     to the handler as a stream ({@link Request#bodyStream()}, no size limit) instead of reading it
     *     whole first (at most 64 MiB, 413 above)
     */
    public record Options(Timeouts timeouts, SSLContext tls, ErrorBody errors, Predicate<Request> streamBody) {
        public static final Options DEFAULT = new Options(Timeouts.DEFAULT, null, ErrorBody.DEFAULT, r -> false);

        public Options {
            Objects.requireNonNull(timeouts, "timeouts");
            Objects.requireNonNull(errors, "errors");
            Objects.requireNonNull(streamBody, "streamBody");
        }

        public Options withTimeouts(Timeouts t) {
            return new Options(t, tls, errors, streamBody);
        }

        public Options withTls(SSLContext context) {
            return new Options(timeouts, context, errors, streamBody);
        }

        public Options withErrors(ErrorBody e) {
            return new Options(timeouts, tls, e, streamBody);
        }

        public Options withStreamBody(Predicate<Request> p) {
            return new Options(timeouts, tls, errors, p);
        }
    }

    private final ServerSocket serverSocket;
    private final Handler handler;
    private final String name;
    private final Options options;
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private final Map<CompletableFuture<Long>, Thread> active = new ConcurrentHashMap<>();
    private volatile boolean closing;

    private Http1Server(ServerSocket serverSocket, Handler handler, String name, Options options) {
        this.serverSocket = serverSocket;
        this.handler = handler;
        this.name = name;
        this.options = options;
    }

    /** Binds {@code host:port} (0 = any free port) and starts accepting, with {@link Options#DEFAULT}. */
    public static Http1Server start(String host, int port, Handler handler, String name) throws IOException {
        return start(host, port, handler, name, Options.DEFAULT);
    }

    /** Binds {@code host:port} (0 = any free port) and starts accepting. */
    public static Http1Server start(String host, int port, Handler handler, String name, Timeouts timeouts)
            throws IOException {
        return start(host, port, handler, name, Options.DEFAULT.withTimeouts(timeouts));
    }

    /** Binds {@code host:port} (0 = any free port) and starts accepting. */
    public static Http1Server start(String host, int port, Handler handler, String name, Options options)
            throws IOException {
        ServerSocket ss = options.tls() == null
                ? new ServerSocket()
                : options.tls().getServerSocketFactory().createServerSocket();
        try {
            ss.setReuseAddress(true);
            ss.bind(new InetSocketAddress(InetAddress.getByName(host), port), 1024);
        } catch (IOException e) {
            ss.close();
            throw e;
        }
        Http1Server server = new Http1Server(ss, handler, name, options);
        Thread.ofPlatform().daemon(true).name(name + "-accept").start(server::acceptLoop);
        Thread.ofVirtual().name(name + "-write-watch").start(server::watchWrites);
        return server;
    }

    public int port() {
        return serverSocket.getLocalPort();
    }

    /** The address and port the socket is bound to. */
    public InetSocketAddress address() {
        return (InetSocketAddress) serverSocket.getLocalSocketAddress();
    }

    /** Connections open now (accepted and not yet closed). */
    public int openConnections() {
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
            Connection c = new Connection(s);
            connections.add(c);
            Thread.ofVirtual().name(name + "-conn").start(() -> serve(c));
        }
    }

    /** Stops accepting new connections; open connections stay. */
    public void stopAccepting() {
        closing = true;
        closeQuietly(serverSocket);
    }

    /**
     * Waits up to {@code timeoutMillis} for running handlers, then closes every connection,
     * interrupts the handlers still running and waits up to 5 s more for them to end.
     */
    public void close(long timeoutMillis) {
        stopAccepting();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        for (CompletableFuture<Long> f : List.copyOf(active.keySet())) {
            long left = deadline - System.nanoTime();
            try {
                f.get(Math.max(0, left), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                log.debug("{}: a request handler was still running at close", name);
                break;
            } catch (Exception e) {
                log.debug("{}: handler ended with {}", name, e.toString());
            }
        }
        for (Connection c : List.copyOf(connections)) {
            closeQuietly(c.socket, false);
        }
        active.values().forEach(Thread::interrupt);
        long ended = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        for (CompletableFuture<Long> f : List.copyOf(active.keySet())) {
            try {
                f.get(Math.max(0, ended - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                log.warn("{}: some request handlers did not end within 5 s of closing", name);
                return;
            } catch (Exception e) {
                log.debug("{}: handler ended with {}", name, e.toString());
            }
        }
    }

    /** Abrupt: closes the listening socket and resets every connection (SO_LINGER 0). */
    public void reset() {
        stopAccepting();
        for (Connection c : List.copyOf(connections)) {
            closeQuietly(c.socket, true);
        }
    }

    /** One connection: its socket and the write under way on it, if any, for the write watch. */
    private static final class Connection {
        final Socket socket;
        volatile long writingSince;

        Connection(Socket socket) {
            this.socket = socket;
        }
    }

    /** Resets connections whose client took nothing of a write for {@link Timeouts#write}. */
    private void watchWrites() {
        long limit = options.timeouts().write().toNanos();
        long period = Math.max(50, Math.min(1000, options.timeouts().write().toMillis() / 4));
        while (!closing || !connections.isEmpty()) {
            try {
                Thread.sleep(period);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            for (Connection c : connections) {
                long since = c.writingSince;
                if (since != 0 && now - since > limit) {
                    log.warn(
                            "{}: the client at {} took nothing for {}; its connection is reset",
                            name,
                            c.socket.getRemoteSocketAddress(),
                            options.timeouts().write());
                    closeQuietly(c.socket, true);
                }
            }
        }
    }

    private void serve(Connection connection) {
        Socket socket = connection.socket;
        Timeouts timeouts = options.timeouts();
        try {
            socket.setTcpNoDelay(true);
            DeadlineInput deadline = new DeadlineInput(socket);
            PushbackInputStream in = new PushbackInputStream(new BufferedInputStream(deadline, 64 * 1024), 1);
            OutputStream out =
                    new BufferedOutputStream(new WatchedOutput(socket.getOutputStream(), connection), 64 * 1024);
            if (!awaitFirstByte(in, deadline, null)) {
                return;
            }
            InetSocketAddress remote = (InetSocketAddress) socket.getRemoteSocketAddress();
            while (!closing) {
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
                        settle = () -> settle(body, bodyRead);
                        deadline.eachRead(timeouts.idle());
                    } else {
                        request = head.request(Http1RequestReader.readBody(in, head.headers()));
                        bodyRead.complete(null);
                    }
                } catch (Http1RequestReader.BadRequest e) {
                    writeResponse(out, error(e.status, e.getMessage()), false);
                    return;
                } catch (SocketTimeoutException e) {
                    String why = "the request was not received within " + timeouts.request();
                    writeResponse(out, error(408, why), false);
                    return;
                }
                boolean keepAlive = keepAlive(request);
                Exchange exchange =
                        new Exchange(out, keepAlive, request.version().equals("HTTP/1.0"), settle);
                CompletableFuture<Long> handled = new CompletableFuture<>();
                Thread t = Thread.ofVirtual()
                        .name(name + "-handler")
                        .unstarted(() -> handle(request, exchange, socket, out, handled));
                active.put(handled, t);
                t.start();
                // A body the handler reads is the handler's until its end: then the connection is
                // read again, or, if the handler left some of it, closed after the response.
                CompletableFuture.anyOf(bodyRead, handled).join();
                if (!bodyRead.isDone()) {
                    handled.join();
                    lingeringClose(socket, in, deadline);
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
            connections.remove(connection);
            closeQuietly(socket, false);
        }
    }

    /**
     * Reads what a handler left of a streamed body, up to {@link #DRAIN_LIMIT} bytes, so that the
     * connection can serve the next request; false when more is left (the response then closes the
     * connection, and says so) or the body could not be read.
     */
    private static boolean settle(InputStream body, CompletableFuture<Void> bodyRead) {
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
    private void lingeringClose(Socket socket, InputStream in, DeadlineInput deadline) {
        try {
            endOutput(socket);
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

    private Response error(int status, String message) {
        return Response.json(status, options.errors().of(status, message));
    }

    /**
     * Waits for the first byte of the connection's next request and leaves it unread. False when
     * the connection ended, failed, or stayed idle for {@link Timeouts#idle} with no request under
     * way ({@code handled} done, or null before the first request): a request being served is
     * never timed out here.
     */
    private boolean awaitFirstByte(PushbackInputStream in, DeadlineInput deadline, CompletableFuture<Long> handled) {
        Duration idle = options.timeouts().idle();
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

    private void handle(
            Request request, Exchange exchange, Socket socket, OutputStream out, CompletableFuture<Long> handled) {
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
                    closeQuietly(socket, false);
                    return;
                }
                log.error("{}: {} {} failed", name, request.method(), request.path(), e);
                response = error(500, "internal error serving " + request.path() + ": " + e);
            }
            if (exchange.began()) {
                if (!exchange.finish()) {
                    closeQuietly(socket, false);
                } else if (!exchange.keepAlive) {
                    endOutput(socket);
                }
                return;
            }
            if (response == null) {
                closeQuietly(socket, true);
                return;
            }
            if (!exchange.markResponding()) {
                log.debug("{}: client of {} {} left before the response", name, request.method(), request.path());
                return;
            }
            exchange.settleBody();
            try {
                writeResponse(out, exchange.withHeaders(response), exchange.keepAlive);
                exchange.markResponded();
                if (!exchange.keepAlive) {
                    // The client reads the answer to its end, then the connection ends.
                    endOutput(socket);
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
        out.write(head(r.status(), r.contentType(), r.headers(), r.body().length, keepAlive));
        out.write(r.body());
        out.flush();
    }

    /** The status line and header fields; {@code length} -1: chunked, -2: none (the body ends with the connection). */
    private static byte[] head(
            int status, String contentType, Map<String, String> headers, long length, boolean keepAlive) {
        StringBuilder head = new StringBuilder(128);
        head.append("HTTP/1.1 ")
                .append(status)
                .append(' ')
                .append(reason(status))
                .append("\r\n");
        if (contentType != null) {
            head.append("Content-Type: ").append(contentType).append("\r\n");
        }
        headers.forEach((k, v) -> {
            if (!k.equalsIgnoreCase("content-type") || contentType == null) {
                head.append(k).append(": ").append(v).append("\r\n");
            }
        });
        if (status == 204 || status == 304) {
            // No body, and no length.
        } else if (length >= 0) {
            head.append("Content-Length: ").append(length).append("\r\n");
        } else if (length == Exchange.CHUNKED) {
            head.append("Transfer-Encoding: chunked\r\n");
        }
        if (!keepAlive) {
            head.append("Connection: close\r\n");
        }
        head.append("\r\n");
        return head.toString().getBytes(StandardCharsets.UTF_8);
    }

    static String reason(int status) {
        return switch (status) {
            case 100 -> "Continue";
            case 200 -> "OK";
            case 201 -> "Created";
            case 202 -> "Accepted";
            case 204 -> "No Content";
            case 400 -> "Bad Request";
            case 401 -> "Unauthorized";
            case 403 -> "Forbidden";
            case 404 -> "Not Found";
            case 408 -> "Request Timeout";
            case 405 -> "Method Not Allowed";
            case 409 -> "Conflict";
            case 411 -> "Length Required";
            case 413 -> "Content Too Large";
            case 422 -> "Unprocessable Content";
            case 429 -> "Too Many Requests";
            case 431 -> "Request Header Fields Too Large";
            case 500 -> "Internal Server Error";
            case 501 -> "Not Implemented";
            case 502 -> "Bad Gateway";
            case 503 -> "Service Unavailable";
            case 504 -> "Gateway Timeout";
            default -> "Status " + status;
        };
    }

    /**
     * The connection's state as the handler sees it (whether the client is still there), and the
     * way to begin a streamed response.
     */
    public static final class Exchange {
        /** {@link #respond} length: unknown, so the body goes in chunked transfer coding. */
        public static final long CHUNKED = -1;

        private static final int OPEN = 0;
        private static final int STREAMING = 1;
        private static final int RESPONDED = 2;
        private static final int DISCONNECTED = 3;

        private int state = OPEN;
        private boolean began;
        private final List<Runnable> onDisconnect = new ArrayList<>();
        private final CompletableFuture<Void> disconnected = new CompletableFuture<>();
        private final Map<String, String> responseHeaders = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        private final OutputStream connection;
        private final boolean http10;
        private final BooleanSupplier settle;
        private boolean keepAlive;
        private BodyStream body;

        Exchange(OutputStream connection, boolean keepAlive, boolean http10, BooleanSupplier settle) {
            this.connection = connection;
            this.keepAlive = keepAlive;
            this.http10 = http10;
            this.settle = settle;
        }

        /** Before the response: a request body the handler left unread closes the connection after it. */
        void settleBody() {
            if (!settle.getAsBoolean()) {
                keepAlive = false;
            }
        }

        /**
         * Runs {@code action} once if the client disconnects before the response has been sent
         * whole (at once if it already has): while a request is served, or while its streamed
         * response is being written.
         */
        public void onDisconnect(Runnable action) {
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

        /** Completes when the client disconnects before the response has been sent whole. */
        public CompletableFuture<Void> disconnected() {
            return disconnected;
        }

        /** True while the client has neither gone nor been answered (a streamed answer under way counts as open). */
        public synchronized boolean isOpen() {
            return state == OPEN || state == STREAMING;
        }

        /** Sets a header field of the response, whichever way it is sent; before it begins. */
        public synchronized void setHeader(String name, String value) {
            responseHeaders.put(name, value);
        }

        /** Whether a response was begun with {@link #respond}. */
        public synchronized boolean began() {
            return began;
        }

        /**
         * Begins the response: writes the status line and header fields ({@link #setHeader}) and
         * returns the stream to write the body to. {@code length} is the body's exact length, or
         * {@link #CHUNKED} when it is unknown (for an HTTP/1.0 client the body then ends with the
         * connection). Each {@code flush} of the stream sends what was written (an event of a
         * Server-Sent Events stream); closing it ends the body, and the server closes it when the
         * handler returns if the handler did not. A body shorter than {@code length} closes the
         * connection.
         *
         * @throws IOException when the client is gone or cannot be written to
         * @throws IllegalStateException when a response was begun already
         */
        public OutputStream respond(int status, long length) throws IOException {
            synchronized (this) {
                if (began) {
                    throw new IllegalStateException("the response has begun already");
                }
                if (state == DISCONNECTED) {
                    throw new IOException("the client closed the connection");
                }
                began = true;
                state = STREAMING;
            }
            settleBody();
            long framing = length;
            if (length < 0 && http10) {
                framing = -2;
                keepAlive = false;
            }
            connection.write(head(status, null, responseHeaders, framing, keepAlive));
            boolean noBody = status == 204 || status == 304;
            if (noBody || length == 0) {
                connection.flush();
                body = new BodyStream(connection, 0, false);
            } else if (framing == CHUNKED) {
                body = new BodyStream(connection, -1, true);
            } else {
                body = new BodyStream(connection, length, false);
            }
            return body.buffered;
        }

        /** {@link #respond} with a body sent whole: {@code Content-Type} and the bytes. */
        public void send(int status, String contentType, byte[] bytes) throws IOException {
            if (contentType != null) {
                setHeader("Content-Type", contentType);
            }
            try (OutputStream out = respond(status, bytes.length)) {
                out.write(bytes);
            }
        }

        synchronized Response withHeaders(Response r) {
            if (responseHeaders.isEmpty()) {
                return r;
            }
            Map<String, String> all = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
            all.putAll(responseHeaders);
            all.putAll(r.headers());
            return new Response(r.status(), r.contentType(), r.body(), all);
        }

        /** Ends a begun response; false when it did not end whole (the connection must close). */
        boolean finish() {
            boolean whole;
            try {
                body.buffered.close();
                whole = body.whole();
            } catch (IOException e) {
                whole = false;
            }
            markResponded();
            return whole;
        }

        boolean reusable() {
            return keepAlive;
        }

        synchronized boolean markResponding() {
            if (state != OPEN) {
                return false;
            }
            state = RESPONDED;
            return true;
        }

        synchronized void markResponded() {
            if (state == STREAMING) {
                state = RESPONDED;
            }
        }

        void markDisconnected() {
            List<Runnable> actions;
            synchronized (this) {
                if (state != OPEN && state != STREAMING) {
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
     * A begun response's body: of a known length (more is refused, less is noticed), in chunked
     * transfer coding, or to the end of the connection. {@link #buffered} is what the handler
     * writes to: its flush sends a chunk and flushes the socket; its close ends the body, not the
     * connection.
     */
    private static final class BodyStream extends OutputStream {
        private final OutputStream connection;
        private final boolean chunked;
        private final long length;
        private long written;
        private boolean closed;
        final OutputStream buffered;

        BodyStream(OutputStream connection, long length, boolean chunked) {
            this.connection = connection;
            this.length = length;
            this.chunked = chunked;
            // Chunks of up to 16 KiB from small writes; large writes go through as one chunk.
            this.buffered = chunked ? new BufferedOutputStream(this, 16 * 1024) : this;
        }

        boolean whole() {
            return chunked || length < 0 || written == length;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            if (closed) {
                throw new IOException("the response body is closed");
            }
            if (len == 0) {
                return;
            }
            if (length >= 0 && written + len > length) {
                throw new IOException("the response body is longer than its Content-Length " + length);
            }
            if (chunked) {
                connection.write((Integer.toHexString(len) + "\r\n").getBytes(StandardCharsets.US_ASCII));
                connection.write(b, off, len);
                connection.write(CRLF);
            } else {
                connection.write(b, off, len);
            }
            written += len;
        }

        @Override
        public void flush() throws IOException {
            if (!closed) {
                connection.flush();
            }
        }

        @Override
        public void close() throws IOException {
            if (closed) {
                return;
            }
            if (buffered != this) {
                buffered.flush();
            }
            closed = true;
            if (chunked) {
                connection.write(LAST_CHUNK);
            }
            connection.flush();
        }

        private static final byte[] CRLF = {'\r', '\n'};
        private static final byte[] LAST_CHUNK = "0\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    }

    /** The socket's output, each write timed for the write watch. */
    private static final class WatchedOutput extends OutputStream {
        private final OutputStream out;
        private final Connection connection;

        WatchedOutput(OutputStream out, Connection connection) {
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

    /**
     * The socket's input, each read bounded by a deadline when one is set: the socket's read
     * timeout is set to the time left before each read, so a client that trickles bytes cannot
     * stretch a request past it; or, for a streamed body, by a time per read.
     */
    private static final class DeadlineInput extends FilterInputStream {
        private final Socket socket;
        private long deadline;
        private boolean set;
        private Duration perRead;

        DeadlineInput(Socket socket) throws IOException {
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

    static String escape(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 8);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.toString();
    }

    /** Ends what the server sends on {@code s} (the client sees the end of the stream); closes it if that fails. */
    private static void endOutput(Socket s) {
        try {
            s.shutdownOutput();
        } catch (IOException | UnsupportedOperationException e) {
            closeQuietly(s, false);
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
