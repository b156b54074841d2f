package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedKeyManager;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.TrainingBatch;
import org.rollout.cluster.DataPlaneRefusals.Reason;
import org.rollout.trainer.wire.BatchWireFormat;

/**
 * A node's data plane over TLS on 127.0.0.1, with the stores of {@code gen-keystores.sh} read the
 * way Artery reads them ({@code cluster-config/tls.conf}): a payload and a batch cross whole and
 * once; a peer with the self-signed rogue certificate (which the JDK then does not even present), a
 * peer that presents it anyway, a peer with no certificate and plain TCP are each refused before
 * the token is looked at, counted by reason and logged once per reason; a client that
 * sends nothing, or a byte now and then, is cut off at the deadline and holds no thread after it;
 * a client does not accept a data plane whose certificate the trust store does not.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class DataPlaneTlsTest {
    private static final Duration LONG = Duration.ofSeconds(30);

    private final ActorTestKit kit = ActorTestKit.create("data-plane-tls-test", TestRollout.PEKKO);
    private final KryoPayloadSerializer kryo = Payloads.kryo(kit);
    private final AtomicLong sent = new AtomicLong();
    private final List<DataPlane> planes = new ArrayList<>();
    private TlsStores stores;
    private DataPlaneTls node;
    private DataPlaneTls rogue;

    @BeforeAll
    void makeStores(@TempDir Path dir) throws Exception {
        stores = TlsStores.generate(dir.resolve("tls"));
        node = tls(stores.node());
        rogue = tls(stores.rogue());
    }

    /** As a node's configuration has it: tls.conf over Pekko's defaults. */
    private DataPlaneTls tls(Path keyStore) {
        return DataPlaneTls.fromConfig(stores.tlsTcp(keyStore).withFallback(TestRollout.PEKKO));
    }

    @AfterEach
    void closePlanes() {
        planes.forEach(DataPlane::close);
        planes.clear();
    }

    @AfterAll
    void shutdown() {
        kit.shutdownTestKit();
    }

    private DataPlane start(DataPlaneTls tls, Duration requestTimeout) throws IOException {
        DataPlane p = DataPlane.start(
                "127.0.0.1", "127.0.0.1", 0, kryo, 128 * 1024, LONG, LONG, sent::addAndGet, tls, requestTimeout);
        planes.add(p);
        return p;
    }

    private Object fetch(DirectRef ref, DataPlaneTls tls) throws IOException {
        return DataPlaneClient.fetchOnce(ref, tls, "batch 7", kryo, 128 * 1024, LONG, Duration.ofSeconds(60));
    }

    @Test
    void theStoresAreReadAsArteryReadsThem() {
        assertThat(node.protocol()).isEqualTo("TLSv1.3");
        assertThat(node.mutual()).isTrue();
        assertThatThrownBy(() ->
                        DataPlaneTls.fromConfig(stores.tlsTcp(stores.node().resolveSibling("missing.p12"))))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("pekko.remote.artery.ssl.config-ssl-engine")
                .hasMessageContaining("missing.p12");
    }

    @Test
    void aPayloadAndABatchCrossTheTlsDataPlaneWholeAndOnce() throws Exception {
        DataPlane p = start(node, LONG);
        TrainingBatch batch = Payloads.batch(7, 6, 16, 4096);
        long sentBefore = sent.get();
        DirectRef ref = p.offer(new Collector.BatchReply(batch), "batch 7");
        assertThat(((Collector.BatchReply) fetch(ref, node)).batch()).isEqualTo(batch);
        TestRollout.await("the sender to count the bytes", LONG, () -> sent.get() > sentBefore);
        assertThatThrownBy(() -> fetch(ref, node))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("no longer holds the payload");

        TrainingBatch relayed = Payloads.batch(8, 3, 8, 2048);
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        BatchWireFormat.write(relayed, expected);
        DirectRef batchRef = p.offer(new Collector.BatchReply(relayed), "batch 8");
        try (DataPlaneClient.BatchStream stream =
                DataPlaneClient.openBatch(batchRef, node, LONG, Duration.ofSeconds(60))) {
            assertThat(stream.length()).isEqualTo(expected.size());
            assertThat(stream.in().readNBytes((int) stream.length())).isEqualTo(expected.toByteArray());
            assertThat(stream.in().read())
                    .as("the holder ends the TLS stream after the batch")
                    .isEqualTo(-1);
        }
        for (Reason r : Reason.values()) {
            assertThat(p.refused(r)).as("refused as %s", r).isZero();
        }
        TestRollout.await("every connection to be done with", LONG, () -> p.connections() == 0);
    }

    @Test
    void payloadsFromOneNodeShareOneTlsConnectionAndAKeptConnectionIsStillRefusedToARogue() throws Exception {
        DataPlane p = start(node, LONG);
        try (DataPlaneClient client = new DataPlaneClient(node)) {
            for (int i = 0; i < 10; i++) {
                TrainingBatch b = Payloads.batch(i, 2, 8, 1024);
                DirectRef ref = p.offer(new Collector.BatchReply(b), "batch " + i);
                assertThat(((Collector.BatchReply) client.fetch(ref, "batch " + i, kryo, 128 * 1024, LONG, LONG))
                                .batch())
                        .isEqualTo(b);
            }
            assertThat(client.opened()).as("one handshake for ten payloads").isEqualTo(1);
            assertThat(client.reused()).isEqualTo(9);
        }
        try (DataPlaneClient stranger = new DataPlaneClient(rogue)) {
            DirectRef ref = p.offer(new Collector.BatchReply(Payloads.batch(11, 2, 8, 1024)), "batch 11");
            assertThatThrownBy(() -> stranger.fetch(ref, "batch 11", kryo, 128 * 1024, LONG, LONG))
                    .isInstanceOf(IOException.class);
        }
        TestRollout.await(
                "the rogue's connection to be refused: it presents no certificate",
                LONG,
                () -> p.refused(Reason.NO_CERTIFICATE) == 1);
        TestRollout.await("every connection to be done with", LONG, () -> p.connections() == 0);
        // The kept connections the node let go of when its client closed are not refusals.
        for (Reason r : Reason.values()) {
            assertThat(p.refused(r)).as("refused as %s", r).isEqualTo(r == Reason.NO_CERTIFICATE ? 1 : 0);
        }
    }

    @Test
    void aPeerWithTheSelfSignedCertificateIsRefusedCountedAndLoggedOnce() throws Exception {
        DataPlane p = start(node, LONG);
        TrainingBatch batch = Payloads.batch(9, 2, 4, 256);
        DirectRef ref = p.offer(new Collector.BatchReply(batch), "batch 9");
        // Configured as a node, with rogue.p12: the JDK's key manager offers only a certificate of
        // a CA the data plane names (the trust store's), so the rogue presents none.
        assertThatThrownBy(() -> fetch(ref, rogue)).isInstanceOf(IOException.class);
        TestRollout.await("the refusal to be counted", LONG, () -> p.refused(Reason.NO_CERTIFICATE) == 1);

        // A peer that presents its self-signed certificate anyway is refused by the trust store.
        SSLContext insisting = insistingClient(stores.rogue());
        try (LogCapture log = new LogCapture()) {
            for (int i = 0; i < 3; i++) {
                try (SSLSocket s = (SSLSocket) insisting.getSocketFactory().createSocket("127.0.0.1", p.port())) {
                    s.setSoTimeout((int) LONG.toMillis());
                    requestAndExpectNoAnswer(s, ref);
                }
            }
            TestRollout.await("three refusals to be counted", LONG, () -> p.refused(Reason.UNTRUSTED_CERTIFICATE) == 3);
            assertThat(log.warningsContaining("refused a connection"))
                    .as("one line for three refusals of one reason")
                    .hasSize(1)
                    .allMatch(l -> l.contains("untrusted_certificate"));
        }
        // Never past the handshake: the payload is still there for a node of the cluster.
        assertThat(((Collector.BatchReply) fetch(ref, node)).batch()).isEqualTo(batch);
        TestRollout.await("every connection to be done with", LONG, () -> p.connections() == 0);
    }

    /** A TLS client that trusts the cluster's CA and presents the key of {@code keyStore}, whatever the server asks for. */
    private SSLContext insistingClient(Path keyStore) throws Exception {
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(keyStore)) {
            keys.load(in, TlsStores.PASSWORD.toCharArray());
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, TlsStores.PASSWORD.toCharArray());
        X509ExtendedKeyManager own = (X509ExtendedKeyManager) kmf.getKeyManagers()[0];
        String alias = own.getClientAliases("EC", null)[0];
        X509ExtendedKeyManager insisting = new X509ExtendedKeyManager() {
            @Override
            public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
                return alias;
            }

            @Override
            public String[] getClientAliases(String keyType, Principal[] issuers) {
                return new String[] {alias};
            }

            @Override
            public String[] getServerAliases(String keyType, Principal[] issuers) {
                return own.getServerAliases(keyType, issuers);
            }

            @Override
            public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
                return own.chooseServerAlias(keyType, issuers, socket);
            }

            @Override
            public X509Certificate[] getCertificateChain(String a) {
                return own.getCertificateChain(a);
            }

            @Override
            public PrivateKey getPrivateKey(String a) {
                return own.getPrivateKey(a);
            }
        };
        SSLContext context = SSLContext.getInstance("TLSv1.3");
        context.init(new KeyManager[] {insisting}, trustManagers(), null);
        return context;
    }

    private TrustManager[] trustManagers() throws Exception {
        KeyStore trust = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(stores.trustStore())) {
            trust.load(in, TlsStores.PASSWORD.toCharArray());
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        return tmf.getTrustManagers();
    }

    /**
     * Completes the client's side of the handshake (with TLS 1.3 the server checks the client's
     * certificate after that), sends a request for {@code ref} and expects the connection to end
     * without an answer.
     */
    private static void requestAndExpectNoAnswer(SSLSocket s, DirectRef ref) throws IOException {
        try {
            s.startHandshake();
            s.getOutputStream().write(("RLP1 " + ref.token() + "\n").getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
        } catch (IOException refusedAlready) {
            // the data plane may have ended the connection before the request was written
        }
        assertThat(readAnswer(s)).as("no answer").isEqualTo(-1);
    }

    @Test
    void aPeerWithoutACertificateIsRefusedAndCounted() throws Exception {
        DataPlane p = start(node, LONG);
        DirectRef ref = p.offer(new Collector.BatchReply(Payloads.batch(10, 1, 2, 16)), "batch 10");
        // Trusts the cluster's CA, so the server's certificate is fine; has no key of its own.
        SSLContext anonymous = SSLContext.getInstance("TLSv1.3");
        anonymous.init(null, trustManagers(), null);
        try (SSLSocket s = (SSLSocket) anonymous.getSocketFactory().createSocket("127.0.0.1", p.port())) {
            s.setSoTimeout((int) LONG.toMillis());
            requestAndExpectNoAnswer(s, ref);
        }
        TestRollout.await("the refusal to be counted", LONG, () -> p.refused(Reason.NO_CERTIFICATE) == 1);
        assertThat(((Collector.BatchReply) fetch(ref, node)).batch()).isNotNull();
    }

    @Test
    void plainTcpToTheTlsDataPlaneIsRefusedAndCounted() throws Exception {
        DataPlane p = start(node, LONG);
        DirectRef ref = p.offer(new Collector.BatchReply(Payloads.batch(11, 1, 2, 16)), "batch 11");
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", p.port()), 10_000);
            s.setSoTimeout((int) LONG.toMillis());
            s.getOutputStream().write(("RLP1 " + ref.token() + "\n").getBytes(StandardCharsets.US_ASCII));
            assertThat(readAnswer(s)).as("no answer, the token not looked at").isEqualTo(-1);
        }
        assertThatThrownBy(() -> fetch(ref, null)).as("a receiver without TLS").isInstanceOf(IOException.class);
        TestRollout.await("both refusals to be counted", LONG, () -> p.refused(Reason.NOT_TLS) == 2);
        assertThat(((Collector.BatchReply) fetch(ref, node)).batch()).isNotNull();
    }

    @Test
    void aClientRefusesADataPlaneWhoseCertificateItsTrustStoreDoesNotAccept() throws Exception {
        DataPlane impostor = start(rogue, LONG);
        DirectRef ref = impostor.offer(new Collector.BatchReply(Payloads.batch(12, 1, 2, 16)), "batch 12");
        assertThatThrownBy(() -> fetch(ref, node))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("TLS handshake with the data plane at 127.0.0.1:" + impostor.port() + " failed");
        assertThatThrownBy(() -> DataPlaneClient.openBatch(ref, node, LONG, LONG))
                .hasMessageContaining("TLS handshake");
    }

    @Test
    void aClientThatNeverCompletesItsHandshakeIsCutOffAtTheDeadlineAndHoldsNoThread() throws Exception {
        // Long enough for a whole handshake on a loaded machine, short for the test.
        Duration deadline = Duration.ofSeconds(3);
        DataPlane p = start(node, deadline);
        List<Socket> silent = new ArrayList<>();
        try {
            for (int i = 0; i < 4; i++) {
                Socket s = new Socket();
                s.connect(new InetSocketAddress("127.0.0.1", p.port()), 10_000);
                silent.add(s);
            }
            // One that starts a TLS record and then sends a byte every 200 ms: its reads never time
            // out, only the deadline ends it.
            Socket trickle = new Socket();
            trickle.connect(new InetSocketAddress("127.0.0.1", p.port()), 10_000);
            silent.add(trickle);
            Thread dribbler = Thread.ofVirtual().start(() -> {
                try {
                    for (int i = 0; i < 50; i++) {
                        trickle.getOutputStream().write(i == 0 ? 0x16 : 0x03);
                        Thread.sleep(200);
                    }
                } catch (IOException | InterruptedException e) {
                    // cut off: what the test expects
                }
            });
            TestRollout.await("the silent connections to be served", LONG, () -> p.connections() == silent.size());
            // Meanwhile the data plane serves others.
            TrainingBatch batch = Payloads.batch(13, 2, 4, 256);
            DirectRef ref = p.offer(new Collector.BatchReply(batch), "batch 13");
            assertThat(((Collector.BatchReply) fetch(ref, node)).batch()).isEqualTo(batch);

            long start = System.nanoTime();
            for (Socket s : silent) {
                s.setSoTimeout((int) LONG.toMillis());
                assertThat(readAnswer(s)).isEqualTo(-1);
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            assertThat(seconds)
                    .as("every connection closed by the deadline, not later")
                    .isLessThan(deadline.toSeconds() + 10);
            dribbler.join(10_000);
            TestRollout.await("the connections' threads to end", LONG, () -> p.connections() == 0);
            TestRollout.await("five refusals for the deadline", LONG, () -> p.refused(Reason.TIMEOUT) == silent.size());
        } finally {
            for (Socket s : silent) {
                s.close();
            }
        }
    }

    /** The first byte of an answer, -1 at the end of the stream or when the peer reset the connection. */
    private static int readAnswer(Socket s) {
        try {
            return s.getInputStream().read();
        } catch (java.net.SocketTimeoutException e) {
            throw new AssertionError("no end of stream within the read timeout", e);
        } catch (IOException reset) {
            return -1;
        }
    }
}
