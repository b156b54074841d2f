package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.rollout.api.TrainingBatch;

/**
 * A node's data plane on 127.0.0.1: a payload offered is fetched once, whole and equal; a second
 * fetch, an unknown token, a payload nobody fetched in time, a receiver that stops reading and a
 * sender that goes away each end in an error that says which.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DataPlaneTest {
    private final ActorTestKit kit = ActorTestKit.create("data-plane-test", TestRollout.PEKKO);
    private final KryoPayloadSerializer kryo = Payloads.kryo(kit);
    private final AtomicLong sent = new AtomicLong();
    private DataPlane plane;

    @AfterEach
    void closePlane() {
        if (plane != null) {
            plane.close();
        }
    }

    @AfterAll
    void shutdown() {
        kit.shutdownTestKit();
    }

    private DataPlane start(Duration stall, Duration unfetchedAfter) throws IOException {
        plane = DataPlane.start("127.0.0.1", "127.0.0.1", 0, kryo, 128 * 1024, stall, unfetchedAfter, sent::addAndGet);
        return plane;
    }

    private Object fetch(DirectRef ref, Duration stall) throws IOException {
        return DataPlaneClient.fetchOnce(ref, null, "batch 7", kryo, 128 * 1024, stall, Duration.ofSeconds(60));
    }

    @Test
    void aPayloadIsFetchedOnceWholeAndEqual() throws Exception {
        DataPlane p = start(Duration.ofSeconds(30), Duration.ofSeconds(30));
        long sentBefore = sent.get();
        TrainingBatch batch = Payloads.batch(7, 6, 16, 4096);
        DirectRef ref = p.offer(new Collector.BatchReply(batch), "batch 7");
        assertThat(ref.host()).isEqualTo("127.0.0.1");
        assertThat(ref.port()).isEqualTo(p.port());
        assertThat(ref.token()).matches("[0-9a-f]{32}");

        Collector.BatchReply back = (Collector.BatchReply) fetch(ref, Duration.ofSeconds(30));
        assertThat(back.batch()).isEqualTo(batch);
        long size = LargePayloads.estimatedBytes(batch);
        TestRollout.await(
                "the sender to count the bytes", Duration.ofSeconds(30), () -> sent.get() - sentBefore > size / 2);

        assertThatThrownBy(() -> fetch(ref, Duration.ofSeconds(30)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("no longer holds the payload (fetched already, or not fetched within 60 s)");
        assertThatThrownBy(() -> fetch(new DirectRef("127.0.0.1", p.port(), "0".repeat(32)), Duration.ofSeconds(30)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("no longer holds the payload");
    }

    @Test
    void aBatchIsServedOnceAsItsRbatchBytesForARelay() throws Exception {
        DataPlane p = start(Duration.ofSeconds(30), Duration.ofSeconds(30));
        long sentBefore = sent.get();
        TrainingBatch batch = Payloads.batch(8, 3, 8, 2048);
        java.io.ByteArrayOutputStream expected = new java.io.ByteArrayOutputStream();
        org.rollout.trainer.wire.BatchWireFormat.write(batch, expected);
        DirectRef ref = p.offer(new Collector.BatchReply(batch), "batch 8");

        byte[] got;
        try (DataPlaneClient.BatchStream stream =
                DataPlaneClient.openBatch(ref, null, Duration.ofSeconds(30), Duration.ofSeconds(60))) {
            assertThat(stream.length()).isEqualTo(expected.size());
            got = stream.in().readNBytes((int) stream.length());
            assertThat(stream.in().read())
                    .as("the holder closes after the batch")
                    .isEqualTo(-1);
        }
        assertThat(got).isEqualTo(expected.toByteArray());
        TestRollout.await(
                "the holder to count the bytes",
                Duration.ofSeconds(30),
                () -> sent.get() - sentBefore == expected.size());
        assertThatThrownBy(() -> DataPlaneClient.openBatch(ref, null, Duration.ofSeconds(30), Duration.ofSeconds(60)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("no longer holds the payload");
        assertThatThrownBy(() -> fetch(ref, Duration.ofSeconds(30)))
                .as("fetched once, in either form")
                .hasMessageContaining("no longer holds the payload");
    }

    @Test
    void aPayloadThatIsNotABatchIsRefusedAsRbatchAndStaysOffered() throws Exception {
        DataPlane p = start(Duration.ofSeconds(30), Duration.ofSeconds(30));
        DirectRef ref = p.offer(new Collector.BatchReply(null), "no batch");
        assertThatThrownBy(() -> DataPlaneClient.openBatch(ref, null, Duration.ofSeconds(30), Duration.ofSeconds(60)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("not a batch it can send as RBATCH");
        assertThat(((Collector.BatchReply) fetch(ref, Duration.ofSeconds(30))).batch())
                .isNull();
    }

    @Test
    void aPayloadNobodyFetchesInTimeIsDropped() throws Exception {
        DataPlane p = start(Duration.ofSeconds(30), Duration.ofMillis(300));
        DirectRef ref = p.offer(new Collector.BatchReply(Payloads.batch(1, 1, 2, 16)), "batch 1");
        TestRollout.await("the offer to be dropped", Duration.ofSeconds(30), () -> p.unfetchedDropped() == 1);
        assertThatThrownBy(() -> fetch(ref, Duration.ofSeconds(30)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("no longer holds the payload");
    }

    @Test
    void aReceiverThatStopsReadingIsCutOffAfterTheStall() throws Exception {
        DataPlane p = start(Duration.ofMillis(600), Duration.ofSeconds(30));
        TrainingBatch batch = Payloads.batch(2, 8, 16, 8192);
        long size = LargePayloads.estimatedBytes(batch);
        long sentBefore = sent.get();
        DirectRef ref = p.offer(new Collector.BatchReply(batch), "batch 2");
        try (Socket s = new Socket()) {
            s.setReceiveBufferSize(64 * 1024);
            s.connect(new InetSocketAddress(ref.host(), ref.port()), 10_000);
            s.getOutputStream().write(("RLP1 " + ref.token() + "\n").getBytes(StandardCharsets.US_ASCII));
            InputStream in = s.getInputStream();
            assertThat(in.read()).isEqualTo('Y');
            // Read nothing: the sender's writes stop moving, and it gives the transfer up.
            TestRollout.await(
                    "the sender to give up the stalled transfer", Duration.ofSeconds(30), () -> p.sending() == 0);
            s.setSoTimeout(30_000);
            long got = 0;
            byte[] buf = new byte[1 << 16];
            try {
                for (int n = in.read(buf); n >= 0; n = in.read(buf)) {
                    got += n;
                }
            } catch (IOException reset) {
                // the sender closed its end: a reset is as good as an end of stream
            }
            assertThat(got)
                    .as("bytes before the sender gave up, of about %d", size)
                    .isLessThan(size / 2);
        }
        assertThat(sent.get() - sentBefore).as("no payload counted as sent").isZero();
    }

    @Test
    void aSenderThatGoesAwayMidTransferFailsTheFetchNamingIt() throws Exception {
        // A sender that answers, writes the start of a payload and is gone.
        TrainingBatch batch = Payloads.batch(3, 2, 4, 256);
        java.io.ByteArrayOutputStream whole = new java.io.ByteArrayOutputStream();
        kryo.write(new Collector.BatchReply(batch), whole, 128 * 1024);
        byte[] bytes = whole.toByteArray();
        try (java.net.ServerSocket server =
                new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            Thread sender = Thread.ofVirtual().start(() -> {
                try (Socket s = server.accept()) {
                    s.getInputStream().readNBytes(5 + 32 + 1);
                    s.getOutputStream().write('Y');
                    s.getOutputStream().write(bytes, 0, bytes.length / 2);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            DirectRef ref = new DirectRef("127.0.0.1", server.getLocalPort(), "1".repeat(32));
            assertThatThrownBy(() -> fetch(ref, Duration.ofSeconds(30))).isInstanceOf(RuntimeException.class);
            sender.join();
        }
    }

    @Test
    void aNodeWithoutADataPlaneIsAConnectionError() throws Exception {
        int closedPort;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort();
        }
        assertThatThrownBy(() -> fetch(new DirectRef("127.0.0.1", closedPort, "2".repeat(32)), Duration.ofSeconds(5)))
                .isInstanceOf(java.net.ConnectException.class);
    }
}
