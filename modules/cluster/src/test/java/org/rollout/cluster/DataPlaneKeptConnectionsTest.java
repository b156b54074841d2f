package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.rollout.api.TrainingBatch;

/**
 * Payloads fetched on kept connections, on 127.0.0.1: many payloads from one node take one
 * connection; an unknown token leaves the connection usable; a kept connection the holder closed
 * is replaced without losing the payload; a payload that does not end where it should fails and
 * its connection is not kept; a connection idle past its limit is not used again.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DataPlaneKeptConnectionsTest {
    private static final Duration LONG = Duration.ofSeconds(30);
    private static final int CHUNK = 128 * 1024;
    private final ActorTestKit kit = ActorTestKit.create("data-plane-kept-test", TestRollout.PEKKO);
    private final KryoPayloadSerializer kryo = Payloads.kryo(kit);

    @AfterAll
    void shutdown() {
        kit.shutdownTestKit();
    }

    private Object fetch(DataPlaneClient client, DirectRef ref) throws IOException {
        return client.fetch(ref, "batch 7", kryo, CHUNK, LONG, Duration.ofSeconds(60));
    }

    @Test
    void manyPayloadsFromOneNodeTakeOneConnectionAndAnUnknownTokenLeavesItUsable() throws Exception {
        try (DataPlane plane = DataPlane.start("127.0.0.1", "127.0.0.1", 0, kryo, CHUNK, LONG, LONG, n -> {});
                DataPlaneClient client = new DataPlaneClient(null)) {
            List<TrainingBatch> batches = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                TrainingBatch b = Payloads.batch(i, 2, 4, 256 + 1000 * i);
                batches.add(b);
                DirectRef ref = plane.offer(new Collector.BatchReply(b), "batch " + i);
                assertThat(((Collector.BatchReply) fetch(client, ref)).batch()).isEqualTo(b);
                // The same token again, and one never offered: answered 'N' on the same connection.
                assertThatThrownBy(() -> fetch(client, ref)).hasMessageContaining("no longer holds the payload");
            }
            assertThat(client.opened()).isEqualTo(1);
            assertThat(client.reused()).isEqualTo(39);
            assertThat(plane.connections()).isEqualTo(1);
            // A fetch of its own (RLP1) beside it still works, and ends its connection.
            DirectRef once = plane.offer(new Collector.BatchReply(batches.get(3)), "batch 3 again");
            assertThat(((Collector.BatchReply) DataPlaneClient.fetchOnce(
                                    once, null, "batch 3", kryo, CHUNK, LONG, Duration.ofSeconds(60)))
                            .batch())
                    .isEqualTo(batches.get(3));
            client.close();
            TestRollout.await("the holder to end the closed connections", LONG, () -> plane.connections() == 0);
        }
    }

    @Test
    void fetchesAtOnceFromOneNodeEachGetTheirOwnPayload() throws Exception {
        try (DataPlane plane = DataPlane.start("127.0.0.1", "127.0.0.1", 0, kryo, CHUNK, LONG, LONG, n -> {});
                DataPlaneClient client = new DataPlaneClient(null)) {
            for (int round = 0; round < 5; round++) {
                List<CompletableFuture<Boolean>> fetches = new ArrayList<>();
                for (int i = 0; i < 16; i++) {
                    TrainingBatch b = Payloads.batch(100 * round + i, 2, 4, 512);
                    DirectRef ref = plane.offer(new Collector.BatchReply(b), "batch " + i);
                    fetches.add(CompletableFuture.supplyAsync(() -> {
                        try {
                            return ((Collector.BatchReply) fetch(client, ref))
                                    .batch()
                                    .equals(b);
                        } catch (IOException e) {
                            throw new AssertionError(e);
                        }
                    }));
                }
                for (CompletableFuture<Boolean> f : fetches) {
                    assertThat(f.get(60, TimeUnit.SECONDS)).isTrue();
                }
            }
            // Sixteen at once from one node: at most PER_NODE connections, each kept for the next.
            assertThat(client.opened()).isLessThanOrEqualTo(DataPlaneClient.PER_NODE);
            assertThat(client.opened() + client.reused()).isEqualTo(80);
            assertThat(plane.connections()).isLessThanOrEqualTo(DataPlaneClient.PER_NODE);
        }
    }

    @Test
    void aKeptConnectionTheHolderClosedIsReplacedWithoutLosingThePayload() throws Exception {
        TrainingBatch first = Payloads.batch(1, 2, 4, 256);
        TrainingBatch second = Payloads.batch(2, 2, 4, 256);
        try (ServerSocket holder = new ServerSocket()) {
            holder.bind(new InetSocketAddress("127.0.0.1", 0));
            CompletableFuture<Void> firstClosed = new CompletableFuture<>();
            CompletableFuture<Void> served = CompletableFuture.runAsync(() -> {
                try {
                    // The first connection answers one request, then goes away as an idle one would.
                    try (Socket s = holder.accept()) {
                        readRequest(s.getInputStream());
                        answer(s.getOutputStream(), first, DataPlane.END);
                    }
                    firstClosed.complete(null);
                    try (Socket s = holder.accept()) {
                        readRequest(s.getInputStream());
                        answer(s.getOutputStream(), second, DataPlane.END);
                        s.getInputStream().read(); // until the client lets go
                    }
                } catch (IOException e) {
                    throw new AssertionError(e);
                }
            });
            DirectRef ref = new DirectRef("127.0.0.1", holder.getLocalPort(), "a".repeat(32));
            try (DataPlaneClient client = new DataPlaneClient(null)) {
                assertThat(((Collector.BatchReply) fetch(client, ref)).batch()).isEqualTo(first);
                firstClosed.get(60, TimeUnit.SECONDS);
                assertThat(((Collector.BatchReply) fetch(client, ref)).batch()).isEqualTo(second);
                assertThat(client.opened()).isEqualTo(2);
            }
            served.get(60, TimeUnit.SECONDS);
        }
    }

    @Test
    void aPayloadThatDoesNotEndWhereItShouldFailsAndItsConnectionIsNotKept() throws Exception {
        TrainingBatch batch = Payloads.batch(3, 2, 4, 256);
        try (ServerSocket holder = new ServerSocket()) {
            holder.bind(new InetSocketAddress("127.0.0.1", 0));
            CompletableFuture<Void> served = CompletableFuture.runAsync(() -> {
                try {
                    try (Socket s = holder.accept()) {
                        readRequest(s.getInputStream());
                        answer(s.getOutputStream(), batch, 'X');
                        s.getInputStream().read();
                    }
                    try (Socket s = holder.accept()) {
                        readRequest(s.getInputStream());
                        answer(s.getOutputStream(), batch, DataPlane.END);
                        s.getInputStream().read();
                    }
                } catch (IOException e) {
                    throw new AssertionError(e);
                }
            });
            DirectRef ref = new DirectRef("127.0.0.1", holder.getLocalPort(), "b".repeat(32));
            try (DataPlaneClient client = new DataPlaneClient(null)) {
                assertThatThrownBy(() -> fetch(client, ref))
                        .hasMessageContaining("batch 7")
                        .hasMessageContaining("byte 88 where the end byte belongs");
                assertThat(((Collector.BatchReply) fetch(client, ref)).batch()).isEqualTo(batch);
                assertThat(client.opened()).isEqualTo(2);
            }
            served.get(60, TimeUnit.SECONDS);
        }
    }

    @Test
    void aConnectionIdlePastItsLimitIsNotUsedAgain() throws Exception {
        try (DataPlane plane = DataPlane.start("127.0.0.1", "127.0.0.1", 0, kryo, CHUNK, LONG, LONG, n -> {});
                DataPlaneClient client = new DataPlaneClient(null, 8, Duration.ofMillis(1))) {
            for (int i = 0; i < 3; i++) {
                TrainingBatch b = Payloads.batch(i, 2, 4, 256);
                DirectRef ref = plane.offer(new Collector.BatchReply(b), "batch " + i);
                long before = System.nanoTime();
                while (System.nanoTime() - before < TimeUnit.MILLISECONDS.toNanos(5)) {
                    Thread.onSpinWait(); // past the 1 ms limit
                }
                assertThat(((Collector.BatchReply) fetch(client, ref)).batch()).isEqualTo(b);
            }
            assertThat(client.opened()).isEqualTo(3);
            assertThat(client.reused()).isZero();
        }
    }

    /** Reads one request line ("RLK1 <token>\n") as the data plane would. */
    private static void readRequest(InputStream in) throws IOException {
        byte[] line = in.readNBytes(5 + 32 + 1);
        assertThat(new String(line, 0, 5, StandardCharsets.US_ASCII)).isEqualTo("RLK1 ");
    }

    private void answer(OutputStream out, TrainingBatch batch, int end) throws IOException {
        out.write('Y');
        kryo.write(new Collector.BatchReply(batch), out, CHUNK);
        out.write(end);
        out.flush();
    }
}
