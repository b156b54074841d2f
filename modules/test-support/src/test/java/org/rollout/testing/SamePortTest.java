package org.rollout.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class SamePortTest {
    private static ServerSocket bind(int port) throws IOException {
        ServerSocket s = new ServerSocket();
        s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
        return s;
    }

    @Test
    void aPortHeldForAMomentIsBoundOnceItIsFree() throws Exception {
        ServerSocket holder = bind(0);
        int port = holder.getLocalPort();
        AtomicInteger attempts = new AtomicInteger();
        try (ServerSocket again = SamePort.restart(Duration.ofSeconds(10), () -> {
            if (attempts.incrementAndGet() == 3) {
                holder.close();
            }
            return bind(port);
        })) {
            assertThat(again.getLocalPort()).isEqualTo(port);
            assertThat(attempts.get()).isGreaterThanOrEqualTo(3);
        }
    }

    @Test
    void aPortStillHeldAtTheDeadlineFailsWithTheBindError() throws Exception {
        try (ServerSocket holder = bind(0)) {
            assertThatThrownBy(() -> SamePort.restart(Duration.ofMillis(300), () -> bind(holder.getLocalPort())))
                    .isInstanceOf(java.net.BindException.class);
        }
    }

    @Test
    void anotherFailureIsThrownAtOnce() {
        AtomicInteger attempts = new AtomicInteger();
        assertThatThrownBy(() -> SamePort.restart(Duration.ofSeconds(10), () -> {
                    attempts.incrementAndGet();
                    throw new IOException("no such weights file");
                }))
                .hasMessage("no such weights file");
        assertThat(attempts.get()).isEqualTo(1);
    }
}
