package org.rollout.http;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Reads one HTTP/1.1 request from a stream: the request line, the header fields, and a body framed
 * by {@code Content-Length} or chunked transfer coding (answering {@code Expect: 100-continue}
 * first). Holds no state between requests and does no I/O besides the streams it is given, so it
 * is tested on bytes alone ({@code Http1RequestReaderTest}, {@code Http1RequestReaderFuzzTest}).
 *
 * <p>What it refuses, and how: a malformed request line, header line, {@code Content-Length} or
 * chunk size is a {@link BadRequest} with status 400; a line longer than {@link #MAX_LINE} or header
 * fields above {@link #MAX_HEADER_BYTES} in all, 431; a body above {@link #MAX_BODY}, 413. A stream
 * that ends inside a request is an {@link IOException} (the client left: nobody to answer). Nothing
 * else is thrown, and every read is bounded by those limits, so no input makes it loop or grow
 * without end; how long a client may take is the server's to bound ({@link Http1Server}).
 *
 * <p>A body may also be left on the stream and read as it arrives ({@link #readHead} then {@link
 * #bodyStream}): the same framing and the same refusals, without {@link #MAX_BODY}, for uploads a
 * handler copies to disk rather than holds.
 */
final class Http1RequestReader {
    static final int MAX_LINE = 16 * 1024;
    static final int MAX_HEADER_BYTES = 64 * 1024;
    static final int MAX_BODY = 64 * 1024 * 1024;

    private Http1RequestReader() {}

    /** A request that cannot be served as sent; answered with {@code status} and the connection closed. */
    static final class BadRequest extends Exception {
        final int status;

        BadRequest(int status, String message) {
            super(message);
            this.status = status;
        }
    }

    /**
     * Reads one request from {@code in}; null on a clean end of stream before its first byte.
     * Empty lines before the request line are skipped (RFC 9112 §2.2).
     *
     * @param out where {@code 100 Continue} is written when the request expects it
     */
    static Http1Server.Request read(InputStream in, OutputStream out, InetSocketAddress remote)
            throws IOException, BadRequest {
        Head head = readHead(in, remote);
        if (head == null) {
            return null;
        }
        continueIfExpected(head, out);
        return head.request(readBody(in, head.headers()));
    }

    /** A request line and its header fields, the body still on the stream. */
    record Head(
            String method,
            String path,
            String query,
            String version,
            Map<String, String> headers,
            InetSocketAddress remote) {
        Http1Server.Request request(byte[] body) {
            return new Http1Server.Request(method, path, query, version, headers, body, null, remote);
        }

        Http1Server.Request request(InputStream body) {
            return new Http1Server.Request(method, path, query, version, headers, null, body, remote);
        }
    }

    /** Reads a request line and its header fields; null on a clean end of stream before the first byte. */
    static Head readHead(InputStream in, InetSocketAddress remote) throws IOException, BadRequest {
        String line;
        do {
            line = readLine(in, true);
            if (line == null) {
                return null;
            }
        } while (line.isEmpty());
        String[] parts = line.split(" ", -1);
        if (parts.length != 3 || parts[0].isEmpty() || parts[1].isEmpty() || !parts[2].startsWith("HTTP/1.")) {
            throw new BadRequest(400, "malformed request line: " + abbreviate(line));
        }
        Map<String, String> headers = readHeaders(in);
        String target = parts[1];
        int q = target.indexOf('?');
        String path = q < 0 ? target : target.substring(0, q);
        String query = q < 0 ? "" : target.substring(q + 1);
        return new Head(parts[0].toUpperCase(Locale.ROOT), path, query, parts[2], headers, remote);
    }

    /** Writes {@code 100 Continue} when the request expects it. */
    static void continueIfExpected(Head head, OutputStream out) throws IOException {
        String expect = head.headers().get("expect");
        if (expect != null && expect.equalsIgnoreCase("100-continue")) {
            out.write("HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
        }
    }

    /**
     * The body of a request whose head was just read, as a stream that ends where the body ends
     * (its {@code Content-Length}, or the last chunk and trailers) and leaves {@code in} at the next
     * request. No size limit; malformed framing reads as an {@link IOException} carrying the {@link
     * BadRequest}. {@code atEnd} runs once, when the body's end has been read.
     */
    static InputStream bodyStream(InputStream in, Map<String, String> headers, Runnable atEnd) throws BadRequest {
        String te = headers.get("transfer-encoding");
        if (te != null && te.toLowerCase(Locale.ROOT).contains("chunked")) {
            return new ChunkedBody(in, atEnd);
        }
        String length = headers.get("content-length");
        return new LengthBody(in, length == null ? 0 : contentLength(length), atEnd);
    }

    private static Map<String, String> readHeaders(InputStream in) throws IOException, BadRequest {
        Map<String, String> headers = new LinkedHashMap<>();
        int headerBytes = 0;
        while (true) {
            String h = readLine(in, false);
            if (h.isEmpty()) {
                return headers;
            }
            headerBytes += h.length();
            if (headerBytes > MAX_HEADER_BYTES) {
                throw new BadRequest(431, "request headers exceed " + MAX_HEADER_BYTES + " bytes");
            }
            int colon = h.indexOf(':');
            if (colon <= 0) {
                throw new BadRequest(400, "malformed header line: " + abbreviate(h));
            }
            String key = h.substring(0, colon).trim().toLowerCase(Locale.ROOT);
            String value = h.substring(colon + 1).trim();
            headers.merge(key, value, (a, b) -> a + ", " + b);
        }
    }

    static byte[] readBody(InputStream in, Map<String, String> headers) throws IOException, BadRequest {
        String te = headers.get("transfer-encoding");
        if (te != null && te.toLowerCase(Locale.ROOT).contains("chunked")) {
            return readChunked(in);
        }
        String length = headers.get("content-length");
        if (length == null) {
            return new byte[0];
        }
        long n = contentLength(length);
        if (n > MAX_BODY) {
            throw new BadRequest(413, "request body of " + n + " bytes exceeds " + MAX_BODY);
        }
        byte[] body = in.readNBytes((int) n);
        if (body.length != n) {
            throw new IOException("connection closed after " + body.length + " of " + n + " body bytes");
        }
        return body;
    }

    /** Digits only (RFC 9110 §8.6): no sign, no spaces inside, no list of values. */
    private static long contentLength(String value) throws BadRequest {
        if (value.isEmpty() || value.length() > 18 || !value.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new BadRequest(400, "Content-Length is not a number: " + abbreviate(value));
        }
        return Long.parseLong(value);
    }

    private static byte[] readChunked(InputStream in) throws IOException, BadRequest {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        while (true) {
            long size = chunkSize(in);
            if (body.size() + size > MAX_BODY) {
                throw new BadRequest(413, "chunked request body exceeds " + MAX_BODY + " bytes");
            }
            if (size == 0) {
                skipTrailers(in);
                return body.toByteArray();
            }
            byte[] chunk = in.readNBytes((int) size);
            if (chunk.length != size) {
                throw new IOException("connection closed inside a chunk");
            }
            body.write(chunk);
            if (!readLine(in, false).isEmpty()) {
                throw new BadRequest(400, "a chunk of " + size + " bytes is longer than its size line says");
            }
        }
    }

    private static long chunkSize(InputStream in) throws IOException, BadRequest {
        String sizeLine = readLine(in, false);
        int semi = sizeLine.indexOf(';');
        String hex = (semi < 0 ? sizeLine : sizeLine.substring(0, semi)).trim();
        if (hex.isEmpty() || hex.length() > 8 || !hex.chars().allMatch(Http1RequestReader::isHexDigit)) {
            throw new BadRequest(400, "malformed chunk size: " + abbreviate(sizeLine));
        }
        return Long.parseLong(hex, 16);
    }

    /** Trailer fields are ignored, but count toward the header limit. */
    private static void skipTrailers(InputStream in) throws IOException, BadRequest {
        int trailerBytes = 0;
        String trailer;
        while (!(trailer = readLine(in, false)).isEmpty()) {
            trailerBytes += trailer.length();
            if (trailerBytes > MAX_HEADER_BYTES) {
                throw new BadRequest(431, "request trailers exceed " + MAX_HEADER_BYTES + " bytes");
            }
        }
    }

    /** A request body as a stream; a single byte is read as an array of one. */
    private abstract static class BodyInput extends InputStream {
        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }
    }

    /** A body framed by {@code Content-Length}. */
    private static final class LengthBody extends BodyInput {
        private final InputStream in;
        private final Runnable atEnd;
        private long left;

        LengthBody(InputStream in, long length, Runnable atEnd) {
            this.in = in;
            this.left = length;
            this.atEnd = atEnd;
            if (length == 0) {
                atEnd.run();
            }
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (left == 0) {
                return -1;
            }
            if (len == 0) {
                return 0;
            }
            int n = in.read(b, off, (int) Math.min(len, left));
            if (n < 0) {
                throw new IOException("connection closed with " + left + " body bytes still to come");
            }
            left -= n;
            if (left == 0) {
                atEnd.run();
            }
            return n;
        }
    }

    /** A body in chunked transfer coding, decoded; the chunk sizes and trailers as {@link #readChunked} checks them. */
    private static final class ChunkedBody extends BodyInput {
        private final InputStream in;
        private final Runnable atEnd;
        private long chunkLeft;
        private boolean ended;

        ChunkedBody(InputStream in, Runnable atEnd) {
            this.in = in;
            this.atEnd = atEnd;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (ended) {
                return -1;
            }
            if (len == 0) {
                return 0;
            }
            try {
                if (chunkLeft == 0) {
                    chunkLeft = chunkSize(in);
                    if (chunkLeft == 0) {
                        skipTrailers(in);
                        ended = true;
                        atEnd.run();
                        return -1;
                    }
                }
                int n = in.read(b, off, (int) Math.min(len, chunkLeft));
                if (n < 0) {
                    throw new IOException("connection closed inside a chunk");
                }
                chunkLeft -= n;
                if (chunkLeft == 0 && !readLine(in, false).isEmpty()) {
                    throw new BadRequest(400, "a chunk is longer than its size line says");
                }
                return n;
            } catch (BadRequest e) {
                throw new IOException(e.getMessage(), e);
            }
        }
    }

    private static boolean isHexDigit(int c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }

    /** A CRLF- or LF-terminated line; null at end of stream only when {@code eofAllowed} and nothing was read. */
    private static String readLine(InputStream in, boolean eofAllowed) throws IOException, BadRequest {
        StringBuilder sb = new StringBuilder();
        while (true) {
            int b = in.read();
            if (b < 0) {
                if (eofAllowed && sb.isEmpty()) {
                    return null;
                }
                throw new IOException("connection closed in the middle of a request");
            }
            if (b == '\n') {
                int len = sb.length();
                if (len > 0 && sb.charAt(len - 1) == '\r') {
                    sb.setLength(len - 1);
                }
                return sb.toString();
            }
            if (sb.length() >= MAX_LINE) {
                throw new BadRequest(431, "a request line or header exceeds " + MAX_LINE + " bytes");
            }
            sb.append((char) b);
        }
    }

    static String abbreviate(String s) {
        return s.length() <= 80 ? s : s.substring(0, 80) + "…";
    }
}
