package org.rollout.gateway;

import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.rollout.api.InvalidConfigException;
import org.rollout.trainer.RolloutClient;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The trainer gateway: an HTTP/1.1 server (HTTPS with a key store) in front of any {@link
 * RolloutClient}, so that a trainer outside the cluster, in any language, can drive the engine.
 * Endpoints and formats: docs/protocol.md ("Trainer gateway"); the Java side is {@link
 * RolloutClient#connect}.
 *
 * <pre>
 *   trainer ──HTTP──► TrainerGateway ──► engine-side RolloutClient (a node's LocalRolloutClient, …)
 *            POST /v1/batches/next?wait=S   ◄── RBATCH stream, written from the tensors as it goes
 *            POST /v1/batches/{id}/ack      POST /v1/weights     GET /v1/status     GET /health
 * </pre>
 *
 * <p>Why HTTP and not Pekko's ClusterClient: ClusterClient is deprecated, JVM-only, tunnels every
 * reply through the receptionist and is bound by Artery's frame size; trainers are usually Python
 * processes, batches are tens of megabytes, and HTTP streams them with TCP back-pressure and takes
 * a bearer token and TLS.
 *
 * <p>Each exchange runs on its own virtual thread; a pull blocks its thread until a batch is ready
 * or its wait ends. A batch goes out with its exact {@code Content-Length} (its metadata encoded
 * first), in 1 MiB writes straight from the tensors, so the gateway never holds an encoded copy, and a trainer that reads slowly holds its thread (not
 * memory) through TCP back-pressure.
 *
 * <p>Delivery: the gateway adds nothing to the engine's rules. A batch whose stream breaks (the
 * trainer went away mid-batch) stays unacknowledged and comes again after the engine's {@code
 * batch_ack_timeout}, with the same id. A pull whose trainer disconnects while it waits still takes
 * the next batch from the engine (the JDK server cannot see the disconnect), which then also comes
 * again after {@code batch_ack_timeout}.
 *
 * <p>Security: binds 127.0.0.1 unless configured otherwise; with a token, every endpoint but {@code
 * /health} and the routes a node adds ({@link GatewayExtras}: {@code /metrics}, {@code /dashboard},
 * {@code /v1/dashboard.json}, {@code /v1/dashboard/history.json}) requires {@code Authorization:
 * Bearer <token>} (401 otherwise; compared in constant time). The gateway does not own the engine-side client: {@link #close()} leaves it open.
 *
 * <p>Thread safety: {@link #close()} may be called from any thread, more than once.
 */
public final class TrainerGateway implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TrainerGateway.class);

    private final HttpServer server;
    private final ExecutorService executor;
    private final GatewayHandler handler;
    private final GatewayConfig config;
    private final AtomicBoolean closed = new AtomicBoolean();

    private TrainerGateway(HttpServer server, ExecutorService executor, GatewayHandler handler, GatewayConfig config) {
        this.handler = handler;
        this.server = server;
        this.executor = executor;
        this.config = config;
    }

    /**
     * Binds and starts the gateway in front of {@code engine}.
     *
     * @throws IOException when the address cannot be bound (the message names it)
     * @throws InvalidConfigException when the key store cannot be read or holds no usable key
     */
    public static TrainerGateway start(GatewayConfig config, RolloutClient engine) throws IOException {
        return start(config, engine, GatewayExtras.NONE);
    }

    /**
     * As {@link #start(GatewayConfig, RolloutClient)}, with a node's meters, health checks and
     * further routes ({@link GatewayExtras}).
     */
    public static TrainerGateway start(GatewayConfig config, RolloutClient engine, GatewayExtras extras)
            throws IOException {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(extras, "extras");
        Objects.requireNonNull(engine, "engine");
        InetSocketAddress address = new InetSocketAddress(config.host(), config.port());
        HttpServer server;
        try {
            if (config.tls()) {
                HttpsServer https = HttpsServer.create(address, 0);
                https.setHttpsConfigurator(new HttpsConfigurator(sslContext(config)));
                server = https;
            } else {
                server = HttpServer.create(address, 0);
            }
        } catch (BindException e) {
            throw new IOException(
                    "cannot bind the trainer gateway to " + config.host() + ":" + config.port() + ": " + e.getMessage(),
                    e);
        }
        ExecutorService executor = Executors.newThreadPerTaskExecutor(
                Thread.ofVirtual().name("trainer-gateway-", 0).factory());
        server.setExecutor(executor);
        GatewayHandler handler = new GatewayHandler(engine, config, extras);
        server.createContext("/", handler);
        extras.routes().forEach(server::createContext);
        server.start();
        TrainerGateway gateway = new TrainerGateway(server, executor, handler, config);
        log.info("trainer gateway listening on {} ({})", gateway.uri(), config);
        return gateway;
    }

    private static SSLContext sslContext(GatewayConfig config) {
        try {
            char[] password = config.keyStorePassword().toCharArray();
            KeyStore store = KeyStore.getInstance(config.keyStore().toFile(), password);
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(store, password);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(kmf.getKeyManagers(), null, null);
            return context;
        } catch (IOException | GeneralSecurityException | IllegalArgumentException e) {
            throw new InvalidConfigException(
                    "gateway.key_store",
                    config.keyStore().toString(),
                    "a readable PKCS12 or JKS key store whose key opens with gateway.key_store_password ("
                            + e.getMessage() + ")");
        }
    }

    /** The pulls' handler: what it serves now and what it refused or dropped ({@code gateway.max_waiting_pulls}). */
    GatewayHandler handler() {
        return handler;
    }

    /** The port bound (the free one picked when the configured port was 0). */
    public int port() {
        return server.getAddress().getPort();
    }

    /** The address bound. */
    public InetSocketAddress address() {
        return server.getAddress();
    }

    /** The base URL trainers use as a contact point: {@code http(s)://host:port}. */
    public URI uri() {
        String host = server.getAddress().getAddress().getHostAddress();
        if (host.contains(":")) {
            host = "[" + host + "]";
        }
        return URI.create((config.tls() ? "https" : "http") + "://" + host + ":" + port());
    }

    /**
     * Stops accepting requests; pulls waiting for a batch are interrupted and answered 503 (their
     * trainers move to another contact point); other answers and streams in progress get a second
     * to finish. Waits at most a few seconds; idempotent. The engine-side client stays open.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        // Pulls waiting for a batch are ended first and answered 503; other exchanges under way (an
        // acknowledgement being answered) get up to a second to finish before their threads are
        // interrupted: interrupting them first cut the answer to a trainer's last acknowledgement,
        // which it then retried against a closed port.
        handler.stopWatching();
        handler.interruptPulls();
        server.stop(1);
        executor.shutdownNow();
        try {
            if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
                log.warn("trainer gateway {}: some exchanges did not end within 5 s of closing", uri());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
