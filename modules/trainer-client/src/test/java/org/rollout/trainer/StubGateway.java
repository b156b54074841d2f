package org.rollout.trainer;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import org.rollout.trainer.wire.GatewayJson;

/**
 * A scripted stand-in for a trainer gateway on 127.0.0.1: every request goes to {@link #script},
 * and is recorded. {@link #release} frees handlers that block on it; {@link #close} releases and stops.
 */
final class StubGateway implements AutoCloseable {

    /** Answers one request. */
    @FunctionalInterface
    interface Script {
        void answer(HttpExchange exchange, int requestNumber) throws Exception;
    }

    /** One request as the stub saw it. */
    record Seen(String method, String pathAndQuery, String authorization, String body) {}

    final List<Seen> seen = new CopyOnWriteArrayList<>();
    final CountDownLatch release = new CountDownLatch(1);
    private final HttpServer server;
    volatile Script script;

    StubGateway(Script script) throws IOException {
        this.script = script;
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/", ex -> {
            int n;
            byte[] body = ex.getRequestBody().readAllBytes();
            synchronized (seen) {
                seen.add(new Seen(
                        ex.getRequestMethod(),
                        ex.getRequestURI().toString(),
                        ex.getRequestHeaders().getFirst("Authorization"),
                        new String(body, java.nio.charset.StandardCharsets.UTF_8)));
                n = seen.size();
            }
            try {
                this.script.answer(ex, n);
            } catch (IOException e) {
                throw e;
            } catch (Exception e) {
                throw new IOException("stub script failed", e);
            } finally {
                ex.close(); // without a response sent, this drops the connection
            }
        });
        server.start();
    }

    URI uri() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    /** A port nothing listens on (bound, then released). */
    static URI closedPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return URI.create("http://127.0.0.1:" + s.getLocalPort());
        }
    }

    static void json(HttpExchange ex, int status, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(status, body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    static void error(HttpExchange ex, int status, String code, String message) throws IOException {
        json(ex, status, GatewayJson.error(code, message));
    }

    @Override
    public void close() {
        release.countDown();
        server.stop(0);
    }
}
