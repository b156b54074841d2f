package org.rollout.gateway;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import org.rollout.api.TrainingBatch;
import org.rollout.http.Http1Server.Exchange;
import org.rollout.http.Http1Server.Request;
import org.rollout.trainer.BatchLease;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.wire.BatchWireFormat;
import org.rollout.trainer.wire.EncodedBatch;
import org.rollout.trainer.wire.EncodedBatchSource;
import org.rollout.trainer.wire.GatewayJson;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The batch endpoints: {@code POST /v1/batches/next} (a pull: waits for the engine's next batch and
 * streams it as RBATCH, at most {@code gateway.max_waiting_pulls} at once; or, for a trainer that
 * follows redirects, {@code 307} to the gateway of the node that holds the batches when that is
 * another node), {@code POST /v1/batches/{id}/ack} and {@code POST /v1/leases/renew}.
 */
final class BatchEndpoints {
    // Logs under the handler's name, as the gateway's lines always have.
    private static final Logger log = LoggerFactory.getLogger(GatewayHandler.class);
    private static final Duration REFUSAL_LOG_EVERY = Duration.ofSeconds(10);
    /**
     * A pull's request header by which the trainer says it follows a {@code 307} to the gateway of
     * the node that holds the batches (both trainer clients send it; a pull without it is served
     * here, relayed when the batches are held elsewhere).
     */
    static final String FOLLOW_HEADER = "X-Rollout-Follow-Redirect";

    /** The engine, one handle per trainer rank ({@code rollout.train_data_parallel_size}), by rank. */
    private final List<RolloutClient> ranks;

    private final Duration maxPollWait;
    private final int maxWaitingPulls;
    /** Pulls served at once (waiting for a batch or streaming one), at most {@code gateway.max_waiting_pulls}. */
    private final Semaphore pullSlots;

    private final GatewayMeters meters;
    private final BatchStreamWatch watch;
    private final HandedOutBatches handedOut = new HandedOutBatches();
    /** The threads waiting in a pull now: {@link #interruptPulls} ends their waits when the gateway closes. */
    private final Set<Thread> waitingPulls = ConcurrentHashMap.newKeySet();

    private final AtomicLong refusalsLogged = new AtomicLong();
    private volatile long lastRefusalLogNanos = System.nanoTime() - REFUSAL_LOG_EVERY.toNanos();

    BatchEndpoints(
            List<RolloutClient> ranks,
            Duration maxPollWait,
            Semaphore pullSlots,
            int maxWaitingPulls,
            GatewayMeters meters,
            BatchStreamWatch watch) {
        this.ranks = List.copyOf(ranks);
        this.maxPollWait = maxPollWait;
        this.pullSlots = pullSlots;
        this.maxWaitingPulls = maxWaitingPulls;
        this.meters = meters;
        this.watch = watch;
    }

    /** Interrupts every pull waiting for a batch: each is answered 503, so its trainer tries another contact point. */
    void interruptPulls() {
        waitingPulls.forEach(Thread::interrupt);
    }

    void next(Request req, Exchange ex) throws Refusal, IOException, InterruptedException {
        PullQuery query;
        try {
            query = PullQuery.parse(req.query(), maxPollWait, String.valueOf(req.remote()), ranks.size());
        } catch (IllegalArgumentException e) {
            throw new Refusal(400, "bad_request", e.getMessage());
        }
        if (!pullSlots.tryAcquire()) {
            long refused = meters.pullsRefused.incrementAndGet();
            long now = System.nanoTime();
            if (now - lastRefusalLogNanos >= REFUSAL_LOG_EVERY.toNanos()) {
                lastRefusalLogNanos = now;
                long since = refused - refusalsLogged.getAndSet(refused);
                log.warn(
                        "{} pull(s) refused (503 {}) since the last report: {} pulls under way, the limit"
                                + " gateway.max_waiting_pulls (node flag --gateway-max-waiting-pulls)",
                        since,
                        Refusal.TOO_MANY_PULLS,
                        maxWaitingPulls);
            }
            throw new Refusal(
                    503,
                    Refusal.TOO_MANY_PULLS,
                    "this gateway already serves " + maxWaitingPulls + " pulls, its limit gateway.max_waiting_pulls"
                            + " (node flag --gateway-max-waiting-pulls): read the answers of the pulls already"
                            + " open, or try again later or on another gateway");
        }
        meters.pullsAdmitted.incrementAndGet();
        try {
            pull(req, ex, query);
        } finally {
            pullSlots.release();
        }
    }

    /** Whether the trainer said it follows a redirect to the node that holds the batches. */
    static boolean follows(Request req) {
        String v = req.header(FOLLOW_HEADER);
        return v != null && (v.equals("1") || v.equalsIgnoreCase("true"));
    }

    private void pull(Request req, Exchange ex, PullQuery query) throws IOException, InterruptedException {
        EncodedBatchSource.Pulled pulled;
        waitingPulls.add(Thread.currentThread());
        try {
            pulled = nextEncoded(query, follows(req));
        } finally {
            waitingPulls.remove(Thread.currentThread());
        }
        if (pulled.readFrom() != null) {
            redirect(req, ex, pulled.readFrom());
            return;
        }
        Optional<EncodedBatch> next = pulled.batch();
        if (next.isEmpty()) {
            ex.respond(204, 0).close();
            return;
        }
        try (EncodedBatch body = next.get()) {
            send(ex, body);
        }
    }

    /**
     * The engine's next batch in RBATCH form: relayed from the node that holds it when the engine
     * can ({@link EncodedBatchSource}), else encoded here.
     */
    private EncodedBatchSource.Pulled nextEncoded(PullQuery q, boolean readElsewhere) throws InterruptedException {
        RolloutClient engine = ranks.get(q.rank());
        if (engine instanceof EncodedBatchSource source) {
            return source.pullEncoded(q.maxWait(), q.holder(), q.lease(), readElsewhere);
        }
        Optional<TrainingBatch> next =
                q.lease() == null ? engine.nextBatch(q.maxWait()) : engine.nextBatch(q.maxWait(), q.lease());
        if (next.isEmpty()) {
            return EncodedBatchSource.Pulled.of(Optional.empty());
        }
        try {
            return EncodedBatchSource.Pulled.of(Optional.of(EncodedBatch.of(next.get())));
        } catch (IOException e) {
            engine.release(next.get().batchId());
            throw new IllegalStateException(
                    "batch " + next.get().batchId() + ": encoding its groups' metadata failed: " + e.getMessage(), e);
        }
    }

    /**
     * Answers {@code 307 Temporary Redirect} to the same pull on the trainer gateway at {@code
     * gateway}, the one on the node that holds the batches: nothing was handed out for this pull, so
     * a trainer that cannot follow (that gateway is unreachable or refuses) pulls here again without
     * {@value #FOLLOW_HEADER} and its batch is relayed. The body says the same as JSON: {@code
     * {"read_from": base URL, "location": the URL to pull}}.
     */
    private void redirect(Request req, Exchange ex, URI gateway) throws IOException {
        String base = gateway.toString().replaceAll("/+$", "");
        String location = base + "/v1/batches/next" + (req.query().isEmpty() ? "" : "?" + req.query());
        meters.pullsRedirected.incrementAndGet();
        log.debug("pull from {} redirected to {}, the gateway of the node that holds the batches", req.remote(), base);
        ex.setHeader("Location", location);
        ex.setHeader("Cache-Control", "no-store");
        GatewayHttp.json(ex, 307, GatewayJson.readFrom(base, location));
    }

    private void send(Exchange ex, EncodedBatch body) {
        handedOut.add(body.batchId(), body.taskIds());
        ex.setHeader("Content-Type", BatchWireFormat.CONTENT_TYPE);
        ex.setHeader("X-Rollout-Batch-Id", Long.toString(body.batchId()));
        ex.setHeader("X-Rollout-Groups", Integer.toString(body.groups()));
        // The exact length up front (the metadata is encoded once for it): a plain body, encoded through
        // a 1 MiB buffer and handed to the socket in large writes (the stall watch counts each), with
        // no chunk framing for the client to undo. The tensors still go out as they are encoded
        // (or as they arrive from the node that holds the batch); nothing holds the whole body.
        // A pull whose trainer left while it waited fails here, at the status line, and its batch is
        // handed back below like a stream cut short.
        BatchStreamWatch.CountingStream out = new BatchStreamWatch.CountingStream();
        long started = System.nanoTime();
        BatchStreamWatch.Stream watched = watch.watch(body.batchId(), out);
        try {
            out.to(ex.respond(200, body.length()));
            body.writeTo(out);
            out.close();
            meters.handoff(out.count, System.nanoTime() - started);
        } catch (IOException e) {
            String who = e instanceof EncodedBatch.SourceFailedException
                    ? "the node holding it failed"
                    : "the trainer went away";
            if (out.count < body.length()) {
                // Not received whole, so never trained on: the next pull takes it, not one after
                // batch_ack_timeout (a pull whose client left while it waited shows only here).
                rankOf(body.batchId()).release(body.batchId());
                meters.batchesReleased.incrementAndGet();
                log.info(
                        "batch {} ({} groups): {} after {} of {} bytes ({}); the next pull takes it",
                        body.batchId(),
                        body.groups(),
                        who,
                        out.count,
                        body.length(),
                        e.toString());
            } else {
                log.info(
                        "batch {} ({} groups): {} after the last byte ({}); it is delivered again after"
                                + " batch_ack_timeout unless acknowledged",
                        body.batchId(),
                        body.groups(),
                        who,
                        e.toString());
            }
        } finally {
            watch.unwatch(watched);
        }
    }

    /**
     * Acknowledges batch {@code rawId} with the task ids this gateway recorded when it handed the
     * batch out, or else those of the body ({@code {"task_ids": [..]}}, sent by a trainer whose
     * call failed over from the gateway that handed it out): with them the engine retires the tasks
     * even when the batch was handed out by a collector lost with its node.
     */
    void acknowledge(Exchange ex, String rawId, byte[] body) throws Refusal, IOException, InterruptedException {
        long id;
        try {
            id = Long.parseLong(rawId);
        } catch (NumberFormatException e) {
            throw new Refusal(400, "bad_request", "batch id must be an integer, got '" + rawId + "'");
        }
        List<Long> fromTrainer;
        try {
            fromTrainer = GatewayJson.parseAckRequest(body);
        } catch (IllegalArgumentException e) {
            throw new Refusal(400, "bad_request", "batch " + id + ": " + e.getMessage());
        }
        List<Long> taskIds = handedOut.remove(id);
        boolean known = taskIds != null;
        if (taskIds == null && !fromTrainer.isEmpty()) {
            taskIds = fromTrainer;
        }
        RolloutClient engine = rankOf(id);
        if (taskIds != null) {
            engine.acknowledge(id, taskIds);
        } else {
            engine.acknowledge(id);
        }
        GatewayHttp.json(ex, 200, GatewayJson.ack(id, known));
    }

    void renewLease(Exchange ex, byte[] body) throws Refusal, IOException, InterruptedException {
        BatchLease lease;
        try {
            lease = GatewayJson.parseRenewRequest(body);
        } catch (IllegalArgumentException e) {
            throw new Refusal(400, "bad_request", e.getMessage());
        }
        List<Long> renewed = new ArrayList<>();
        for (RolloutClient engine : ranks) {
            renewed.addAll(engine.renewLease(lease)); // a holder's batches may be of any rank
        }
        GatewayHttp.json(ex, 200, GatewayJson.renewed(lease, renewed));
    }

    /**
     * The handle of the rank that handed out batch {@code batchId}: its id carries the rank in bits
     * 24 to 31 when the trainer pulls with several ranks; an id naming no rank of this run goes to
     * rank 0, which does not know it.
     */
    private RolloutClient rankOf(long batchId) {
        if (ranks.size() == 1) {
            return ranks.get(0);
        }
        int rank = (int) ((batchId >>> 24) & 0xff);
        return ranks.get(rank < ranks.size() ? rank : 0);
    }
}
