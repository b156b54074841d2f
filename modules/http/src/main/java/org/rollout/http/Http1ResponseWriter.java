package org.rollout.http;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * Writing a response: the status line and header fields, a body sent whole with {@code
 * Content-Length}, and the body of a begun response ({@link Body}: of a known length, in chunked
 * transfer coding, or to the end of the connection).
 */
final class Http1ResponseWriter {
    private Http1ResponseWriter() {}

    static void writeResponse(OutputStream out, Http1Server.Response r, boolean keepAlive) throws IOException {
        out.write(head(r.status(), r.contentType(), r.headers(), r.body().length, keepAlive));
        out.write(r.body());
        out.flush();
    }

    /** The status line and header fields; {@code length} -1: chunked, -2: none (the body ends with the connection). */
    static byte[] head(int status, String contentType, Map<String, String> headers, long length, boolean keepAlive) {
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
        } else if (length == Http1Server.Exchange.CHUNKED) {
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
            case 307 -> "Temporary Redirect";
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
     * A begun response's body: of a known length (more is refused, less is noticed), in chunked
     * transfer coding, or to the end of the connection. {@link #buffered} is what the handler
     * writes to: its flush sends a chunk and flushes the socket; its close ends the body, not the
     * connection.
     */
    static final class Body extends OutputStream {
        private final OutputStream connection;
        private final boolean chunked;
        private final long length;
        private long written;
        private boolean closed;
        final OutputStream buffered;

        Body(OutputStream connection, long length, boolean chunked) {
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
}
