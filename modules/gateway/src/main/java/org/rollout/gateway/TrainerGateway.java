package org.rollout.gateway;

import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.rollout.api.InvalidConfigException;
import org.rollout.http.Http1Server;
import org.rollout.http.Http1Server.Exchange;
import org.rollout.http.Http1Server.Request;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.wire.GatewayJson;
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
 * <p>The server is {@link Http1Server}. Each exchange runs on its own virtual thread; a pull blocks its thread until a batch is ready
 * or its wait ends. A batch goes out with its exact {@code Content-Length} (its metadata encoded
 * first), in 1 MiB writes straight from the tensors, so the gateway never holds an encoded copy, and a trainer that reads slowly holds its thread (not
 * memory) through TCP back-pressure.
 *
 * <p>Where the batch is read: a pull whose trainer follows redirects ({@code
 * X-Rollout-Follow-Redirect: 1}) through a gateway on another node than the collector's is
 * answered {@code 307} to the same pull on the collector's node's gateway (when that node
 * advertises one), so the batch leaves that node once, straight to the trainer; nothing is handed
 * out for such a pull. Any other pull is served here, relayed from the collector's node.
 *
 * <p>Delivery: the gateway adds nothing to the engine's rules. A batch whose stream breaks (the
 * trainer went away mid-batch) stays unacknowledged and comes again after the engine's {@code
 * batch_ack_timeout}, with the same id. A pull whose trainer disconnects while it waits still takes
 * the next batch from the engine; its response then fails at the status line and the batch goes
 * to the next pull at once.
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

    private final Http1Server server;
    private final GatewayHandler handler;
    private final GatewayConfig config;
    private final AtomicBoolean closed = new AtomicBoolean();

    private TrainerGateway(Http1Server server, GatewayHandler handler, GatewayConfig config) {
        this.handler = handler;
        this.server = server;
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
        Objects.requireNonNull(engine, "engine");
        return start(config, List.of(engine), extras);
    }

    /**
     * As above, for a trainer that pulls with several data-parallel ranks ({@code
     * rollout.train_data_parallel_size}): {@code ranks.get(r)} serves the pulls, acknowledgements
     * and status of rank {@code r} ({@code ?rank=r}; a batch's acknowledgement finds its rank in the
     * batch id), rank 0's the rest.
     */
    public static TrainerGateway start(GatewayConfig config, List<? extends RolloutClient> ranks, GatewayExtras extras)
            throws IOException {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(extras, "extras");
        if (ranks.isEmpty()) {
            throw new IllegalArgumentException("the trainer gateway needs the engine of at least one trainer rank");
        }
        List<RolloutClient> engines = List.copyOf(ranks);
        AtomicReference<Http1Server> bound = new AtomicReference<>();
        GatewayHandler handler = new GatewayHandler(engines, config, extras, () -> {
            Http1Server s = bound.get();
            return s == null ? 0 : s.connectionsAccepted();
        });
        Http1Server.Options options = Http1Server.Options.DEFAULT
                .withErrors(TrainerGateway::errorBody)
                // Every body is read by the handler: an upload copied to disk as it arrives, any
                // other up to GatewayHandler.MAX_REQUEST_BYTES (413 past it), never held whole.
                .withStreamBody(r -> true);
        if (config.tls()) {
            options = options.withTls(sslContext(config));
        }
        Http1Server server;
        try {
            server = Http1Server.start(
                    config.host(), config.port(), route(handler, extras.routes()), "trainer-gateway", options);
        } catch (BindException e) {
            throw new IOException(
                    "cannot bind the trainer gateway to " + config.host() + ":" + config.port() + ": " + e.getMessage(),
                    e);
        }
        bound.set(server);
        TrainerGateway gateway = new TrainerGateway(server, handler, config);
        log.info("trainer gateway listening on {} ({})", gateway.uri(), config);
        return gateway;
    }

    /** A request to the route with the longest prefix of its path, else to the gateway's own endpoints. */
    private static Http1Server.Handler route(GatewayHandler gateway, Map<String, Http1Server.Handler> routes) {
        List<Map.Entry<String, Http1Server.Handler>> byLength = routes.entrySet().stream()
                .sorted(Comparator.comparingInt((Map.Entry<String, Http1Server.Handler> e) ->
                                e.getKey().length())
                        .reversed())
                .toList();
        return (Request req, Exchange ex) -> {
            for (Map.Entry<String, Http1Server.Handler> r : byLength) {
                if (req.path().startsWith(r.getKey())) {
                    return r.getValue().handle(req, ex);
                }
            }
            return gateway.handle(req, ex);
        };
    }

    /** The answers the server gives itself (a request it cannot read, 408, 413, 431), in the gateway's error form. */
    private static byte[] errorBody(int status, String message) {
        String code = switch (status) {
            case 400 -> "bad_request";
            case 408 -> "request_timeout";
            case 413 -> "payload_too_large";
            case 431 -> "headers_too_large";
            default -> "internal_error";
        };
        return GatewayJson.error(code, message);
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

    /** HTTP connections accepted so far: a trainer client that keeps its connection alive adds one. */
    public long connectionsAccepted() {
        return server.connectionsAccepted();
    }

    /** Pulls answered 307 to the gateway of the node that holds the batches. */
    public long pullsRedirected() {
        return handler.pullsRedirected();
    }

    /** The port bound (the free one picked when the configured port was 0). */
    public int port() {
        return server.port();
    }

    /** The address bound. */
    public InetSocketAddress address() {
        return server.address();
    }

    /** The base URL trainers use as a contact point: {@code http(s)://host:port}. */
    public URI uri() {
        String host = server.address().getAddress().getHostAddress();
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
        server.close(1000);
    }
}
