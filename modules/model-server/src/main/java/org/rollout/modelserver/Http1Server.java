package org.rollout.modelserver;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PushbackInputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
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
 * 100-continue}, keep-alive and {@code Connection: close}, HTTP/1.0 clients. Responses always carry
 * {@code Content-Length}. A handler may return {@code null} to drop the connection without answering
 * (used by fault injection). {@link #reset()} closes every socket with SO_LINGER 0, so clients see a
 * connection reset: what a crashed server looks like.
 *
 * <p>Thread-safe. Handlers run concurrently, one virtual thread per request.
 */
final class Http1Server {
    private static final Logger log = LoggerFactory.getLogger(Http1Server.class);
    static final int MAX_LINE = 16 * 1024;
    static final int MAX_HEADER_BYTES = 64 * 1024;
    static final int MAX_BODY = 64 * 1024 * 1024;

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

    /** A request that cannot be parsed; answered with {@code status} and the connection closed. */
    private static final class BadHttpException extends Exception {
        final int status;

        BadHttpException(int status, String message) {
            super(message);
            this.status = status;
        }
    }

    private final ServerSocket serverSocket;
    private final Handler handler;
    private final String name;
    private final Set<Socket> connections = ConcurrentHashMap.newKeySet();
    private final Set<CompletableFuture<Void>> active = ConcurrentHashMap.newKeySet();
    private volatile boolean closing;

    private Http1Server(ServerSocket serverSocket, Handler handler, String name) {
        this.serverSocket = serverSocket;
        this.handler = handler;
        this.name = name;
    }

    /** Binds {@code host:port} (0 = any free port) and starts accepting. */
    static Http1Server start(String host, int port, Handler handler, String name) throws IOException {
        ServerSocket ss = new ServerSocket();
        ss.setReuseAddress(true);
        ss.bind(new InetSocketAddress(InetAddress.getByName(host), port), 1024);
        Http1Server server = new Http1Server(ss, handler, name);
        Thread.ofPlatform().daemon(true).name(name + "-accept").start(server::acceptLoop);
        return server;
    }

    int port() {
        return serverSocket.getLocalPort();
    }

    /** The address and port the socket is bound to. */
    java.net.InetSocketAddress address() {
        return (java.net.InetSocketAddress) serverSocket.getLocalSocketAddress();
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
        for (CompletableFuture<Void> f : List.copyOf(active)) {
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
            PushbackInputStream in = new PushbackInputStream(new BufferedInputStream(socket.getInputStream()), 1);
            OutputStream out = new BufferedOutputStream(socket.getOutputStream());
            while (!closing) {
                Request request;
                try {
                    request = readRequest(in, out, socket.getInetAddress());
                } catch (BadHttpException e) {
                    byte[] body = Json.errorBody(e.status, e.getMessage());
                    writeResponse(out, Response.json(e.status, body), false);
                    return;
                }
                if (request == null) {
                    return;
                }
                boolean keepAlive = keepAlive(request);
                Exchange exchange = new Exchange();
                CompletableFuture<Void> handled = new CompletableFuture<>();
                active.add(handled);
                Thread.ofVirtual()
                        .name(name + "-handler")
                        .start(() -> handle(request, exchange, socket, out, keepAlive, handled));
                int next;
                try {
                    next = in.read();
                } catch (IOException e) {
                    next = -1;
                }
                if (next < 0) {
                    exchange.markDisconnected();
                    handled.join();
                    return;
                }
                in.unread(next);
                handled.join();
                if (!keepAlive || socket.isClosed()) {
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

    private void handle(
            Request request,
            Exchange exchange,
            Socket socket,
            OutputStream out,
            boolean keepAlive,
            CompletableFuture<Void> handled) {
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
            handled.complete(null);
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

    /** Reads one request; null on a clean end of stream before its first byte. */
    private static Request readRequest(PushbackInputStream in, OutputStream out, InetAddress remote)
            throws IOException, BadHttpException {
        String line;
        do {
            line = readLine(in, true);
            if (line == null) {
                return null;
            }
        } while (line.isEmpty());
        String[] parts = line.split(" ");
        if (parts.length != 3 || !parts[2].startsWith("HTTP/1.")) {
            throw new BadHttpException(400, "malformed request line: " + abbreviate(line));
        }
        Map<String, String> headers = new LinkedHashMap<>();
        int headerBytes = 0;
        while (true) {
            String h = readLine(in, false);
            if (h.isEmpty()) {
                break;
            }
            headerBytes += h.length();
            if (headerBytes > MAX_HEADER_BYTES) {
                throw new BadHttpException(431, "request headers exceed " + MAX_HEADER_BYTES + " bytes");
            }
            int colon = h.indexOf(':');
            if (colon <= 0) {
                throw new BadHttpException(400, "malformed header line: " + abbreviate(h));
            }
            String key = h.substring(0, colon).trim().toLowerCase(Locale.ROOT);
            String value = h.substring(colon + 1).trim();
            headers.merge(key, value, (a, b) -> a + ", " + b);
        }
        String expect = headers.get("expect");
        if (expect != null && expect.equalsIgnoreCase("100-continue")) {
            out.write("HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
        }
        byte[] body;
        String te = headers.get("transfer-encoding");
        if (te != null && te.toLowerCase(Locale.ROOT).contains("chunked")) {
            body = readChunked(in);
        } else if (headers.containsKey("content-length")) {
            long n;
            try {
                n = Long.parseLong(headers.get("content-length"));
            } catch (NumberFormatException e) {
                throw new BadHttpException(400, "Content-Length is not a number: " + headers.get("content-length"));
            }
            if (n < 0 || n > MAX_BODY) {
                throw new BadHttpException(413, "request body of " + n + " bytes exceeds " + MAX_BODY);
            }
            body = in.readNBytes((int) n);
            if (body.length != n) {
                throw new IOException("connection closed after " + body.length + " of " + n + " body bytes");
            }
        } else {
            body = new byte[0];
        }
        String target = parts[1];
        int q = target.indexOf('?');
        String path = q < 0 ? target : target.substring(0, q);
        String query = q < 0 ? "" : target.substring(q + 1);
        return new Request(parts[0].toUpperCase(Locale.ROOT), path, query, parts[2], headers, body, remote);
    }

    private static byte[] readChunked(InputStream in) throws IOException, BadHttpException {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        while (true) {
            String sizeLine = readLine(in, false);
            int semi = sizeLine.indexOf(';');
            String hex = (semi < 0 ? sizeLine : sizeLine.substring(0, semi)).trim();
            int size;
            try {
                size = Integer.parseInt(hex, 16);
            } catch (NumberFormatException e) {
                throw new BadHttpException(400, "malformed chunk size: " + abbreviate(sizeLine));
            }
            if (size < 0 || body.size() + (long) size > MAX_BODY) {
                throw new BadHttpException(413, "chunked request body exceeds " + MAX_BODY + " bytes");
            }
            if (size == 0) {
                while (!readLine(in, false).isEmpty()) {
                    // trailer fields are ignored
                }
                return body.toByteArray();
            }
            byte[] chunk = in.readNBytes(size);
            if (chunk.length != size) {
                throw new IOException("connection closed inside a chunk");
            }
            body.write(chunk);
            readLine(in, false);
        }
    }

    /** A CRLF- or LF-terminated line; null at end of stream only when {@code eofAllowed} and nothing was read. */
    private static String readLine(InputStream in, boolean eofAllowed) throws IOException, BadHttpException {
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
                throw new BadHttpException(431, "a request line or header exceeds " + MAX_LINE + " bytes");
            }
            sb.append((char) b);
        }
    }

    private static String abbreviate(String s) {
        return s.length() <= 80 ? s : s.substring(0, 80) + "…";
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
