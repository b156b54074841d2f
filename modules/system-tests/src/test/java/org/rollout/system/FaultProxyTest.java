package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link FaultProxy} in front of a real echo server on 127.0.0.1: each fault as a client sees it. */
@Timeout(60)
class FaultProxyTest {
    private ServerSocket echo;
    private FaultProxy proxy;

    @BeforeEach
    void start() throws IOException {
        echo = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
        Thread.ofVirtual().start(() -> {
            while (!echo.isClosed()) {
                try {
                    Socket s = echo.accept();
                    Thread.ofVirtual().start(() -> {
                        try (s) {
                            s.getInputStream().transferTo(s.getOutputStream());
                        } catch (IOException ignored) {
                            // the client went away
                        }
                    });
                } catch (IOException e) {
                    return;
                }
            }
        });
        proxy = FaultProxy.to("echo", new InetSocketAddress("127.0.0.1", echo.getLocalPort()), 42);
    }

    @AfterEach
    void stop() throws IOException {
        proxy.close();
        echo.close();
    }

    private Socket connect() throws IOException {
        Socket s = new Socket("127.0.0.1", proxy.port());
        s.setSoTimeout(5000);
        return s;
    }

    private static String roundTrip(Socket s, String text) throws IOException {
        byte[] sent = text.getBytes(StandardCharsets.UTF_8);
        OutputStream out = s.getOutputStream();
        out.write(sent);
        out.flush();
        return new String(s.getInputStream().readNBytes(sent.length), StandardCharsets.UTF_8);
    }

    @Test
    void forwardsBothWaysAndClosesInOrder() throws IOException {
        try (Socket s = connect()) {
            String big = "x".repeat(200_000);
            assertThat(roundTrip(s, big)).isEqualTo(big);
            s.shutdownOutput();
            assertThat(s.getInputStream().read())
                    .as("end of stream after the echo's close")
                    .isEqualTo(-1);
        }
        assertThat(proxy.bytes()).isEqualTo(400_000);
        assertThat(proxy.resets()).isZero();
    }

    @Test
    void delaysEachDirectionByDelayPlusJitterAndKeepsOrder() throws IOException {
        proxy.hurt(Duration.ofMillis(100), Duration.ofMillis(50), 0);
        try (Socket s = connect()) {
            long started = System.nanoTime();
            assertThat(roundTrip(s, "hello")).isEqualTo("hello");
            long millis = (System.nanoTime() - started) / 1_000_000;
            assertThat(millis).as("round trip through 100 ms each way").isBetween(200L, 2000L);
            StringBuilder sent = new StringBuilder();
            for (int i = 0; i < 50; i++) {
                sent.append(i).append(',');
                s.getOutputStream().write((i + ",").getBytes(StandardCharsets.UTF_8));
            }
            byte[] back = s.getInputStream().readNBytes(sent.length());
            assertThat(new String(back, StandardCharsets.UTF_8)).isEqualTo(sent.toString());
        }
    }

    @Test
    void resetsTheConnectionWithTheGivenChance() throws IOException {
        proxy.upstream().resetChance(1.0);
        try (Socket s = connect()) {
            s.getOutputStream().write("lost".getBytes(StandardCharsets.UTF_8));
            assertThatThrownBy(() -> {
                        InputStream in = s.getInputStream();
                        if (in.read() < 0) {
                            throw new IOException("end of stream");
                        }
                    })
                    .isInstanceOf(IOException.class)
                    .isNotInstanceOf(SocketTimeoutException.class);
        }
        assertThat(proxy.resets()).isEqualTo(1);
    }

    @Test
    void stallHoldsTheBytesUntilReleased() throws IOException {
        try (Socket s = connect()) {
            assertThat(roundTrip(s, "before")).isEqualTo("before");
            proxy.downstream().stall(true);
            s.getOutputStream().write("held".getBytes(StandardCharsets.UTF_8));
            s.setSoTimeout(500);
            assertThatThrownBy(() -> s.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);
            proxy.downstream().stall(false);
            s.setSoTimeout(5000);
            assertThat(new String(s.getInputStream().readNBytes(4), StandardCharsets.UTF_8))
                    .isEqualTo("held");
        }
    }

    @Test
    void cutResetsOpenConnectionsAndRefusesNewOnesUntilLifted() throws IOException {
        try (Socket open = connect()) {
            assertThat(roundTrip(open, "a")).isEqualTo("a");
            proxy.cut(true);
            assertThatThrownBy(() -> {
                        open.getOutputStream().write('b');
                        if (open.getInputStream().read() < 0) {
                            throw new IOException("end of stream");
                        }
                    })
                    .isInstanceOf(IOException.class)
                    .isNotInstanceOf(SocketTimeoutException.class);
        }
        try (Socket during = connect()) {
            assertThatThrownBy(() -> {
                        during.getOutputStream().write('c');
                        if (during.getInputStream().read() < 0) {
                            throw new IOException("end of stream");
                        }
                    })
                    .isInstanceOf(IOException.class)
                    .isNotInstanceOf(SocketTimeoutException.class);
        }
        proxy.cut(false);
        try (Socket after = connect()) {
            assertThat(roundTrip(after, "back")).isEqualTo("back");
        }
    }
}
