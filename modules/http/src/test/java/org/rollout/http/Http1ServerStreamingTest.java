package org.rollout.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Streamed responses and request bodies over real sockets: events flushed one by one, a known
 * length, a stream longer than the request timeout, a client that leaves mid-stream (the handler
 * hears of it), a client that reads nothing of a large response (its connection is reset after the
 * write timeout, the handler ends), and an upload read as it arrives.
 */
@Timeout(60)
class Http1ServerStreamingTest {
    private static final long WAIT_S = 20;
    private Http1Server server;
    private final HttpClient client = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();

    @AfterEach
    void stop() {
        if (server != null) {
            server.close(1000);
        }
        client.close();
    }

    private void start(
            Http1Server.Handler handler, Http1Server.Timeouts timeouts, Predicate<Http1Server.Request> stream)
            throws IOException {
        server = Http1Server.start(
                "127.0.0.1",
                0,
                handler,
                "streaming-test",
                Http1Server.Options.DEFAULT.withTimeouts(timeouts).withStreamBody(stream));
    }

    private URI uri(String path) {
        return URI.create("http://127.0.0.1:" + server.port() + path);
    }

    @Test
    void eachFlushedEventArrivesBeforeTheNextIsWritten() throws Exception {
        CountDownLatch firstRead = new CountDownLatch(1);
        start(
                (req, ex) -> {
                    ex.setHeader("Content-Type", "text/event-stream");
                    OutputStream out = ex.respond(200, Http1Server.Exchange.CHUNKED);
                    out.write("data: one\n\n".getBytes(StandardCharsets.UTF_8));
                    out.flush();
                    assertThat(firstRead.await(WAIT_S, TimeUnit.SECONDS)).isTrue();
                    out.write("data: two\n\n".getBytes(StandardCharsets.UTF_8));
                    return null;
                },
                Http1Server.Timeouts.DEFAULT,
                r -> false);
        HttpResponse<InputStream> r =
                client.send(HttpRequest.newBuilder(uri("/events")).build(), HttpResponse.BodyHandlers.ofInputStream());
        assertThat(r.headers().firstValue("content-type")).hasValue("text/event-stream");
        assertThat(r.headers().firstValue("transfer-encoding")).hasValue("chunked");
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
            assertThat(lines.readLine()).isEqualTo("data: one");
            firstRead.countDown();
            assertThat(lines.readLine()).isEmpty();
            assertThat(lines.readLine()).isEqualTo("data: two");
            assertThat(lines.readLine()).isEmpty();
            assertThat(lines.readLine()).isNull();
        }
    }

    @Test
    void aBodyOfKnownLengthAndTheNextRequestOnTheSameConnection() throws Exception {
        byte[] payload = new byte[3 * 1024 * 1024 + 17];
        for (int i = 0; i < payload.length; i++) {
            payload[i] = (byte) (i * 31);
        }
        start(
                (req, ex) -> {
                    ex.setHeader("X-Kind", "blob");
                    try (OutputStream out = ex.respond(200, payload.length)) {
                        for (int off = 0; off < payload.length; off += 100_000) {
                            out.write(payload, off, Math.min(100_000, payload.length - off));
                        }
                    }
                    return null;
                },
                Http1Server.Timeouts.DEFAULT,
                r -> false);
        for (int i = 0; i < 3; i++) {
            HttpResponse<byte[]> r =
                    client.send(HttpRequest.newBuilder(uri("/blob")).build(), HttpResponse.BodyHandlers.ofByteArray());
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("content-length")).hasValue(Integer.toString(payload.length));
            assertThat(r.headers().firstValue("x-kind")).hasValue("blob");
            assertThat(r.body()).isEqualTo(payload);
        }
        assertThat(server.openConnections())
                .as("one keep-alive connection served all three")
                .isEqualTo(1);
    }

    @Test
    void aStreamLongerThanTheRequestTimeoutIsNotCut() throws Exception {
        start(
                (req, ex) -> {
                    OutputStream out = ex.respond(200, Http1Server.Exchange.CHUNKED);
                    for (int i = 0; i < 8; i++) {
                        out.write(("data: " + i + "\n\n").getBytes(StandardCharsets.UTF_8));
                        out.flush();
                        Thread.sleep(200);
                    }
                    return null;
                },
                new Http1Server.Timeouts(Duration.ofMillis(300), Duration.ofMillis(300), Duration.ofSeconds(30)),
                r -> false);
        HttpResponse<String> r =
                client.send(HttpRequest.newBuilder(uri("/long")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).contains("data: 0\n\n").contains("data: 7\n\n");
    }

    @Test
    void aClientThatLeavesMidStreamIsHeardOfByTheHandler() throws Exception {
        CompletableFuture<Void> heard = new CompletableFuture<>();
        CompletableFuture<Throwable> writeEnded = new CompletableFuture<>();
        start(
                (req, ex) -> {
                    ex.onDisconnect(() -> heard.complete(null));
                    OutputStream out = ex.respond(200, Http1Server.Exchange.CHUNKED);
                    try {
                        while (true) {
                            out.write("data: tick\n\n".getBytes(StandardCharsets.UTF_8));
                            out.flush();
                            Thread.sleep(20);
                        }
                    } catch (IOException e) {
                        writeEnded.complete(e);
                        throw e;
                    }
                },
                Http1Server.Timeouts.DEFAULT,
                r -> false);
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.getOutputStream().write("GET /ticks HTTP/1.1\r\nHost: a\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            byte[] some = new byte[64];
            assertThat(s.getInputStream().read(some)).isPositive();
        }
        heard.get(WAIT_S, TimeUnit.SECONDS);
        assertThat(writeEnded.get(WAIT_S, TimeUnit.SECONDS)).isInstanceOf(IOException.class);
        awaitNoConnections();
    }

    @Test
    void aClientThatReadsNothingOfALargeResponseIsResetAfterTheWriteTimeout() throws Exception {
        CompletableFuture<Throwable> handlerEnded = new CompletableFuture<>();
        start(
                (req, ex) -> {
                    byte[] piece = new byte[1024 * 1024];
                    long length = 1024L * piece.length; // 1 GiB: far more than socket buffers hold
                    try (OutputStream out = ex.respond(200, length)) {
                        for (long sent = 0; sent < length; sent += piece.length) {
                            out.write(piece);
                        }
                        handlerEnded.complete(null);
                    } catch (IOException e) {
                        handlerEnded.complete(e);
                        throw e;
                    }
                    return null;
                },
                new Http1Server.Timeouts(Duration.ofSeconds(30), Duration.ofSeconds(30), Duration.ofMillis(800)),
                r -> false);
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setReceiveBufferSize(4096);
            s.getOutputStream().write("GET /huge HTTP/1.1\r\nHost: a\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            // Reads nothing.
            assertThat(handlerEnded.get(WAIT_S, TimeUnit.SECONDS))
                    .as("the blocked write fails once the connection is reset")
                    .isInstanceOf(IOException.class);
        }
        awaitNoConnections();
    }

    @Test
    void anUploadIsReadAsItArrivesAndTheConnectionServesTheNextRequest() throws Exception {
        AtomicLong seen = new AtomicLong();
        start(
                (req, ex) -> {
                    if (req.path().equals("/upload")) {
                        byte[] buf = new byte[64 * 1024];
                        long n = 0;
                        try (InputStream in = req.bodyStream()) {
                            for (int r; (r = in.read(buf)) > 0; ) {
                                n += r;
                            }
                        }
                        seen.set(n);
                        return Http1Server.Response.json(
                                200, ("{\"bytes\":" + n + "}").getBytes(StandardCharsets.UTF_8));
                    }
                    return Http1Server.Response.json(
                            200, ("{\"body\":" + req.body().length + "}").getBytes(StandardCharsets.UTF_8));
                },
                Http1Server.Timeouts.DEFAULT,
                r -> r.path().equals("/upload"));
        long size = 200L * 1024 * 1024; // above the 64 MiB a body read whole may have
        HttpResponse<String> up = client.send(
                HttpRequest.newBuilder(uri("/upload"))
                        .POST(HttpRequest.BodyPublishers.fromPublisher(
                                HttpRequest.BodyPublishers.ofInputStream(() -> new ZeroStream(size)), size))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(up.statusCode()).isEqualTo(200);
        assertThat(up.body()).isEqualTo("{\"bytes\":" + size + "}");
        assertThat(seen.get()).isEqualTo(size);
        HttpResponse<String> next = client.send(
                HttpRequest.newBuilder(uri("/small"))
                        .POST(HttpRequest.BodyPublishers.ofString("abc"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(next.body()).isEqualTo("{\"body\":3}");
        assertThat(server.openConnections()).isEqualTo(1);
    }

    @Test
    void aBodyTheHandlerLeavesUnreadKeepsASmallRequestsConnectionAndClosesALargeOnes() throws Exception {
        start(
                (req, ex) -> new Http1Server.Response(401, "text/plain", "no".getBytes(StandardCharsets.US_ASCII)),
                Http1Server.Timeouts.DEFAULT,
                r -> true);
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> r = client.send(
                    HttpRequest.newBuilder(uri("/refused"))
                            .POST(HttpRequest.BodyPublishers.ofString("{\"timeout\": 1}"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).isEqualTo(401);
            assertThat(r.headers().firstValue("connection")).isEmpty();
        }
        assertThat(server.openConnections())
                .as("one keep-alive connection served all three")
                .isEqualTo(1);
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.getOutputStream()
                    .write(("POST /refused HTTP/1.1\r\nContent-Length: 10000000\r\n\r\n" + "x".repeat(200_000))
                            .getBytes(StandardCharsets.US_ASCII));
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            s.getInputStream().transferTo(all);
            assertThat(all.toString(StandardCharsets.US_ASCII))
                    .startsWith("HTTP/1.1 401")
                    .contains("Connection: close");
        }
    }

    @Test
    void aChunkedUploadIsDecoded() throws Exception {
        start(
                (req, ex) -> Http1Server.Response.json(200, req.bodyStream().readAllBytes()),
                Http1Server.Timeouts.DEFAULT,
                r -> true);
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.getOutputStream()
                    .write(("POST /u HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                    + "3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n")
                            .getBytes(StandardCharsets.US_ASCII));
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            s.getInputStream().transferTo(all);
            assertThat(all.toString(StandardCharsets.US_ASCII))
                    .startsWith("HTTP/1.1 200")
                    .endsWith("{\"a\":1}");
        }
    }

    private void awaitNoConnections() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_S);
        while (server.openConnections() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(server.openConnections()).isZero();
    }

    /** {@code size} zero bytes, generated as read. */
    private static final class ZeroStream extends InputStream {
        private long left;

        ZeroStream(long size) {
            this.left = size;
        }

        @Override
        public int read() {
            if (left == 0) {
                return -1;
            }
            left--;
            return 0;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (left == 0) {
                return -1;
            }
            int n = (int) Math.min(len, left);
            Arrays.fill(b, off, off + n, (byte) 0);
            left -= n;
            return n;
        }
    }
}
