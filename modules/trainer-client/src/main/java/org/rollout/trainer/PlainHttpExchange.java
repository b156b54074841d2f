package org.rollout.trainer;

import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One HTTP/1.1 request and its response over a plain socket, for the batch pull: {@code
 * java.net.http} reads a response into a freshly allocated 16 KiB heap buffer per socket read and
 * hands each to the reading thread through a queue, which made the Java client pull a batch at a
 * fraction of what the socket carries. Here the reading thread reads the socket itself, through one
 * buffer, straight into the batch decoder.
 *
 * <p>The socket is a {@link SocketChannel}'s, so a thread blocked on it is woken by its interrupt
 * (the channel closes, the read fails with the interrupt flag set) and by {@link #close()}. The
 * connection is kept alive (HTTP/1.1): a response read to the end of its body, that the server
 * did not end with {@code Connection: close}, gives its connection back to the {@link Pool} for
 * the next exchange with the same host and port; a response closed before its end closes it. A
 * kept connection that the server had closed meanwhile fails before the status line, and the
 * request goes once more on a new connection (a pull is safe to send again: one whose answer
 * never left the gateway hands its batch to the next pull). Plain {@code http} only.
 */
final class PlainHttpExchange implements AutoCloseable {
    private static final int BUFFER = 1 << 16;
    private static final int MAX_HEAD = 64 * 1024;

    /**
     * The connections of one client: those of exchanges under way (closed by {@link #close()} from
     * any thread) and the idle ones kept for the next exchange, at most {@value #MAX_IDLE} per host
     * and port, each for at most {@link #IDLE_FOR} (below the gateway's 120 s idle timeout, so the
     * client closes first). Thread-safe.
     */
    static final class Pool implements AutoCloseable {
        static final int MAX_IDLE = 4;
        static final Duration IDLE_FOR = Duration.ofSeconds(60);

        private record Idle(Connection connection, long since) {}

        private final Set<Connection> inUse = ConcurrentHashMap.newKeySet();
        private final Map<String, ArrayDeque<Idle>> idle = new HashMap<>();
        private final AtomicLong opened = new AtomicLong();
        private boolean closed;

        /** Connections opened so far (a connection kept alive across exchanges counts once). */
        long opened() {
            return opened.get();
        }

        /** Idle connections kept now. */
        synchronized int idle() {
            return idle.values().stream().mapToInt(ArrayDeque::size).sum();
        }

        /** A kept connection to {@code key}, or null. */
        Connection take(String key) {
            long now = System.nanoTime();
            List<Connection> expired = new ArrayList<>();
            Connection found = null;
            synchronized (this) {
                ArrayDeque<Idle> q = idle.get(key);
                while (q != null && !q.isEmpty()) {
                    Idle i = q.pollLast();
                    if (now - i.since() > IDLE_FOR.toNanos()
                            || !i.connection().channel.isOpen()) {
                        expired.add(i.connection());
                        continue;
                    }
                    found = i.connection();
                    break;
                }
                if (found != null) {
                    inUse.add(found);
                }
            }
            expired.forEach(Connection::closeQuietly);
            return found;
        }

        /** A new connection, open and connected. */
        Connection open(String host, int port, Duration connectTimeout) throws IOException {
            SocketChannel channel = SocketChannel.open();
            Connection c = new Connection(host + ":" + port, channel);
            synchronized (this) {
                if (closed) {
                    c.closeQuietly();
                    throw new IOException("the client is closed");
                }
                inUse.add(c);
            }
            try {
                try {
                    channel.socket().connect(new InetSocketAddress(host, port), timeoutMillis(connectTimeout));
                } catch (SocketTimeoutException e) {
                    ConnectException ce =
                            new ConnectException("connect timed out after " + connectTimeout.toMillis() + " ms");
                    ce.initCause(e);
                    throw ce;
                }
                channel.socket().setTcpNoDelay(true);
                c.in = new BufferedInputStream(channel.socket().getInputStream(), BUFFER);
                opened.incrementAndGet();
                return c;
            } catch (IOException | RuntimeException e) {
                discard(c);
                throw e;
            }
        }

        /** Keeps {@code c} for the next exchange with its host (or closes it: too many idle, closed). */
        void giveBack(Connection c) {
            boolean kept = false;
            synchronized (this) {
                inUse.remove(c);
                if (!closed && c.channel.isOpen()) {
                    ArrayDeque<Idle> q = idle.computeIfAbsent(c.key, k -> new ArrayDeque<>());
                    if (q.size() < MAX_IDLE) {
                        q.addLast(new Idle(c, System.nanoTime()));
                        kept = true;
                    }
                }
            }
            if (!kept) {
                c.closeQuietly();
            }
        }

        /** Closes {@code c} for good. */
        void discard(Connection c) {
            synchronized (this) {
                inUse.remove(c);
            }
            c.closeQuietly();
        }

        /** Closes every connection, idle or in use (exchanges under way fail). Idempotent. */
        @Override
        public void close() {
            List<Connection> all = new ArrayList<>();
            synchronized (this) {
                closed = true;
                all.addAll(inUse);
                inUse.clear();
                idle.values().forEach(q -> q.forEach(i -> all.add(i.connection())));
                idle.clear();
            }
            all.forEach(Connection::closeQuietly);
        }
    }

    /** One connection and the buffer its responses are read through (kept with it across exchanges). */
    static final class Connection {
        final String key;
        final SocketChannel channel;
        InputStream in;

        Connection(String key, SocketChannel channel) {
            this.key = key;
            this.channel = channel;
        }

        void closeQuietly() {
            try {
                channel.close();
            } catch (IOException e) {
                // closing: nothing to do
            }
        }
    }

    private final Connection connection;
    private final Pool pool;
    private final int status;
    private final Map<String, String> headers;
    private final InputStream body;
    /** Whether the connection may carry the next exchange once the body is read to its end. */
    private final boolean reusable;

    private boolean done;

    private PlainHttpExchange(
            Connection connection,
            Pool pool,
            int status,
            Map<String, String> headers,
            InputStream body,
            boolean reusable) {
        this.connection = connection;
        this.pool = pool;
        this.status = status;
        this.headers = headers;
        this.body = body;
        this.reusable = reusable;
    }

    /**
     * Sends {@code POST pathAndQuery} with no body to {@code base} and reads the response's head, on
     * a connection kept from an earlier exchange with the same host and port when there is one.
     *
     * @param connectTimeout how long the connection may take ({@link ConnectException} after it)
     * @param headTimeout how long the response's head may take to arrive
     * @param pool where the connection is taken from and given back to; whoever owns it can close
     *     every connection from another thread
     */
    static PlainHttpExchange post(
            URI base,
            String pathAndQuery,
            Map<String, String> headers,
            Duration connectTimeout,
            Duration headTimeout,
            Pool pool)
            throws IOException {
        String host = base.getHost();
        int port = base.getPort() < 0 ? 80 : base.getPort();
        String key = host + ":" + port;
        StringBuilder request = new StringBuilder()
                .append("POST ")
                .append(pathAndQuery)
                .append(" HTTP/1.1\r\nHost: ")
                .append(host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host)
                .append(':')
                .append(port)
                .append("\r\nContent-Length: 0\r\n");
        headers.forEach((k, v) -> request.append(k).append(": ").append(v).append("\r\n"));
        request.append("\r\n");
        byte[] bytes = request.toString().getBytes(StandardCharsets.ISO_8859_1);
        Connection kept = pool.take(key);
        if (kept != null) {
            try {
                return exchange(kept, bytes, base, headTimeout, pool, true);
            } catch (StaleConnectionException e) {
                // The gateway had closed the kept connection (its idle timeout, a restart): once more
                // on a new one.
            }
        }
        return exchange(pool.open(host, port, connectTimeout), bytes, base, headTimeout, pool, false);
    }

    /** The server closed a kept connection before answering: the request may go again on a new one. */
    private static final class StaleConnectionException extends IOException {
        private static final long serialVersionUID = 1L;

        StaleConnectionException(IOException cause) {
            super(cause.getMessage(), cause);
        }
    }

    private static PlainHttpExchange exchange(
            Connection c, byte[] request, URI base, Duration headTimeout, Pool pool, boolean kept) throws IOException {
        SocketChannel channel = c.channel;
        boolean handedOver = false;
        try {
            String statusLine;
            try {
                ByteBuffer out = ByteBuffer.wrap(request);
                while (out.hasRemaining()) {
                    channel.write(out);
                }
                channel.socket().setSoTimeout(timeoutMillis(headTimeout));
                statusLine = line(c.in, base);
            } catch (SocketTimeoutException e) {
                throw e;
            } catch (IOException e) {
                if (kept && !Thread.currentThread().isInterrupted() && !(e instanceof InterruptedIOException)) {
                    throw new StaleConnectionException(e);
                }
                throw e;
            }
            InputStream in = c.in;
            String[] parts = statusLine.split(" ", 3);
            if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
                throw new IOException("not an HTTP/1.x response from " + base + ": '" + statusLine + "'");
            }
            int status;
            try {
                status = Integer.parseInt(parts[1]);
            } catch (NumberFormatException e) {
                throw new IOException("malformed status line from " + base + ": '" + statusLine + "'", e);
            }
            boolean keepAlive = parts[0].equals("HTTP/1.1");
            long length = -1;
            boolean chunked = false;
            Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
            int headBytes = statusLine.length();
            for (String h = line(in, base); !h.isEmpty(); h = line(in, base)) {
                headBytes += h.length();
                if (headBytes > MAX_HEAD) {
                    throw new IOException("the response head from " + base + " exceeds " + MAX_HEAD + " bytes");
                }
                int colon = h.indexOf(':');
                if (colon <= 0) {
                    throw new IOException("malformed header line from " + base + ": '" + h + "'");
                }
                String name = h.substring(0, colon).trim().toLowerCase(Locale.ROOT);
                String value = h.substring(colon + 1).trim();
                headers.merge(name, value, (a, b) -> a + ", " + b);
                if (name.equals("content-length")) {
                    try {
                        length = Long.parseLong(value);
                    } catch (NumberFormatException e) {
                        throw new IOException("malformed Content-Length from " + base + ": '" + value + "'", e);
                    }
                } else if (name.equals("transfer-encoding")
                        && value.toLowerCase(Locale.ROOT).contains("chunked")) {
                    chunked = true;
                } else if (name.equals("connection")) {
                    String v = value.toLowerCase(Locale.ROOT);
                    if (v.contains("close")) {
                        keepAlive = false;
                    } else if (v.contains("keep-alive")) {
                        keepAlive = true;
                    }
                }
            }
            // The body's pace is watched by the caller (read_idle_timeout), which closes this.
            channel.socket().setSoTimeout(0);
            InputStream body;
            if (status == 204 || status == 304 || (status >= 100 && status < 200)) {
                body = new NoBody();
            } else if (chunked) {
                body = new Chunked(in, base);
            } else if (length >= 0) {
                body = new Bounded(in, length, base);
            } else {
                body = in;
                keepAlive = false; // the body ends with the connection
            }
            handedOver = true;
            return new PlainHttpExchange(c, pool, status, headers, body, keepAlive);
        } finally {
            if (!handedOver) {
                pool.discard(c);
            }
        }
    }

    int status() {
        return status;
    }

    /** A header of the response (any case), or null. */
    String header(String name) {
        return headers.get(name);
    }

    /**
     * The response's body; closing it ends the exchange: the connection goes back to the pool when
     * the body was read to its end, else it closes.
     */
    InputStream body() {
        return new FilterInputStream(body) {
            @Override
            public void close() throws IOException {
                PlainHttpExchange.this.close();
            }
        };
    }

    /** Whether the body was read to its end. */
    private boolean bodyEnded() {
        if (body instanceof Bounded b) {
            return b.left == 0;
        }
        if (body instanceof Chunked ch) {
            return ch.ended;
        }
        return body instanceof NoBody;
    }

    /** The body of a response that has none (204, 304, 1xx). */
    private static final class NoBody extends InputStream {
        @Override
        public int read() {
            return -1;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            return len == 0 ? 0 : -1;
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (done) {
                return;
            }
            done = true;
        }
        boolean intact;
        try {
            intact = reusable && bodyEnded() && connection.in.available() == 0;
        } catch (IOException e) {
            intact = false;
        }
        if (intact && !Thread.currentThread().isInterrupted()) {
            pool.giveBack(connection);
        } else {
            pool.discard(connection);
        }
    }

    private static int timeoutMillis(Duration d) {
        long ms = d.toMillis();
        return ms <= 0 ? 1 : (int) Math.min(Integer.MAX_VALUE, ms);
    }

    /** One line of the head, without its CRLF (a bare LF is accepted). */
    private static String line(InputStream in, URI base) throws IOException {
        StringBuilder s = new StringBuilder();
        while (true) {
            int c = in.read();
            if (c < 0) {
                throw new EOFException("the connection to " + base + " closed in the middle of the response head");
            }
            if (c == '\n') {
                int n = s.length();
                return n > 0 && s.charAt(n - 1) == '\r' ? s.substring(0, n - 1) : s.toString();
            }
            if (s.length() >= MAX_HEAD) {
                throw new IOException("a response header line from " + base + " exceeds " + MAX_HEAD + " bytes");
            }
            s.append((char) c);
        }
    }

    /** A body of {@code Content-Length} bytes: ends there, and fails when the connection ends first. */
    private static final class Bounded extends FilterInputStream {
        private final URI base;
        private final long length;
        private volatile long left;

        Bounded(InputStream in, long length, URI base) {
            super(in);
            this.length = length;
            this.left = length;
            this.base = base;
        }

        @Override
        public int read() throws IOException {
            if (left == 0) {
                return -1;
            }
            int b = in.read();
            if (b < 0) {
                throw cut();
            }
            left--;
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            if (left == 0) {
                return -1;
            }
            int n = in.read(b, off, (int) Math.min(len, left));
            if (n < 0) {
                throw cut();
            }
            left -= n;
            return n;
        }

        private IOException cut() {
            return new EOFException(
                    "the connection to " + base + " closed after " + (length - left) + " of " + length + " body bytes");
        }
    }

    /** A chunked body, decoded; trailers are read and dropped. */
    private static final class Chunked extends InputStream {
        private final InputStream in;
        private final URI base;
        private long left;
        private volatile boolean ended;

        Chunked(InputStream in, URI base) {
            this.in = in;
            this.base = base;
        }

        private boolean nextChunk() throws IOException {
            if (ended) {
                return false;
            }
            if (left == 0) {
                String size = line(in, base);
                int semi = size.indexOf(';');
                try {
                    left = Long.parseLong((semi < 0 ? size : size.substring(0, semi)).trim(), 16);
                } catch (NumberFormatException e) {
                    throw new IOException("malformed chunk size from " + base + ": '" + size + "'", e);
                }
                if (left == 0) {
                    while (!line(in, base).isEmpty()) {
                        // trailers
                    }
                    ended = true;
                    return false;
                }
            }
            return true;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            int n = read(one, 0, 1);
            return n < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            if (!nextChunk()) {
                return -1;
            }
            int n = in.read(b, off, (int) Math.min(len, left));
            if (n < 0) {
                throw new EOFException("the connection to " + base + " closed in the middle of a chunk");
            }
            left -= n;
            if (left == 0) {
                String end = line(in, base);
                if (!end.isEmpty()) {
                    throw new IOException("a chunk from " + base + " does not end with CRLF");
                }
            }
            return n;
        }
    }
}
