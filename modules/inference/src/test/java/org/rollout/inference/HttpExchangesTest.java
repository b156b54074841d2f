package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.SocketException;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class HttpExchangesTest {

    /**
     * What the JDK's client completes an exchange with when it cannot open a socket (no file
     * descriptors left): a transport failure for the caller, so the segment is retried.
     */
    @Test
    void aSocketThatCouldNotBeOpenedIsATransportFailure() {
        CompletableFuture<HttpResponse<byte[]>> exchange =
                CompletableFuture.failedFuture(new InternalError(new SocketException("Too many open files")));
        assertThatThrownBy(() -> HttpExchanges.await(exchange, Duration.ofSeconds(1)))
                .isInstanceOf(SocketException.class)
                .hasMessage("Too many open files");
    }

    @Test
    void anyOtherErrorStaysAnError() {
        CompletableFuture<HttpResponse<byte[]>> exchange =
                CompletableFuture.failedFuture(new InternalError("unexpected"));
        assertThatThrownBy(() -> HttpExchanges.await(exchange, Duration.ofSeconds(1)))
                .isInstanceOf(InternalError.class);
    }
}
