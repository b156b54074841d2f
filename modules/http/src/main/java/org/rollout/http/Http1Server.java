package org.rollout.http;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
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
import java.util.concurrent.atomic.AtomicLong;
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
 * <p>Thread-safe. Handlers run concurrently, one virtual thread per request. A connection's loop is
 * {@link Http1Connection}; responses are written by {@link Http1ResponseWriter}, watched by {@link
 * Http1WriteWatch}; an unread request body is dropped by {@link Http1BodyDrain}.
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
        ErrorBody DEFAULT = (status, message) -> ("{\"error\":{\"message\":\"" + Http1Errors.escape(message)
                        + "\",\"code\":" + status + "}}")
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
     * How long a client may take. {@code idle}: a connection with no request under way (between
     * keep-alive requests) is closed after it; a streamed request body that sends nothing for it
     * fails. {@code firstRequest}: a new connection that sends no byte of a request for this long is
     * closed (connections opened and left idle would otherwise hold the server's file descriptors,
     * and with them the node's outgoing connections, for a whole {@code idle}). {@code request}: from
     * a request's first byte to its last (a body read whole included), else it is answered 408 and
     * the connection closed, so a client that sends a byte at a time (slowloris) holds a connection
     * no longer than this. {@code write}: a write of the response that the client does not take for
     * this long resets the connection.
     */
    public record Timeouts(Duration idle, Duration firstRequest, Duration request, Duration write) {
        /** A new connection's wait for its first request when not given: 10 s, or {@code idle} if shorter. */
        public static final Duration FIRST_REQUEST = Duration.ofSeconds(10);

        private static final Duration DEFAULT_WRITE = Duration.ofSeconds(300);

        /** Above the JDK client's 30 s and Python clients' 15 s idle keep-alive, so they close first. */
        public static final Timeouts DEFAULT = new Timeouts(Duration.ofSeconds(120), Duration.ofSeconds(60));

        public Timeouts {
            Objects.requireNonNull(idle, "idle");
            Objects.requireNonNull(firstRequest, "firstRequest");
            Objects.requireNonNull(request, "request");
            Objects.requireNonNull(write, "write");
        }

        public Timeouts(Duration idle, Duration request, Duration write) {
            this(idle, idle.compareTo(FIRST_REQUEST) < 0 ? idle : FIRST_REQUEST, request, write);
        }

        public Timeouts(Duration idle, Duration request) {
            this(idle, request, DEFAULT_WRITE);
        }
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
    private final Set<Http1Connection> connections = ConcurrentHashMap.newKeySet();
    private final Map<CompletableFuture<Long>, Thread> active = new ConcurrentHashMap<>();
    private final AtomicLong accepted = new AtomicLong();
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
        Thread.ofVirtual()
                .name(name + "-write-watch")
                .start(new Http1WriteWatch(name, options.timeouts().write(), server.connections, server::isClosing));
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

    /** Connections accepted since the server started (a client that keeps its connection alive adds one). */
    public long connectionsAccepted() {
        return accepted.get();
    }

    /** Accepts until closed; a failed accept while the socket is open is retried ({@link Http1AcceptRetry}). */
    private void acceptLoop() {
        Http1AcceptRetry.acceptUntilClosed(serverSocket, name, this::isClosing, s -> {
            accepted.incrementAndGet();
            Http1Connection c = new Http1Connection(this, s, handler, name, options);
            connections.add(c);
            Thread.ofVirtual().name(name + "-conn").start(c::serve);
        });
    }

    /** Stops accepting new connections; open connections stay. */
    public void stopAccepting() {
        closing = true;
        Http1Sockets.closeQuietly(serverSocket);
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
        for (Http1Connection c : List.copyOf(connections)) {
            Http1Sockets.closeQuietly(c.socket, false);
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

    boolean isClosing() {
        return closing;
    }

    /** A handler begun on {@code thread}, until {@code handled} completes: {@link #close} waits for it. */
    void track(CompletableFuture<Long> handled, Thread thread) {
        active.put(handled, thread);
    }

    void untrack(CompletableFuture<Long> handled) {
        active.remove(handled);
    }

    /** Forgets a connection that ended (its socket is closed next). */
    void ended(Http1Connection connection) {
        connections.remove(connection);
    }

    /** Abrupt: closes the listening socket and resets every connection (SO_LINGER 0). */
    public void reset() {
        stopAccepting();
        for (Http1Connection c : List.copyOf(connections)) {
            Http1Sockets.closeQuietly(c.socket, true);
        }
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
        private Http1ResponseWriter.Body body;

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
            connection.write(Http1ResponseWriter.head(status, null, responseHeaders, framing, keepAlive));
            // The head goes at once, as the body begins: a client learns the status and headers (a
            // batch's id) before the body, so one whose stream is cut midway can say what it missed.
            connection.flush();
            boolean noBody = status == 204 || status == 304;
            if (noBody || length == 0) {
                body = new Http1ResponseWriter.Body(connection, 0, false);
            } else if (framing == CHUNKED) {
                body = new Http1ResponseWriter.Body(connection, -1, true);
            } else {
                body = new Http1ResponseWriter.Body(connection, length, false);
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
}
