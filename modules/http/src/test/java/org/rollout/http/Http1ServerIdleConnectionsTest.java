package org.rollout.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Connections that are opened and never used cost the server a socket, not its buffers: a flood
 * of them (at a node's file limit, thousands) must not run a small heap out of memory.
 */
@Timeout(60)
class Http1ServerIdleConnectionsTest {
    private static final int CONNECTIONS = 400;

    @Test
    void idleConnectionsHoldNoBuffers() throws Exception {
        Http1Server server = Http1Server.start(
                "127.0.0.1",
                0,
                (request, exchange) -> Http1Server.Response.json(200, "{}".getBytes(StandardCharsets.US_ASCII)),
                "idle-test",
                new Http1Server.Timeouts(
                        Duration.ofSeconds(30),
                        Duration.ofSeconds(30),
                        Duration.ofSeconds(30),
                        Duration.ofSeconds(30)));
        List<Socket> sockets = new ArrayList<>();
        try {
            long before = usedHeapAfterGc();
            for (int i = 0; i < CONNECTIONS; i++) {
                Socket s = new Socket();
                s.connect(new InetSocketAddress("127.0.0.1", server.port()), 5000);
                sockets.add(s);
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (server.openConnections() < CONNECTIONS) {
                assertThat(System.nanoTime())
                        .as("connections accepted: %d", server.openConnections())
                        .isLessThan(deadline);
                Thread.sleep(10);
            }
            long grown = usedHeapAfterGc() - before;
            // 128 KiB a connection (the two 64 KiB buffers) would be 50 MiB here.
            assertThat(grown)
                    .as("heap grown by %d idle connections", CONNECTIONS)
                    .isLessThan(CONNECTIONS * 16L * 1024);
            // A connection that then sends a request is served as before.
            Socket s = sockets.getFirst();
            s.setSoTimeout(10_000);
            s.getOutputStream().write("GET /x HTTP/1.1\r\nHost: a\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            byte[] head = new byte[15];
            int n = s.getInputStream().readNBytes(head, 0, head.length);
            assertThat(new String(head, 0, n, StandardCharsets.US_ASCII)).isEqualTo("HTTP/1.1 200 OK");
        } finally {
            for (Socket s : sockets) {
                s.close();
            }
            server.close(1000);
        }
    }

    private static long usedHeapAfterGc() throws InterruptedException {
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
            used = Math.min(used, memory.getHeapMemoryUsage().getUsed());
        }
        return used;
    }
}
