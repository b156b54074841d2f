package org.rollout.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.rollout.api.TrainingBatch;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.HttpRolloutClient;
import org.rollout.trainer.RolloutClient;

/**
 * The Java client keeps its pull connection alive: many pulls, with batches and without, reach the
 * gateway over one connection (counted where the gateway accepts them), and a connection the
 * gateway closed meanwhile is replaced without the trainer seeing a failure.
 */
@Timeout(60)
class KeepAlivePullTest {
    private static final int PULLS = 12;

    @Test
    void manyPullsTravelOverOneConnection() throws Exception {
        TrainingBatch batch = LargeBatchStreamingTest.large();
        FakeEngine engine = new FakeEngine();
        try (TrainerGateway g = TrainerGateway.start(GatewayConfig.defaults(), engine);
                HttpRolloutClient trainer = (HttpRolloutClient)
                        RolloutClient.connect(ClientConfig.of(g.uri().toString())
                                .withPollWait(Duration.ofMillis(50))
                                .withLease(null))) {
            for (int i = 0; i < PULLS; i++) {
                if (i % 2 == 0) {
                    engine.batch = batch; // every other pull gets a 10 MB batch, the others none (204)
                    assertThat(trainer.nextBatch(Duration.ofSeconds(10))).contains(batch);
                } else {
                    assertThat(trainer.nextBatch(Duration.ZERO)).isEmpty();
                }
            }
            assertThat(engine.pulls.get()).isGreaterThanOrEqualTo(PULLS);
            assertThat(g.connectionsAccepted())
                    .as("connections the gateway accepted")
                    .isEqualTo(1);
            assertThat(trainer.pullConnectionsOpened()).isEqualTo(1);
        }
    }

    @Test
    void aConnectionTheGatewayClosedIsReplacedUnseen() throws Exception {
        // A gateway that answers "none yet" and closes the connection after its first answer (as
        // one does after its idle timeout, or when it restarts), then keeps the next one alive.
        try (ServerSocket server = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            AtomicInteger accepted = new AtomicInteger();
            CompletableFuture<Void> gateway = CompletableFuture.runAsync(() -> {
                try (Socket first = server.accept()) {
                    accepted.incrementAndGet();
                    answerNoBatch(first);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
                try (Socket second = server.accept()) {
                    accepted.incrementAndGet();
                    answerNoBatch(second);
                    answerNoBatch(second);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            try (HttpRolloutClient trainer = (HttpRolloutClient)
                    RolloutClient.connect(ClientConfig.of("http://127.0.0.1:" + server.getLocalPort())
                            .withPollWait(Duration.ofMillis(50))
                            .withRetry(Duration.ofMillis(50), Duration.ofMillis(200), Duration.ofSeconds(20))
                            .withLease(null))) {
                assertThat(trainer.nextBatch(Duration.ZERO)).isEmpty();
                Thread.sleep(200); // the close reaches the client's kept connection
                assertThat(trainer.nextBatch(Duration.ZERO)).isEmpty();
                assertThat(trainer.nextBatch(Duration.ZERO)).isEmpty();
                gateway.get(10, TimeUnit.SECONDS);
                assertThat(accepted).hasValue(2);
                assertThat(trainer.pullConnectionsOpened()).isEqualTo(2);
            }
        }
    }

    /** Reads one request's head from {@code s} and answers 204, keeping the connection open. */
    private static void answerNoBatch(Socket s) throws IOException {
        InputStream in = s.getInputStream();
        int matched = 0;
        byte[] end = {'\r', '\n', '\r', '\n'};
        while (matched < 4) {
            int c = in.read();
            if (c < 0) {
                throw new IOException("the client closed the connection");
            }
            matched = c == end[matched] ? matched + 1 : (c == '\r' ? 1 : 0);
        }
        OutputStream out = s.getOutputStream();
        out.write("HTTP/1.1 204 No Content\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        out.flush();
    }
}
