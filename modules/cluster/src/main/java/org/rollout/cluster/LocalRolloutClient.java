package org.rollout.cluster;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.RecipientRef;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.rollout.api.TrainingBatch;
import org.rollout.trainer.BatchLease;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.RolloutStatus;
import org.rollout.trainer.StatsPage;
import org.rollout.trainer.WeightPublishException;
import org.rollout.trainer.wire.EncodedBatch;
import org.rollout.trainer.wire.EncodedBatchSource;
import org.rollout.trainer.wire.EncodedBatchSource.Pulled;
import org.rollout.trainer.wire.GatewayJson;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link RolloutClient} for a trainer in the same JVM as a {@link LocalRollout}: every call is
 * an ask to the collector, the weight version or the coordinator. Given refs on another node it
 * works the same way: a batch the collector streams ({@link Collector.StreamedBatchReply}) is read
 * back on this side before {@link #nextBatch} returns. Blocking calls honour
 * interruption; a pull that is abandoned by interruption leaves its batch unacknowledged, so it is
 * delivered again after {@code batch_ack_timeout} and nothing is lost.
 */
public final class LocalRolloutClient implements RolloutClient, EncodedBatchSource {
    private static final Logger log = LoggerFactory.getLogger(LocalRolloutClient.class);
    private static final Duration PULL_WAIT = Duration.ofSeconds(20);
    private static final Duration CONTROL_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration ACK_RETRY = Duration.ofMinutes(2);
    /**
     * How long one attempt of an acknowledgement waits for its answer before it is sent again (an
     * acknowledgement is idempotent). One sent to a collector that died is never answered, and
     * the next attempt reaches its successor: the trainer waits until at most 10 s after the take-over
     * (about 30 s after a crash with local.conf's failure detection, 13 s with the system tests'
     * faster one), not a whole {@link #CONTROL_TIMEOUT} per attempt.
     */
    private static final Duration ACK_ATTEMPT = Duration.ofSeconds(10);

    private final ActorSystem<Void> system;
    private final LocalRollout.Refs refs;
    private final Duration publishTimeout;
    private final AtomicInteger knownVersion = new AtomicInteger();

    /** The actor system the client asks through (this node's). */
    ActorSystem<Void> system() {
        return system;
    }

    LocalRolloutClient(ActorSystem<Void> system, LocalRollout.Refs refs, Duration publishTimeout) {
        this.system = system;
        this.refs = refs;
        this.publishTimeout = publishTimeout;
    }

    @Override
    public TrainingBatch nextBatch() throws InterruptedException {
        while (true) {
            Optional<TrainingBatch> b = nextBatch(PULL_WAIT);
            if (b.isPresent()) {
                return b.get();
            }
        }
    }

    @Override
    public Optional<TrainingBatch> nextBatch(Duration timeout) throws InterruptedException {
        return Optional.ofNullable(received(pull(timeout, "", null)).batch());
    }

    @Override
    public Optional<TrainingBatch> nextBatch(Duration timeout, BatchLease lease) throws InterruptedException {
        return Optional.ofNullable(
                received(pull(timeout, lease.holder(), lease)).batch());
    }

    /**
     * Asks the collector for a batch, waiting up to {@code timeout} for one, held for {@code
     * holder} under {@code lease} (null: none).
     */
    private Collector.PullReply pull(Duration timeout, String holder, BatchLease lease) throws InterruptedException {
        return pull(timeout, holder, lease, false);
    }

    private Collector.PullReply pull(Duration timeout, String holder, BatchLease lease, boolean readElsewhere)
            throws InterruptedException {
        long leaseMillis = lease == null ? 0 : lease.duration().toMillis();
        return ask(
                refs.collector(),
                r -> new Collector.PullBatch(timeout, knownVersion.get(), holder, leaseMillis, readElsewhere, r),
                timeout.plus(CONTROL_TIMEOUT),
                "pull a batch");
    }

    @Override
    public List<Long> renewLease(BatchLease lease) throws InterruptedException {
        Collector.LeaseRenewed renewed = ask(
                refs.collector(),
                r -> new Collector.RenewLease(lease.holder(), lease.duration().toMillis(), r),
                CONTROL_TIMEOUT,
                "renew the lease of " + lease.holder());
        return renewed.batchIds();
    }

    /**
     * The next batch in RBATCH form, for a trainer gateway. A batch the collector offers on its
     * node's data plane is not read here: its holder encodes it and the returned batch relays the
     * bytes as they come ({@link LargePayloads#relay}), so a gateway on another node than the
     * collector's moves a batch at about the rate of the collector's own. Any other batch is encoded
     * here. A batch whose holder cannot be reached is released (the next pull takes it) and the
     * failure thrown.
     */
    @Override
    public Optional<EncodedBatch> nextEncodedBatch(Duration timeout) throws InterruptedException {
        return nextEncodedBatch(timeout, "", null);
    }

    @Override
    public Optional<EncodedBatch> nextEncodedBatch(Duration timeout, String holder, BatchLease lease)
            throws InterruptedException {
        return encoded(pull(timeout, holder == null ? "" : holder, lease));
    }

    /**
     * As {@link #nextEncodedBatch(Duration, String, BatchLease)}; with {@code readElsewhere}, a
     * collector on another node whose node has a trainer gateway ({@link NodeGateway}) answers that
     * gateway's URL at once instead of a batch, and hands nothing out: the trainer pulls there, and
     * the batch goes from the collector's node straight to it.
     */
    @Override
    public Pulled pullEncoded(Duration timeout, String holder, BatchLease lease, boolean readElsewhere)
            throws InterruptedException {
        Collector.PullReply reply = pull(timeout, holder == null ? "" : holder, lease, readElsewhere);
        if (reply instanceof Collector.ReadFrom r) {
            return Pulled.readFrom(URI.create(r.gateway()));
        }
        return Pulled.of(encoded(reply));
    }

    private Optional<EncodedBatch> encoded(Collector.PullReply reply) throws InterruptedException {
        if (reply instanceof Collector.StreamedBatchReply s && s.direct() != null) {
            try {
                return Optional.of(LargePayloads.get(system).relay(s.direct(), s.batchId(), s.groups(), s.taskIds()));
            } catch (IOException e) {
                release(s.batchId());
                throw new IllegalStateException(e.getMessage() + "; released for the next pull", e);
            }
        }
        TrainingBatch batch = received(reply).batch();
        if (batch == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(EncodedBatch.of(batch));
        } catch (IOException e) {
            release(batch.batchId());
            throw new IllegalStateException(
                    "batch " + batch.batchId() + ": encoding its groups' metadata failed: " + e.getMessage(), e);
        }
    }

    /**
     * The batch of {@code reply}, read from its stream when the collector streamed it (a collector
     * on another node and a batch bigger than {@code rollout.large_payload_threshold}). A batch
     * whose stream fails is not acknowledged, so it is delivered again after {@code
     * batch_ack_timeout}; the failure is thrown here.
     */
    private Collector.BatchReply received(Collector.PullReply reply) throws InterruptedException {
        return switch (reply) {
            case Collector.BatchReply b -> b;
            case Collector.ReadFrom r ->
                // Only a pull that allowed it is answered so; none of this client's object pulls does.
                throw new IllegalStateException("the collector answered a pull with a gateway to read from ("
                        + r.gateway() + ") though the pull did not allow it");
            case Collector.StreamedBatchReply s -> {
                var stage = LargePayloads.get(system)
                        .receive(s.bytes(), s.direct(), Collector.BatchReply.class, "batch " + s.batchId());
                try {
                    yield stage.toCompletableFuture()
                            .get(LargePayloads.STALL_SECONDS + CONTROL_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    throw new IllegalStateException(e.getCause().getMessage(), e.getCause());
                } catch (TimeoutException e) {
                    throw new IllegalStateException(
                            "batch " + s.batchId() + " (about " + s.estimatedBytes()
                                    + " bytes) was not received within "
                                    + (LargePayloads.STALL_SECONDS + CONTROL_TIMEOUT.toSeconds()) + " s",
                            e);
                }
            }
        };
    }

    @Override
    public void acknowledge(TrainingBatch batch) throws InterruptedException {
        acknowledge(
                batch.batchId(), batch.groups().stream().map(g -> g.taskId()).toList());
    }

    /**
     * Acknowledges batch {@code batchId}; retried for up to {@link #ACK_RETRY} while the engine's
     * singletons move to another node (the acknowledgement is idempotent). Returns once the
     * engine has written that the tasks are done with: they are never delivered again.
     */
    @Override
    public void acknowledge(long batchId, List<Long> taskIds) throws InterruptedException {
        long deadline = System.nanoTime() + ACK_RETRY.toNanos();
        while (true) {
            try {
                Collector.AckReply reply = ask(
                        refs.collector(),
                        r -> new Collector.Ack(batchId, taskIds, r),
                        ACK_ATTEMPT,
                        "acknowledge batch " + batchId);
                if (!reply.known()) {
                    log.debug("batch {} was acknowledged already", batchId);
                }
                return;
            } catch (IllegalStateException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                log.warn("{}; trying again", e.getMessage());
            }
        }
    }

    @Override
    public void acknowledge(long batchId) throws InterruptedException {
        acknowledge(batchId, List.of());
    }

    @Override
    public void release(long batchId) {
        refs.collector().tell(new Collector.Release(batchId));
    }

    @Override
    public PublishResult publishWeights(int version, Path weights) throws InterruptedException {
        WeightVersion.PublishReply reply = ask(
                refs.weightVersion(),
                r -> new WeightVersion.Publish(version, weights.toString(), r),
                publishTimeout,
                "publish weights");
        if (!reply.ok()) {
            throw new WeightPublishException(
                    reply.failure() != null ? reply.failure() : WeightPublishException.Kind.UNSPECIFIED, reply.error());
        }
        knownVersion.accumulateAndGet(reply.version(), Math::max);
        return reply.report();
    }

    @Override
    public RolloutStatus status() throws InterruptedException {
        return status(CONTROL_TIMEOUT);
    }

    /**
     * {@link #status()} answered within {@code timeout} (metrics, health checks).
     *
     * @throws IllegalStateException when the coordinator or the collector did not answer in time
     */
    public RolloutStatus status(Duration timeout) throws InterruptedException {
        RolloutCoordinator.Status c =
                ask(refs.coordinator(), RolloutCoordinator.GetStatus::new, timeout, "read status");
        Collector.Status k = ask(refs.collector(), Collector.GetStatus::new, timeout, "read status");
        return new RolloutStatus(
                c.budget().version(),
                c.budget().running(),
                c.budget().accepted(),
                c.budget().rejected(),
                c.budget().capacity(),
                k.bufferedGroups(),
                k.unacknowledgedBatches(),
                c.evalInFlight(),
                k.tokensGenerated(),
                k.rejectedByReason(),
                k.lastStats(),
                k.heldOutcomes(),
                k.heldBatches());
    }

    /**
     * The statistics lines the collector's node has written ({@link StatsBook#since}), parsed from
     * the very text of its {@code stats.jsonl} lines.
     */
    @Override
    public StatsPage stats(int sinceVersion) throws InterruptedException {
        if (sinceVersion < 0) {
            throw new IllegalArgumentException("sinceVersion must be >= 0, got " + sinceVersion);
        }
        Collector.StatsReply reply =
                ask(refs.collector(), r -> new Collector.GetStats(sinceVersion, r), CONTROL_TIMEOUT, "read statistics");
        return new StatsPage(
                reply.lines().stream().map(GatewayJson::parseStatsLine).toList(), reply.completeBelow());
    }

    /**
     * Per rejection reason, the latest rejected task and why ("task N attempt A: detail"), for a
     * message that names an example.
     */
    public Map<String, String> lastRejections() throws InterruptedException {
        return collectorStatus().lastRejections();
    }

    /**
     * Stops admission until a {@link RolloutCoordinator.ResumeAdmission} with the same {@code id}
     * (none comes for an id no weight update uses): the failure breaker's stop. Idempotent.
     */
    public void pauseAdmission(long id) {
        refs.coordinator().tell(new RolloutCoordinator.PauseAdmission(id));
    }

    /** Lifts the pause {@link #pauseAdmission} put with {@code id}; {@code version} is the version now (it is not moved). */
    public void resumeAdmission(long id, int version) {
        refs.coordinator().tell(new RolloutCoordinator.ResumeAdmission(id, version));
    }

    /**
     * Asks for an evaluation pass over the current weights, {@code version}, whether or not
     * {@code eval_every} divides it; nothing happens when the version moved on or a pass runs.
     */
    public void evaluateNow(int version) {
        refs.coordinator().tell(new RolloutCoordinator.EvaluateNow(version));
    }

    /** The collector's full status (held outcomes, duplicates). */
    Collector.Status collectorStatus() throws InterruptedException {
        return ask(refs.collector(), Collector.GetStatus::new, CONTROL_TIMEOUT, "read status");
    }

    /** The coordinator's full status (ledger, per-node load), for the status line. */
    public RolloutCoordinator.Status coordinatorStatus() throws InterruptedException {
        return coordinatorStatus(CONTROL_TIMEOUT);
    }

    /** {@link #coordinatorStatus()} answered within {@code timeout}; else IllegalStateException. */
    public RolloutCoordinator.Status coordinatorStatus(Duration timeout) throws InterruptedException {
        return ask(refs.coordinator(), RolloutCoordinator.GetStatus::new, timeout, "read status");
    }

    @Override
    public void close() {
        // The engine belongs to its LocalRollout; closing the client releases nothing.
    }

    private <C, R> R ask(RecipientRef<C> target, Function<ActorRef<R>, C> message, Duration timeout, String what)
            throws InterruptedException {
        CompletionStage<R> stage = AskPattern.ask(target, message::apply, timeout, system.scheduler());
        try {
            return stage.toCompletableFuture().get(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException("could not " + what + ": " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("could not " + what + " within " + timeout, e);
        }
    }
}
