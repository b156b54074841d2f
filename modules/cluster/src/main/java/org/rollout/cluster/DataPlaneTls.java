package org.rollout.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.security.cert.CertificateException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;
import org.rollout.cluster.DataPlaneRefusals.Reason;
import org.rollout.cluster.DataPlaneRefusals.Refused;

/**
 * TLS for a node's data plane when Artery runs over {@code tls-tcp}: the same key store, trust
 * store, passwords, protocol, cipher suites, random number generator, mutual authentication and
 * hostname verification as Artery's {@code ConfigSSLEngineProvider}, read from {@code
 * pekko.remote.artery.ssl.config-ssl-engine}, and an {@link SSLContext} built from them the way
 * that provider builds its own. Both ends are blocking {@link SSLSocket}s layered over the data
 * plane's connected TCP sockets.
 *
 * <p>The accepting side reads the first byte itself: anything but a TLS handshake record is refused
 * as {@link Reason#NOT_TLS} before any TLS code runs. With {@code require-mutual-authentication =
 * on} it asks for the connecting node's certificate and refuses a connection without one ({@link
 * Reason#NO_CERTIFICATE}) or with one its trust store does not accept ({@link
 * Reason#UNTRUSTED_CERTIFICATE}). The connecting side always checks the accepting node's
 * certificate against its trust store. The token of the request is still checked afterwards.
 */
final class DataPlaneTls {
    /** Where Artery's TLS settings are. */
    static final String SSL_KEY = "pekko.remote.artery.ssl";

    static final String ENGINE_KEY = SSL_KEY + ".config-ssl-engine";
    static final String PROVIDER_KEY = SSL_KEY + ".ssl-engine-provider";
    /** The only provider whose settings the data plane can read. */
    static final String CONFIG_PROVIDER = "org.apache.pekko.remote.artery.tcp.ConfigSSLEngineProvider";
    /** The first byte of every TLS connection: a handshake record (ClientHello). */
    private static final int HANDSHAKE_RECORD = 0x16;

    /**
     * TLS handshakes this node runs at once as the connecting side. A handshake costs milliseconds
     * of CPU on each side; hundreds at once (a collector fetching the groups of many runners) would
     * share the cores until none finished within the accepting side's deadline. Connections queue
     * for a turn instead, and the transfers that follow are not limited.
     */
    static final int HANDSHAKES = Math.max(4, 2 * Runtime.getRuntime().availableProcessors());

    private final Semaphore turns = new Semaphore(HANDSHAKES, true);
    private final SSLContext context;
    private final String protocol;
    private final String[] cipherSuites;
    private final boolean mutual;
    private final boolean hostnameVerification;

    private DataPlaneTls(
            SSLContext context,
            String protocol,
            List<String> cipherSuites,
            boolean mutual,
            boolean hostnameVerification) {
        this.context = context;
        this.protocol = protocol;
        this.cipherSuites = cipherSuites.toArray(String[]::new);
        this.mutual = mutual;
        this.hostnameVerification = hostnameVerification;
    }

    /** Whether Artery runs over TLS ({@code pekko.remote.artery.transport = tls-tcp}). */
    static boolean arteryUsesTls(Config config) {
        return config.hasPath("pekko.remote.artery.transport")
                && config.getString("pekko.remote.artery.transport").equals("tls-tcp");
    }

    /** Whether Artery's TLS settings are those of {@code ConfigSSLEngineProvider}, which this class reads. */
    static boolean readable(Config config) {
        return !config.hasPath(PROVIDER_KEY) || config.getString(PROVIDER_KEY).equals(CONFIG_PROVIDER);
    }

    /** Artery's {@code ssl-engine-provider}, for messages. */
    static String provider(Config config) {
        return config.hasPath(PROVIDER_KEY) ? config.getString(PROVIDER_KEY) : CONFIG_PROVIDER;
    }

    /**
     * The TLS of Artery's {@code config-ssl-engine} in {@code config}.
     *
     * @throws IllegalStateException naming the setting when a store cannot be read, a password is
     *     wrong, or the protocol or random number generator is unknown
     */
    static DataPlaneTls fromConfig(Config config) {
        Config c = config.getConfig(ENGINE_KEY);
        String keyStore = c.getString("key-store");
        String trustStore = c.getString("trust-store");
        String protocol = c.getString("protocol");
        try {
            KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            keys.init(
                    load(keyStore, c.getString("key-store-password")),
                    c.getString("key-password").toCharArray());
            TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            trust.init(load(trustStore, c.getString("trust-store-password")));
            SSLContext context = SSLContext.getInstance(protocol);
            context.init(
                    keys.getKeyManagers(), trust.getTrustManagers(), random(c.getString("random-number-generator")));
            return new DataPlaneTls(
                    context,
                    protocol,
                    c.getStringList("enabled-algorithms"),
                    c.getBoolean("require-mutual-authentication"),
                    c.getBoolean("hostname-verification"));
        } catch (GeneralSecurityException | IOException | ConfigException e) {
            throw new IllegalStateException(
                    "the data plane cannot use Artery's TLS settings (" + ENGINE_KEY + ": key-store " + keyStore
                            + ", trust-store " + trustStore + ", protocol " + protocol + "): " + e.getMessage(),
                    e);
        }
    }

    private static KeyStore load(String file, String password) throws GeneralSecurityException, IOException {
        try (InputStream in = Files.newInputStream(Path.of(file))) {
            KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
            store.load(in, password.toCharArray());
            return store;
        } catch (IOException e) {
            throw new IOException(file + ": " + e, e);
        }
    }

    /** As Pekko's {@code SecureRandomFactory}: "" or "SecureRandom" the default, else that algorithm. */
    private static SecureRandom random(String name) throws NoSuchAlgorithmException {
        return name.isEmpty() || name.equals("SecureRandom") ? new SecureRandom() : SecureRandom.getInstance(name);
    }

    /** Whether the accepting side asks for and checks the connecting node's certificate. */
    boolean mutual() {
        return mutual;
    }

    /** The protocol, as configured (e.g. {@code TLSv1.3}). */
    String protocol() {
        return protocol;
    }

    /**
     * Waits up to {@code wait} for a turn to connect and complete a handshake ({@link #HANDSHAKES}
     * at once); give it back with {@link #turnDone} once the request is written.
     */
    void awaitTurn(Duration wait) throws IOException {
        try {
            if (!turns.tryAcquire(wait.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IOException("no turn for a TLS handshake with a data plane within " + wait.toSeconds()
                        + " s (" + HANDSHAKES + " at once)");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted waiting for a turn for a TLS handshake");
        }
    }

    void turnDone() {
        turns.release();
    }

    /**
     * Completes the connecting side's handshake over {@code plain}, connected to {@code host:port},
     * within {@code timeout} of no progress.
     *
     * @throws IOException naming the data plane when the handshake fails (its certificate is not
     *     trusted, this node's is refused, or it is not a TLS data plane)
     */
    SSLSocket connect(Socket plain, String host, int port, Duration timeout) throws IOException {
        plain.setSoTimeout((int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        SSLSocketFactory factory = context.getSocketFactory();
        SSLSocket s = (SSLSocket) factory.createSocket(plain, host, port, true);
        configure(s, false);
        try {
            s.startHandshake();
            return s;
        } catch (IOException e) {
            throw new IOException(
                    "the TLS handshake with the data plane at " + host + ":" + port + " failed: " + e.getMessage(), e);
        }
    }

    /**
     * Completes the accepting side's handshake over {@code plain}, whose read timeout the caller
     * has set, and checks the connecting node's certificate.
     *
     * @throws Refused with the reason when the connection is refused
     */
    SSLSocket accept(Socket plain) throws Refused {
        int first;
        try {
            first = plain.getInputStream().read();
        } catch (IOException e) {
            throw new Refused(e instanceof SocketTimeoutException ? Reason.TIMEOUT : Reason.HANDSHAKE_FAILED, e);
        }
        if (first != HANDSHAKE_RECORD) {
            throw new Refused(
                    Reason.NOT_TLS,
                    first < 0
                            ? "closed without sending a byte"
                            : String.format("first byte 0x%02x, not a TLS handshake record", first));
        }
        SSLSocket s;
        try {
            // The byte read is handed back to the TLS socket as already consumed.
            s = (SSLSocket) context.getSocketFactory()
                    .createSocket(plain, new ByteArrayInputStream(new byte[] {(byte) first}), true);
            configure(s, true);
            s.startHandshake();
        } catch (IOException e) {
            throw new Refused(failure(e), e);
        }
        return s;
    }

    /**
     * Why a handshake that threw {@code e} failed: the trust store's verdict comes as a {@link
     * CertificateException}; no certificate at all as the JDK's "Empty client certificate chain".
     */
    static Reason failure(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof CertificateException) {
                return Reason.UNTRUSTED_CERTIFICATE;
            }
            if (c instanceof SocketTimeoutException) {
                return Reason.TIMEOUT;
            }
            if (c.getMessage() != null && c.getMessage().contains("Empty client certificate chain")) {
                return Reason.NO_CERTIFICATE;
            }
        }
        return Reason.HANDSHAKE_FAILED;
    }

    /**
     * As Artery's engines: only the configured protocol and cipher suites; the accepting side
     * requires a certificate when mutual; the connecting side checks the host name when {@code
     * hostname-verification} is on.
     */
    private void configure(SSLSocket s, boolean accepting) {
        SSLParameters p = s.getSSLParameters();
        p.setProtocols(new String[] {protocol});
        p.setCipherSuites(cipherSuites);
        if (accepting) {
            p.setNeedClientAuth(mutual);
        } else if (hostnameVerification) {
            p.setEndpointIdentificationAlgorithm("HTTPS");
        }
        s.setSSLParameters(p);
    }
}
