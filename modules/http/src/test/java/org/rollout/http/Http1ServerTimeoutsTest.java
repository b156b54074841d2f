package org.rollout.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The model server's HTTP server against clients that trickle bytes, send nothing, or send what it
 * cannot read, over real sockets: each gets an answer (408, 400) or a closed connection within the
 * server's bounds, and no connection is left behind.
 */
@Timeout(60)
class Http1ServerTimeoutsTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private Http1Server server;

    @AfterEach
    void stop() {
        if (server != null) {
            server.close(1000);
        }
    }

    private void start(Http1Server.Timeouts timeouts, Duration handlerTakes) throws IOException {
        server = Http1Server.start(
                "127.0.0.1",
                0,
                (request, exchange) -> {
                    Thread.sleep(handlerTakes.toMillis());
                    return Http1Server.Response.json(200, "{}".getBytes(StandardCharsets.US_ASCII));
                },
                "timeouts-test",
                timeouts);
    }

    private Socket connect() throws IOException {
        Socket s = new Socket();
        s.connect(new InetSocketAddress("127.0.0.1", server.port()), 5000);
        s.setSoTimeout((int) WAIT.toMillis());
        return s;
    }

    /** Everything the server sends until it closes the connection. */
    private static String readToEnd(Socket s) throws IOException {
        InputStream in = s.getInputStream();
        return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
    }

    private void awaitNoConnections() throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (server.openConnections() > 0) {
            assertThat(System.nanoTime() - deadline)
                    .as("connections still open: %d", server.openConnections())
                    .isNegative();
            Thread.sleep(20);
        }
    }

    @Test
    void aClientThatTricklesItsRequestGets408AtTheRequestDeadlineAndIsClosed() throws Exception {
        start(new Http1Server.Timeouts(Duration.ofSeconds(30), Duration.ofMillis(800)), Duration.ZERO);
        try (Socket s = connect()) {
            OutputStream out = s.getOutputStream();
            long started = System.nanoTime();
            out.write("GET /health HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            // One header byte every 100 ms, never the end of the headers.
            Thread trickle = Thread.ofVirtual().start(() -> {
                try {
                    for (int i = 0; i < 200; i++) {
                        out.write('X');
                        out.flush();
                        Thread.sleep(100);
                    }
                } catch (IOException | InterruptedException closed) {
                    // the server closed the connection: what this test waits for
                }
            });
            String answer = readToEnd(s);
            trickle.interrupt();
            assertThat(answer).startsWith("HTTP/1.1 408 Request Timeout").contains("Connection: close");
            assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(WAIT);
        }
        awaitNoConnections();
    }

    @Test
    void aConnectionThatSendsNothingIsClosedAfterTheIdleTimeout() throws Exception {
        start(new Http1Server.Timeouts(Duration.ofMillis(300), Duration.ofSeconds(30)), Duration.ZERO);
        try (Socket s = connect()) {
            assertThat(s.getInputStream().read()).as("end of stream").isEqualTo(-1);
        }
        awaitNoConnections();
    }

    /**
     * Connections opened and never used go at {@code firstRequest}, well before {@code idle}: a
     * flood of them cannot hold the node's file descriptors for long. A client that has been served
     * keeps its connection for the whole {@code idle}.
     */
    @Test
    void aNewConnectionThatSendsNothingGoesAtTheFirstRequestTimeoutAServedOneStays() throws Exception {
        start(
                new Http1Server.Timeouts(
                        Duration.ofSeconds(30), Duration.ofMillis(400), Duration.ofSeconds(30), Duration.ofSeconds(30)),
                Duration.ZERO);
        try (Socket served = connect();
                Socket unused = connect()) {
            OutputStream out = served.getOutputStream();
            out.write("GET /x HTTP/1.1\r\nHost: a\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            assertThat(readResponse(served.getInputStream())).startsWith("HTTP/1.1 200 OK");
            long started = System.nanoTime();
            assertThat(unused.getInputStream().read()).as("end of stream").isEqualTo(-1);
            assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(10));
            Thread.sleep(600);
            out.write("GET /x HTTP/1.1\r\nHost: a\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            assertThat(readResponse(served.getInputStream()))
                    .as("the served connection, idle past firstRequest")
                    .startsWith("HTTP/1.1 200 OK");
            assertThat(server.openConnections()).isEqualTo(1);
        }
        awaitNoConnections();
    }

    @Test
    void aFirstRequestTimeoutDefaultsToTenSecondsOrTheIdleTimeoutIfShorter() {
        assertThat(new Http1Server.Timeouts(Duration.ofSeconds(120), Duration.ofSeconds(60)).firstRequest())
                .isEqualTo(Duration.ofSeconds(10));
        assertThat(new Http1Server.Timeouts(Duration.ofMillis(300), Duration.ofSeconds(60)).firstRequest())
                .isEqualTo(Duration.ofMillis(300));
        assertThat(Http1Server.Timeouts.DEFAULT.firstRequest()).isEqualTo(Duration.ofSeconds(10));
    }

    @Test
    void aRequestServedLongerThanTheIdleTimeoutIsAnsweredAndTheConnectionKeptAlive() throws Exception {
        start(new Http1Server.Timeouts(Duration.ofMillis(200), Duration.ofSeconds(30)), Duration.ofMillis(700));
        try (Socket s = connect()) {
            OutputStream out = s.getOutputStream();
            for (int i = 0; i < 2; i++) {
                out.write("GET /x HTTP/1.1\r\nHost: a\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                String head = readResponse(s.getInputStream());
                assertThat(head).as("response %d", i).startsWith("HTTP/1.1 200 OK");
            }
            // Then idle: closed by the server.
            assertThat(s.getInputStream().read()).isEqualTo(-1);
        }
        awaitNoConnections();
    }

    @Test
    void whatCannotBeReadIsAnswered400AndClosed() throws Exception {
        start(Http1Server.Timeouts.DEFAULT, Duration.ZERO);
        try (Socket s = connect()) {
            s.getOutputStream().write("GET / x HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            String answer = readToEnd(s);
            assertThat(answer).startsWith("HTTP/1.1 400 Bad Request").contains("malformed request line");
        }
        awaitNoConnections();
    }

    @Test
    void manyTricklingClientsAtOnceAreAllClosedAndNoneLeaks() throws Exception {
        start(new Http1Server.Timeouts(Duration.ofSeconds(30), Duration.ofMillis(500)), Duration.ZERO);
        List<Socket> sockets = new ArrayList<>();
        try {
            for (int i = 0; i < 100; i++) {
                Socket s = connect();
                s.getOutputStream()
                        .write("POST /generate HTTP/1.1\r\nContent-Length: 100\r\n\r\n{"
                                .getBytes(StandardCharsets.US_ASCII));
                sockets.add(s);
            }
            for (Socket s : sockets) {
                assertThat(readToEnd(s)).startsWith("HTTP/1.1 408");
            }
        } finally {
            for (Socket s : sockets) {
                s.close();
            }
        }
        awaitNoConnections();
    }

    /** Reads one response with a Content-Length body; returns its head. */
    private static String readResponse(InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("closed inside a response head: " + head);
            }
            head.append((char) b);
        }
        String h = head.toString();
        int at = h.indexOf("Content-Length: ") + "Content-Length: ".length();
        int length = Integer.parseInt(h.substring(at, h.indexOf("\r\n", at)).trim());
        in.readNBytes(length);
        return h;
    }
}
