package org.rollout.trainer;

import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * One HTTP/1.1 request and its response over a plain socket, for the batch pull: {@code
 * java.net.http} reads a response into a freshly allocated 16 KiB heap buffer per socket read and
 * hands each to the reading thread through a queue, which made the Java client pull a batch at a
 * fraction of what the socket carries. Here the reading thread reads the socket itself, through one
 * buffer, straight into the batch decoder.
 *
 * <p>The socket is a {@link SocketChannel}'s, so a thread blocked on it is woken by its interrupt
 * (the channel closes, the read fails with the interrupt flag set) and by {@link #close()}. One
 * connection per exchange ({@code Connection: close}); plain {@code http} only.
 */
final class PlainHttpExchange implements AutoCloseable {
    private static final int BUFFER = 1 << 16;
    private static final int MAX_HEAD = 64 * 1024;

    private final SocketChannel channel;
    private final Set<SocketChannel> open;
    private final int status;
    private final InputStream body;

    private PlainHttpExchange(SocketChannel channel, Set<SocketChannel> open, int status, InputStream body) {
        this.channel = channel;
        this.open = open;
        this.status = status;
        this.body = body;
    }

    /**
     * Sends {@code POST pathAndQuery} with no body to {@code base} and reads the response's head.
     *
     * @param connectTimeout how long the connection may take ({@link ConnectException} after it)
     * @param headTimeout how long the response's head may take to arrive
     * @param open where the connection is registered while it is open, so that whoever owns the
     *     set can close it from another thread
     */
    static PlainHttpExchange post(
            URI base,
            String pathAndQuery,
            Map<String, String> headers,
            Duration connectTimeout,
            Duration headTimeout,
            Set<SocketChannel> open)
            throws IOException {
        String host = base.getHost();
        int port = base.getPort() < 0 ? 80 : base.getPort();
        SocketChannel channel = SocketChannel.open();
        open.add(channel);
        boolean done = false;
        try {
            try {
                channel.socket().connect(new InetSocketAddress(host, port), timeoutMillis(connectTimeout));
            } catch (SocketTimeoutException e) {
                ConnectException c =
                        new ConnectException("connect timed out after " + connectTimeout.toMillis() + " ms");
                c.initCause(e);
                throw c;
            }
            channel.socket().setTcpNoDelay(true);
            StringBuilder request = new StringBuilder()
                    .append("POST ")
                    .append(pathAndQuery)
                    .append(" HTTP/1.1\r\nHost: ")
                    .append(host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host)
                    .append(':')
                    .append(port)
                    .append("\r\nContent-Length: 0\r\nConnection: close\r\n");
            headers.forEach((k, v) -> request.append(k).append(": ").append(v).append("\r\n"));
            request.append("\r\n");
            ByteBuffer out = ByteBuffer.wrap(request.toString().getBytes(StandardCharsets.ISO_8859_1));
            while (out.hasRemaining()) {
                channel.write(out);
            }
            channel.socket().setSoTimeout(timeoutMillis(headTimeout));
            InputStream in = new BufferedInputStream(channel.socket().getInputStream(), BUFFER);
            String statusLine = line(in, base);
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
            long length = -1;
            boolean chunked = false;
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
                if (name.equals("content-length")) {
                    try {
                        length = Long.parseLong(value);
                    } catch (NumberFormatException e) {
                        throw new IOException("malformed Content-Length from " + base + ": '" + value + "'", e);
                    }
                } else if (name.equals("transfer-encoding")
                        && value.toLowerCase(Locale.ROOT).contains("chunked")) {
                    chunked = true;
                }
            }
            // The body's pace is watched by the caller (read_idle_timeout), which closes this.
            channel.socket().setSoTimeout(0);
            InputStream body;
            if (status == 204 || status == 304 || (status >= 100 && status < 200)) {
                body = InputStream.nullInputStream();
            } else if (chunked) {
                body = new Chunked(in, base);
            } else if (length >= 0) {
                body = new Bounded(in, length, base);
            } else {
                body = in;
            }
            done = true;
            return new PlainHttpExchange(channel, open, status, body);
        } finally {
            if (!done) {
                open.remove(channel);
                channel.close();
            }
        }
    }

    int status() {
        return status;
    }

    /** The response's body; closing it closes the connection. */
    InputStream body() {
        return new FilterInputStream(body) {
            @Override
            public void close() throws IOException {
                PlainHttpExchange.this.close();
            }
        };
    }

    @Override
    public void close() throws IOException {
        open.remove(channel);
        channel.close();
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
        private long left;

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
        private boolean ended;

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
