package org.rollout.trainer;

import static org.rollout.trainer.GatewayCalls.errorOf;
import static org.rollout.trainer.GatewayCalls.parse;
import static org.rollout.trainer.GatewayCalls.requestError;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import org.rollout.api.TrainingBatch;
import org.rollout.trainer.wire.BatchFormatException;
import org.rollout.trainer.wire.BatchWireFormat;
import org.rollout.trainer.wire.GatewayJson;

/**
 * A {@link RolloutClient} for a trainer outside the engine: HTTP/1.1 to the trainer gateways at
 * the configured contact points ({@link RolloutClient#connect}). One pooled {@link HttpClient}; a
 * batch pull over plain {@code http} reads its response from a socket of its own ({@link
 * PlainHttpExchange}, kept alive from one pull to the next), so that the batch's bytes go from the
 * socket to the decoder in the pulling thread. A pull through a gateway on another node than the
 * one that holds the batches is redirected there, and later pulls go there first ({@link
 * PullRedirects}): the batch crosses no node on its way.
 *
 * <pre>
 *   nextBatch()      POST /v1/batches/next?wait=poll_wait[&lease=L&holder=H]   repeated until a batch comes (200), 204 = none yet
 *                    (X-Rollout-Follow-Redirect: 1; a 307 is followed to the node that holds the batches)
 *   acknowledge(b)   POST /v1/batches/{id}/ack {"task_ids": [..]}
 *   (a thread)       POST /v1/leases/renew {"holder", "lease"}  every lease/3 while a batch is held
 *   publishWeights   POST /v1/weights {"version", "path"}   409 → REFUSED, 502 → NOT_LOADED
 *   status()         GET  /v1/status
 *   stats(v)         GET  /v1/stats?since_version=v
 * </pre>
 *
 * <p>Batches are read from the response as it arrives (RBATCH v1, {@link BatchWireFormat}) straight
 * into tensor builders: the client holds the decoded batch and a small buffer, and a trainer that
 * reads slowly slows the gateway down through TCP. A body from which nothing arrives for {@code
 * read_idle_timeout} is abandoned.
 *
 * <p>Failures: a contact point that refuses the connection, times out, breaks the connection (also
 * mid-batch) or answers 503 is left for the next; rounds over all of them back off until {@code
 * retry_deadline} (then {@link EngineUnreachableException}). Every call is safe to repeat: pulling
 * again after a broken batch stream gets the next batch, and the broken one comes again after the
 * engine's {@code batch_ack_timeout}; acknowledging is idempotent; a publish repeated after its
 * first attempt broke off is fenced by its version (the 409 then says that the first attempt may
 * have been applied). Answers that retrying cannot change (401, 400, 404, 500) are {@link
 * GatewayRequestException}s.
 *
 * <p>Redelivery: a batch delivered again has the same id and is returned as is; the trainer
 * decides (acknowledge again without training twice).
 *
 * <p>Thread safety: safe for concurrent use. Every blocking call honours interruption: it throws
 * {@link InterruptedException}, and a batch whose pull is interrupted comes again after {@code
 * batch_ack_timeout}. After {@link #close()}, calls throw {@link IllegalStateException}.
 */
public final class HttpRolloutClient implements RolloutClient {
    private static final System.Logger log = System.getLogger(HttpRolloutClient.class.getName());
    private static final Duration FOREVER = Duration.ofDays(365L * 100);

    private final ClientConfig config;
    /** Requests with failover and backoff over the contact points; the HTTP client and sockets. */
    private final GatewayCalls calls;
    /** Renews the lease of pulled batches until they are acknowledged; null without a lease. */
    private final LeaseKeeper leases;
    /** Pulls from the node that holds the batches, following gateways' redirects there. */
    private final PullRedirects redirects;

    HttpRolloutClient(ClientConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        this.calls = new GatewayCalls(config);
        this.redirects = new PullRedirects(calls, config.followPullRedirects());
        this.leases = config.lease() == null
                ? null
                : new LeaseKeeper(new BatchLease(holderName(), config.lease()), this::renewLease);
    }

    /** This process's name as a batch holder: host, process id and a nonce for each client. */
    private static String holderName() {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            host = "localhost";
        }
        return host + ":" + ProcessHandle.current().pid() + ":"
                + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);
    }

    /** The configuration this client was connected with. */
    public ClientConfig config() {
        return config;
    }

    @Override
    public TrainingBatch nextBatch() throws InterruptedException {
        long started = System.nanoTime();
        long nextReport = started + WaitReport.FIRST.toNanos();
        while (true) {
            Optional<TrainingBatch> b = pull(config.pollWait());
            if (b.isPresent()) {
                return b.get();
            }
            if (System.nanoTime() - nextReport >= 0) {
                nextReport = System.nanoTime() + WaitReport.EVERY.toNanos();
                reportWait((System.nanoTime() - started) / 1e9);
            }
        }
    }

    /** Says in the log why no batch comes: who holds the batches handed out, and until when. */
    private void reportWait(double waitedSeconds) throws InterruptedException {
        String line;
        try {
            line = WaitReport.line(
                    waitedSeconds,
                    status(),
                    leases == null ? "" : leases.lease().holder());
        } catch (RuntimeException e) {
            line = String.format(
                    Locale.ROOT, "no batch for %.0f s (the status could not be read: %s)", waitedSeconds, e);
        }
        log.log(System.Logger.Level.INFO, line);
    }

    @Override
    public Optional<TrainingBatch> nextBatch(Duration timeout) throws InterruptedException {
        // Saturated: a timeout of years must neither overflow toNanos() nor the deadline arithmetic.
        long nanos = timeout.isNegative() ? 0 : timeout.compareTo(FOREVER) > 0 ? FOREVER.toNanos() : timeout.toNanos();
        long deadline = System.nanoTime() + nanos;
        while (true) {
            long remaining = Math.max(0, deadline - System.nanoTime());
            Optional<TrainingBatch> b =
                    pull(Duration.ofNanos(Math.min(remaining, config.pollWait().toNanos())));
            if (b.isPresent() || System.nanoTime() - deadline >= 0) {
                return b;
            }
        }
    }

    private Optional<TrainingBatch> pull(Duration wait) throws InterruptedException {
        String seconds = String.format(Locale.ROOT, "%.3f", wait.toNanos() / 1e9);
        String path = "/v1/batches/next?wait=" + seconds
                + (config.rank() == ClientConfig.NO_RANK ? "" : "&rank=" + config.rank())
                + (leases == null
                        ? ""
                        : String.format(
                                        Locale.ROOT,
                                        "&lease=%.3f",
                                        leases.lease().duration().toMillis() / 1000.0)
                                + "&holder="
                                + URLEncoder.encode(leases.lease().holder(), StandardCharsets.UTF_8));
        Duration timeout = wait.plus(config.requestTimeout());
        return calls.call(
                "pull a batch",
                // A batch body is read by this thread from a plain socket kept alive between pulls
                // (PlainHttpExchange); TLS goes through java.net.http. A redirect to the gateway of
                // the node that holds the batches is followed (PullRedirects).
                base -> redirects.send(base, path, timeout),
                (base, status, body, ambiguous) -> switch (status) {
                    case 204 -> {
                        body.transferTo(OutputStream.nullOutputStream());
                        yield Optional.empty();
                    }
                    case 200 -> {
                        TrainingBatch batch = BatchWireFormat.read(body);
                        if (body.read() != -1) {
                            throw new BatchFormatException(
                                    "batch " + batch.batchId() + ": bytes follow the trailer; the body must end there");
                        }
                        if (leases != null) {
                            leases.holding(batch.batchId());
                        }
                        yield Optional.of(batch);
                    }
                    default -> throw requestError("pull a batch", base, status, body);
                });
    }

    /** Acknowledges with the batch's task ids, so that any gateway can retire its tasks (below). */
    @Override
    public void acknowledge(TrainingBatch batch) throws InterruptedException {
        acknowledge(
                batch.batchId(), batch.groups().stream().map(g -> g.taskId()).toList());
    }

    @Override
    public void acknowledge(long batchId) throws InterruptedException {
        acknowledge(batchId, List.of());
    }

    /**
     * {@inheritDoc}
     *
     * <p>The task ids travel in the request's body ({@code {"task_ids": [..]}}). A gateway other
     * than the one that handed the batch out (that one's node is gone, the call failed over) does
     * not know the batch; with the ids it still retires its tasks, also on a collector that took
     * over from one lost with its node. Without them (an empty list) such an acknowledgement would
     * be answered {@code known: false} and the tasks delivered again.
     */
    @Override
    public void acknowledge(long batchId, List<Long> taskIds) throws InterruptedException {
        String what = "acknowledge batch " + batchId;
        HttpRequest.BodyPublisher ids = taskIds.isEmpty()
                ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofByteArray(GatewayJson.ackRequest(taskIds));
        GatewayJson.AckReply reply = calls.call(
                what,
                calls.viaHttpClient(
                        base -> calls.request(base, "/v1/batches/" + batchId + "/ack", config.requestTimeout())
                                .header("Content-Type", "application/json")
                                .POST(ids)
                                .build()),
                (base, status, body, ambiguous) -> {
                    if (status != 200) {
                        throw requestError(what, base, status, body);
                    }
                    return parse(what, base, body, GatewayJson::parseAck);
                });
        if (leases != null) {
            leases.done(batchId);
        }
        if (!reply.known()) {
            log.log(
                    System.Logger.Level.DEBUG,
                    "batch {0} was not outstanding at the gateway (acknowledged before, or handed out by another gateway)",
                    batchId);
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>{@code weights} is sent as an absolute path (resolved against this process's working
     * directory), since the servers read it.
     */
    @Override
    public PublishResult publishWeights(int version, Path weights) throws InterruptedException {
        return publish(
                "publish weights version " + version,
                GatewayJson.publishRequest(version, weights.toAbsolutePath().toString()));
    }

    /**
     * Publishes {@code version} under {@code rollout.weight_transfer = nccl}: {@code POST /v1/weights
     * {"version", "tensors": [{"name", "dtype", "shape"}, ..]}}. The engine tells every server to
     * receive these tensors from the weight-update group; this trainer's rank 0 must broadcast them
     * (in this order) while the call is in progress, so call it from another thread than the one
     * broadcasting. Answers and errors as {@link #publishWeights}.
     */
    public PublishResult publishTensors(int version, List<TensorSpec> tensors) throws InterruptedException {
        return publish(
                "publish tensors of weights version " + version, GatewayJson.publishTensorsRequest(version, tensors));
    }

    private PublishResult publish(String what, byte[] json) throws InterruptedException {
        return calls.call(
                what,
                calls.viaHttpClient(base -> calls.request(base, "/v1/weights", config.publishTimeout())
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofByteArray(json))
                        .build()),
                (base, status, body, ambiguous) -> switch (status) {
                    case 200 -> parse(what, base, body, GatewayJson::parsePublishResult);
                    case 409 -> {
                        String reason = errorOf(body).message();
                        throw new WeightPublishException(
                                WeightPublishException.Kind.REFUSED,
                                reason
                                        + (ambiguous == null
                                                ? ""
                                                : " (an earlier attempt of this publish broke off with '" + ambiguous
                                                        + "' and may have been applied)"));
                    }
                    case 502 ->
                        throw new WeightPublishException(
                                WeightPublishException.Kind.NOT_LOADED,
                                errorOf(body).message());
                    default -> throw requestError(what, base, status, body);
                });
    }

    /**
     * {@inheritDoc}
     *
     * <p>{@code POST /v1/leases/renew {"holder", "lease"}}. A client configured with a lease
     * ({@link ClientConfig#lease()}) calls this itself while it holds batches.
     */
    @Override
    public List<Long> renewLease(BatchLease lease) throws InterruptedException {
        byte[] json = GatewayJson.renewRequest(lease);
        return calls.call(
                "renew the lease of " + lease.holder(),
                calls.viaHttpClient(base -> calls.request(base, "/v1/leases/renew", config.requestTimeout())
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofByteArray(json))
                        .build()),
                (base, status, body, ambiguous) -> {
                    if (status != 200) {
                        throw requestError("renew a lease", base, status, body);
                    }
                    return parse("renew a lease", base, body, GatewayJson::parseRenewed);
                });
    }

    /** Plain connections opened for pulls so far: one kept alive across pulls counts once. */
    public long pullConnectionsOpened() {
        return calls.pullConnectionsOpened();
    }

    /** Pulls answered by the gateway of the node that holds the batches after a redirect. */
    public long pullsFromHolder() {
        return redirects.followed();
    }

    /** Redirects that could not be followed: the pull went back to its contact point and was relayed. */
    public long redirectsFellBack() {
        return redirects.fellBack();
    }

    /** The batches this client holds under its lease and renews (empty without a lease). */
    public Set<Long> leasedBatches() {
        return leases == null ? Set.of() : leases.held();
    }

    @Override
    public RolloutStatus status() throws InterruptedException {
        return calls.call(
                "read status",
                calls.viaHttpClient(base -> calls.request(
                                base,
                                config.rank() == ClientConfig.NO_RANK
                                        ? "/v1/status"
                                        : "/v1/status?rank=" + config.rank(),
                                config.requestTimeout())
                        .GET()
                        .build()),
                (base, status, body, ambiguous) -> {
                    if (status != 200) {
                        throw requestError("read status", base, status, body);
                    }
                    return parse("read status", base, body, GatewayJson::parseStatus);
                });
    }

    @Override
    public StatsPage stats(int sinceVersion) throws InterruptedException {
        if (sinceVersion < 0) {
            throw new IllegalArgumentException("sinceVersion must be >= 0, got " + sinceVersion);
        }
        return calls.call(
                "read statistics",
                calls.viaHttpClient(base -> calls.request(
                                base,
                                "/v1/stats?since_version=" + sinceVersion
                                        + (config.rank() == ClientConfig.NO_RANK ? "" : "&rank=" + config.rank()),
                                config.requestTimeout())
                        .GET()
                        .build()),
                (base, status, body, ambiguous) -> {
                    if (status != 200) {
                        throw requestError("read statistics", base, status, body);
                    }
                    return parse("read statistics", base, body, GatewayJson::parseStats);
                });
    }

    /** Stops every request in flight and the connection pool; never throws; idempotent. */
    @Override
    public void close() {
        if (calls.markClosed()) {
            if (leases != null) {
                leases.close();
            }
            calls.shutdown();
        }
    }

    @Override
    public String toString() {
        return "HttpRolloutClient" + config.contactPoints();
    }
}
