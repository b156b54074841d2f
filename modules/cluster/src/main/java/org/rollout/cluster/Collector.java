package org.rollout.cluster;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.PreRestart;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.stream.SourceRef;
import org.apache.pekko.util.ByteString;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.trainer.HeldBatch;
import org.slf4j.Logger;

/**
 * Where finished groups end: deduplicates by task id, tells the coordinator what was accepted or
 * rejected, buffers accepted training groups, and hands them to trainers in batches of {@code
 * consumer_batch_size} groups, by pull, keeping each batch until it is acknowledged. It also keeps
 * the run's statistics per version and scope ({@link StatsBook}).
 *
 * <pre>
 *   GroupRunner ──GroupFinished──► Collector ──TaskFinished──► RolloutCoordinator
 *                                   │  buffer (accepted, training)
 *   trainer ──PullBatch──────────►  │  ──Batch (id n)──► trainer ──Ack(n)──► forgotten
 *                                   └─ unacknowledged after batch_ack_timeout ──► delivered again
 * </pre>
 *
 * <p>It is a shell over plain classes whose decisions it carries out (the journal, the log, the
 * coordinator, replies): {@link CollectorIntake} says which outcome is a task's end (the first
 * wins: every task the coordinator admitted ends in one batch or one rejection, the first
 * invariant in docs/reliability.md), {@link BatchBook} keeps accepted groups until their batch is
 * acknowledged (nothing here ever drops an accepted group; pulls that cannot be served wait until
 * enough groups arrive or their deadline passes), {@link TakeOverRules} says what a coordinator's
 * attaching and a trainer's acknowledgement do after a take-over, and {@link OutcomeTally} counts
 * for the status. Evaluation groups are not batched: they only feed statistics.
 *
 * <p>Across nodes: groups and batches travel as Kryo, everything else as CBOR; a big group or batch
 * for another node is streamed, and a streamed group is read back here ({@link CollectorTransfers}).
 */
final class Collector extends AbstractBehavior<Collector.Command> {

    sealed interface Command {}

    /**
     * A group's outcome, from its node's GroupRunner. Kryo on the wire (it may carry a {@link
     * TrainingGroup}); one bigger than {@code rollout.large_payload_threshold} for a collector on
     * another node travels as a {@link StreamedGroupFinished} instead ({@link CollectorTransfers#deliver}).
     */
    record GroupFinished(
            long taskId,
            int attempt,
            boolean isEval,
            int dispatchVersion,
            int completionVersion,
            Outcome outcome,
            Map<String, Double> groupMetrics,
            ScalarStats.Totals workflowStats,
            long generatedTokens)
            implements Command, KryoSerializable {}

    /**
     * A {@link GroupFinished} too big for one frame: its header, and a stream ref from which the
     * whole message is read ({@link LargePayloads}). The collector reassembles it before handling
     * it; a transfer that fails rejects the task as {@code failed}, naming the cause.
     */
    record StreamedGroupFinished(
            long taskId,
            int attempt,
            boolean isEval,
            int dispatchVersion,
            int completionVersion,
            long generatedTokens,
            long estimatedBytes,
            SourceRef<ByteString> bytes,
            DirectRef direct)
            implements Command, CborSerializable {}

    /** What a group became; travels inside a {@link GroupFinished} (Kryo), never alone. */
    sealed interface Outcome {}

    /** Accepted for training (or, for evaluation, completed). */
    record Accepted(TrainingGroup group) implements Outcome {}

    /** Not used for training, and why. */
    record Rejected(RejectReason reason, String detail) implements Outcome {}

    /** A coordinator introduces itself; the collector answers {@link RolloutCoordinator.CollectorIs}. */
    record Introduce(ActorRef<RolloutCoordinator.Command> coordinator) implements Command, CborSerializable {}

    /**
     * The coordinator is ready: tell it about finished tasks. {@code incarnation} goes into batch
     * ids; of the tasks below {@code firstNewTaskId} only those in {@code open} are still wanted (a
     * predecessor was done with the others, so a late outcome of one is a duplicate). Of those,
     * the tasks in {@code possiblyDelivered} may be in a trainer's hands, in a batch a predecessor
     * handed out: an outcome of theirs, accepted or rejected, is held for up to {@code
     * batch_ack_timeout} (see {@link CollectorIntake}).
     */
    record Attach(
            ActorRef<RolloutCoordinator.Command> coordinator,
            long incarnation,
            long firstNewTaskId,
            List<Long> open,
            List<Long> possiblyDelivered)
            implements Command, CborSerializable {
        Attach {
            open = List.copyOf(open);
            possiblyDelivered = List.copyOf(possiblyDelivered);
        }
    }

    /**
     * A trainer asks for the next batch; answered now or when ready, at the latest after {@code
     * maxWait}. {@code knownVersion} is the newest version the trainer has seen published: the
     * version broadcast may reach the collector after the trainer's next pull, and hand-out must
     * never use an older version than the trainer's. {@code readElsewhere}: the puller (a trainer
     * gateway on another node, for a trainer that follows redirects) may be told to have its trainer
     * read from this node's own gateway instead ({@link ReadFrom}); nothing is handed out then.
     */
    record PullBatch(
            Duration maxWait,
            int knownVersion,
            String holder,
            long leaseMillis,
            boolean readElsewhere,
            ActorRef<PullReply> replyTo)
            implements Command, CborSerializable {
        /** A pull by an unnamed trainer, without a lease. */
        PullBatch(Duration maxWait, int knownVersion, ActorRef<PullReply> replyTo) {
            this(maxWait, knownVersion, "", 0, false, replyTo);
        }

        /** A pull that is served here, whatever the puller's node. */
        PullBatch(Duration maxWait, int knownVersion, String holder, long leaseMillis, ActorRef<PullReply> replyTo) {
            this(maxWait, knownVersion, holder, leaseMillis, false, replyTo);
        }
    }

    /**
     * Renews, for {@code leaseMillis} from now, the lease of every batch {@code holder} pulled
     * under a lease ({@link PullBatch#leaseMillis} above 0) and has not acknowledged; the reply
     * lists them.
     */
    record RenewLease(String holder, long leaseMillis, ActorRef<LeaseRenewed> replyTo)
            implements Command, CborSerializable {}

    /** The batches whose lease a {@link RenewLease} renewed. */
    record LeaseRenewed(List<Long> batchIds) implements CborSerializable {
        LeaseRenewed {
            batchIds = List.copyOf(batchIds);
        }
    }

    /**
     * The reply to a pull: a {@link BatchReply}, or, for a puller on another node and a batch
     * bigger than {@code rollout.large_payload_threshold}, a {@link StreamedBatchReply} that the
     * puller turns into one with {@link LargePayloads#receive}.
     */
    sealed interface PullReply permits BatchReply, StreamedBatchReply, ReadFrom {}

    /**
     * The answer to a {@link PullBatch#readElsewhere} pull from another node when this node has a
     * trainer gateway ({@link NodeGateway}): the trainer should pull from {@code gateway} (its base
     * URL), where the batches are. No batch was handed out for the pull, so nothing waits for an
     * acknowledgement or a release; a trainer that cannot reach {@code gateway} pulls again without
     * {@code readElsewhere} and its batch is relayed.
     */
    record ReadFrom(String gateway) implements PullReply, CborSerializable {}

    /**
     * The coordinator wrote task {@code taskId}'s acceptance to its ledger: its group may now be
     * handed out. Before that, a successor could not know that a trainer may hold it.
     */
    record AcceptRecorded(long taskId) implements Command, CborSerializable {}

    /**
     * The coordinator wrote that the tasks of batch {@code batchId} are being handed out: the batch
     * may leave. A successor that finds the mark holds their outcomes until a trainer's
     * acknowledgement of the batch, or {@code batch_ack_timeout}, tells their fate.
     */
    record HandOutRecorded(long batchId) implements Command, CborSerializable {}

    /** A batch, or none ({@code batch} null) when the wait expired. Kryo on the wire. */
    record BatchReply(TrainingBatch batch) implements PullReply, KryoSerializable {}

    /**
     * Batch {@code batchId} of {@code groups} groups (their task ids in {@code taskIds}), as a
     * stream ref of a {@link BatchReply} or an offer on the collector node's data plane ({@code
     * direct}), which also serves it as RBATCH bytes for a gateway to relay.
     */
    record StreamedBatchReply(
            long batchId,
            int groups,
            List<Long> taskIds,
            long estimatedBytes,
            SourceRef<ByteString> bytes,
            DirectRef direct)
            implements PullReply, CborSerializable {
        StreamedBatchReply {
            taskIds = List.copyOf(taskIds);
        }
    }

    /**
     * A trainer consumed batch {@code batchId}, which carried {@code taskIds} (empty when the
     * trainer did not say): with them, a batch this collector does not know (handed out by a
     * predecessor) is still retired.
     */
    record Ack(long batchId, List<Long> taskIds, ActorRef<AckReply> replyTo) implements Command, CborSerializable {
        Ack {
            taskIds = List.copyOf(taskIds);
        }
    }

    /** {@code known} is false when the id was never handed out or was already acknowledged. */
    record AckReply(long batchId, boolean known) implements CborSerializable {}

    /**
     * Batch {@code batchId} never reached its trainer (the connection that was to carry it closed
     * before its last byte): it goes first to the next pull instead of waiting out {@code
     * batch_ack_timeout}. Ignored when the batch is not outstanding (acknowledged, or already
     * back for delivery).
     */
    record Release(long batchId) implements Command, CborSerializable {}

    /** The weight version moved on: statistics of older versions are written out. */
    record VersionChanged(int version) implements Command, CborSerializable {}

    /** The evaluation pass that started at {@code version} has finished: its statistics are written. */
    record EvalPassFinished(int version) implements Command, CborSerializable {}

    /** An evaluation pass started at {@code version}: its statistics line is to come. */
    record EvalPassStarted(int version) implements Command, CborSerializable {}

    /** Asks for the statistics lines of versions ≥ {@code sinceVersion} ({@link StatsBook#since}). */
    record GetStats(int sinceVersion, ActorRef<StatsReply> replyTo) implements Command, CborSerializable {}

    /**
     * The statistics lines known to the collector's node, each the JSON text {@code stats.jsonl}
     * holds, in version order; every line of a version below {@code completeBelow} is among those
     * written.
     */
    record StatsReply(List<String> lines, int completeBelow) implements CborSerializable {}

    /** Asks for the collector's part of the status. */
    record GetStatus(ActorRef<Status> replyTo) implements Command, CborSerializable {}

    /**
     * The collector's part of the status; {@code heldOutcomes} are outcomes (re-sent or of re-runs)
     * held while a trainer may still acknowledge their task from a predecessor's batch; {@code
     * lastRejections} is, per rejection reason, the latest such rejection: "task N attempt A:
     * detail" (the failure breaker's example); {@code heldBatches} are the batches handed out and
     * not acknowledged, with their holders and when they go back.
     */
    record Status(
            int bufferedGroups,
            int unacknowledgedBatches,
            int heldOutcomes,
            long duplicates,
            long tokensGenerated,
            Map<String, Long> rejectedByReason,
            Map<String, Map<String, Double>> lastStats,
            Map<String, String> lastRejections,
            List<HeldBatch> heldBatches)
            implements CborSerializable {}

    /** Writes every statistic still held; replies when done (shutdown). */
    record Flush(ActorRef<Boolean> replyTo) implements Command, CborSerializable {}

    private record Tick() implements Command, NodeLocal {}

    /** A streamed group, read back (or the reason it could not be). */
    private record Reassembled(StreamedGroupFinished header, GroupFinished finished, Throwable error)
            implements Command, NodeLocal {}

    private final LargePayloads payloads;
    private final Duration ackTimeout;
    private final long stalenessLimit;
    private final StatsBook stats;
    private ActorRef<RolloutCoordinator.Command> coordinator;
    private final CollectorIntake intake;
    private final BatchBook<PullBatch> book;
    private final TakeOverRules<PullBatch> takeOver;

    private final OutcomeTally tally = new OutcomeTally();

    /**
     * @param stalenessLimit with {@code staleness_policy = cancel}, η: a buffered group whose
     *     dispatch version is more than this behind the version at hand-out is dropped as {@code
     *     stale}; {@link Long#MAX_VALUE} (AReaL's admission policy) never drops
     * @param coordinator told who this collector is at start (a proxy in a cluster), or null when
     *     the coordinator introduces itself ({@link Introduce})
     * @param awaitAttach hold outcomes until a coordinator attaches (it decides which tasks are
     *     still wanted); false for a collector used on its own (with no coordinator: null)
     * @param share the trainer rank whose collector this is ({@link RankShare#ALONE} with one): it
     *     takes the rank's tasks and forms its batches ({@code consumerBatchSize} is the rank's
     *     share), whose ids carry the rank so that no two collectors of a run hand out one id
     */
    static Behavior<Command> create(
            int consumerBatchSize,
            Duration ackTimeout,
            long stalenessLimit,
            StatsBook stats,
            ActorRef<Topic.Command<WeightVersion.VersionChanged>> versionTopic,
            ActorRef<RolloutCoordinator.Command> coordinator,
            boolean awaitAttach,
            RankShare share) {
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> {
            versionTopic.tell(Topic.subscribe(
                    ctx.messageAdapter(WeightVersion.VersionChanged.class, v -> new VersionChanged(v.version()))));
            if (coordinator != null) {
                coordinator.tell(new RolloutCoordinator.CollectorIs(ctx.getSelf()));
            }
            return new Collector(ctx, timers, consumerBatchSize, ackTimeout, stalenessLimit, stats, awaitAttach, share);
        }));
    }

    private Collector(
            ActorContext<Command> ctx,
            TimerScheduler<Command> timers,
            int consumerBatchSize,
            Duration ackTimeout,
            long stalenessLimit,
            StatsBook stats,
            boolean awaitAttach,
            RankShare share) {
        super(ctx);
        this.payloads = LargePayloads.get(ctx.getSystem());
        this.ackTimeout = ackTimeout;
        this.stalenessLimit = stalenessLimit;
        this.stats = stats;
        this.intake = new CollectorIntake(ackTimeout, awaitAttach, share);
        this.book = new BatchBook<>(consumerBatchSize, ackTimeout, stalenessLimit, share.rank());
        this.takeOver = new TakeOverRules<>(intake, book);
        timers.startTimerWithFixedDelay(new Tick(), Duration.ofMillis(200));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(
                        Introduce.class,
                        i -> same(() -> i.coordinator()
                                .tell(new RolloutCoordinator.CollectorIs(
                                        getContext().getSelf()))))
                .onMessage(Attach.class, this::onAttach)
                .onMessage(GroupFinished.class, this::onGroupFinished)
                .onMessage(
                        StreamedGroupFinished.class,
                        s -> same(() -> getContext()
                                .pipeToSelf(
                                        CollectorTransfers.receive(s, payloads),
                                        (finished, error) -> new Reassembled(s, finished, error))))
                .onMessage(Reassembled.class, this::onReassembled)
                .onMessage(AcceptRecorded.class, r -> carryOut(book.acceptRecorded(r.taskId(), System.nanoTime())))
                .onMessage(HandOutRecorded.class, r -> carryOut(book.handOutRecorded(r.batchId(), System.nanoTime())))
                .onMessage(PullBatch.class, this::onPull)
                .onMessage(Ack.class, this::onAck)
                .onMessage(Release.class, this::onRelease)
                .onMessage(
                        RenewLease.class,
                        r -> same(() -> r.replyTo()
                                .tell(new LeaseRenewed(book.renew(r.holder(), r.leaseMillis(), System.nanoTime())))))
                .onMessage(VersionChanged.class, this::onVersionChanged)
                .onMessage(EvalPassFinished.class, e -> same(() -> stats.flushEval(e.version())))
                .onMessage(Tick.class, t -> onTick())
                .onMessage(GetStatus.class, this::onGetStatus)
                .onMessage(EvalPassStarted.class, e -> same(() -> stats.evalStarted(e.version())))
                .onMessage(
                        GetStats.class,
                        g -> same(() -> {
                            StatsBook.Since since = stats.since(g.sinceVersion());
                            g.replyTo().tell(new StatsReply(since.lines(), since.completeBelow()));
                        }))
                .onMessage(
                        Flush.class,
                        f -> same(() -> {
                            stats.flushAll();
                            f.replyTo().tell(true);
                        }))
                .onSignal(PostStop.class, s -> same(stats::flushAll))
                .onSignal(
                        PreRestart.class,
                        s -> same(() -> book.waitingPullers() // they pull again
                                .forEach(p -> p.replyTo().tell(new BatchReply(null)))))
                .build();
    }

    /** A coordinator attached: {@link TakeOverRules#attach} says what follows, carried out in order. */
    private Behavior<Command> onAttach(Attach a) {
        coordinator = a.coordinator();
        TakeOverRules.Attached at = takeOver.attach(
                a.incarnation(), a.firstNewTaskId(), a.open(), a.possiblyDelivered(), System.nanoTime());
        at.announceAgain()
                .forEach(g -> coordinator.tell(new RolloutCoordinator.TaskFinished(
                        g.taskId(), g.attempt(), false, true, null, book.backlog())));
        at.held().forEach(id -> coordinator.tell(new RolloutCoordinator.OutcomeHeld(id)));
        at.marking().forEach(this::markHandOut);
        at.early().forEach(this::onGroupFinished);
        at.acks().forEach(this::onAck);
        return this;
    }

    private Behavior<Command> onGroupFinished(GroupFinished g) {
        CollectorIntake.Decision d = intake.decide(g, System.nanoTime());
        switch (d.verdict()) {
            case EARLY -> {} // before the coordinator is ready: it decides which tasks are still wanted
            case DONE_BY_PREDECESSOR -> IntakeLog.doneByPredecessor(log(), g);
            case DUPLICATE -> IntakeLog.duplicate(log(), g);
            case HELD -> {
                toCoordinator(new RolloutCoordinator.OutcomeHeld(g.taskId()));
                IntakeLog.held(log(), d, ackTimeout);
            }
            case TAKEN -> take(d);
        }
        return this;
    }

    /** Takes {@code d}'s outcome as its task's: statistics, the journal, the buffer, the coordinator. */
    private void take(CollectorIntake.Decision d) {
        GroupFinished g = d.finished();
        tally.taken(g);
        stats.record(g);
        String reason = d.rejectReason();
        if (g.outcome() instanceof Rejected r) {
            IntakeLog.rejected(log(), g, r);
        }
        TaskJournal.outcome(g.taskId(), g.attempt(), g.isEval(), d.accepted(), reason);
        if (d.buffered()) {
            carryOut(book.accept(g.taskId(), ((Accepted) g.outcome()).group(), System.nanoTime()));
        }
        toCoordinator(new RolloutCoordinator.TaskFinished(
                g.taskId(), g.attempt(), g.isEval(), d.accepted(), reason, book.backlog()));
    }

    private Behavior<Command> onReassembled(Reassembled r) {
        StreamedGroupFinished h = r.header();
        String failure = CollectorTransfers.failure(h, r.finished(), r.error());
        if (failure == null) {
            return onGroupFinished(r.finished());
        }
        log().error("task {} attempt {}: {}; rejecting it as failed", h.taskId(), h.attempt(), failure);
        return onGroupFinished(CollectorTransfers.failed(h, failure));
    }

    private Behavior<Command> onPull(PullBatch pull) {
        onVersionChanged(new VersionChanged(pull.knownVersion())); // never older than the trainer's
        if (pull.readElsewhere() && !LargePayloads.isLocal(pull.replyTo())) {
            // The trainer reads from this node's gateway: the batch leaves this node once, to it.
            var here = NodeGateway.get(getContext().getSystem()).uri();
            if (here.isPresent()) {
                pull.replyTo().tell(new ReadFrom(here.get().toString()));
                return this;
            }
        }
        long now = System.nanoTime();
        return carryOut(book.pull(
                pull, pull.holder(), pull.leaseMillis(), now + pull.maxWait().toNanos(), now));
    }

    /**
     * Carries out what the book decided: drops, hand-out marks, replies, then one backlog update.
     * The backlog goes last: it lets the coordinator admit new groups, and that work must not
     * stand between a waiting trainer and the hand-out mark its batch waits for.
     */
    private Behavior<Command> carryOut(List<BatchBook.Step<PullBatch>> steps) {
        int backlog = -1;
        for (BatchBook.Step<PullBatch> step : steps) {
            switch (step) {
                case BatchBook.DroppedStale<PullBatch> s -> {
                    droppedStale(s); // carries the backlog after the drop
                    backlog = -1;
                }
                case BatchBook.Formed<PullBatch> f -> backlog = f.backlog();
                case BatchBook.MarkHandOut<PullBatch> m -> markHandOut(m.batch());
                case BatchBook.HandOut<PullBatch> h ->
                    CollectorTransfers.reply(h.puller().replyTo(), h.batch(), payloads);
            }
        }
        if (backlog >= 0) {
            toCoordinator(new RolloutCoordinator.Backlog(backlog));
        }
        return this;
    }

    private void droppedStale(BatchBook.DroppedStale<PullBatch> s) {
        TrainingGroup g = s.group();
        tally.discarded(RejectReason.STALE);
        stats.recordDiscarded(s.version(), RejectReason.STALE);
        IntakeLog.droppedStale(log(), g, s.version(), stalenessLimit);
        toCoordinator(new RolloutCoordinator.AcceptedDiscarded(g.taskId(), s.backlog()));
    }

    private void markHandOut(TrainingBatch batch) {
        coordinator.tell(new RolloutCoordinator.HandingOut(
                batch.batchId(),
                batch.groups().stream().map(TrainingGroup::taskId).toList(),
                getContext().getSelf()));
    }

    /**
     * The trainer consumed a batch: the coordinator removes its tasks from the durable ledger and
     * only then answers, so an acknowledged batch is never delivered again, even by a successor.
     * One that comes before a coordinator attached, or is of a predecessor's batch, is decided by
     * {@link TakeOverRules#acknowledge}.
     */
    private Behavior<Command> onAck(Ack ack) {
        switch (takeOver.acknowledge(ack)) {
            case TakeOverRules.Waits w -> {} // until a coordinator attaches: only it can retire the tasks
            case TakeOverRules.Answered a -> ack.replyTo().tell(new AckReply(ack.batchId(), a.known()));
            case TakeOverRules.Consumed c ->
                coordinator.tell(new RolloutCoordinator.BatchConsumed(ack.batchId(), c.taskIds(), ack.replyTo()));
            case TakeOverRules.PredecessorsBatch p -> {
                if (p.backlogChanged()) {
                    coordinator.tell(new RolloutCoordinator.Backlog(book.backlog()));
                }
                IntakeLog.predecessorsBatch(log(), ack.batchId(), p);
                coordinator.tell(new RolloutCoordinator.BatchConsumed(ack.batchId(), p.taskIds(), ack.replyTo()));
            }
        }
        return this;
    }

    private Behavior<Command> onRelease(Release release) {
        if (!book.release(release.batchId())) {
            return this;
        }
        log().info("batch {} did not reach its trainer; it goes to the next pull", release.batchId());
        return carryOut(book.serve(System.nanoTime()));
    }

    private Behavior<Command> onVersionChanged(VersionChanged v) {
        if (book.advanceVersion(v.version())) {
            stats.flushBefore(v.version());
        }
        return this;
    }

    private Behavior<Command> onTick() {
        long now = System.nanoTime();
        List<CollectorIntake.Decision> released = intake.releaseDue(now);
        if (!released.isEmpty()) {
            log().info(
                            "no acknowledgement came for {} held outcome(s) within {} of the take-over; they are taken",
                            released.size(),
                            ackTimeout);
            released.forEach(this::take);
        }
        book.expirePulls(now).forEach(p -> p.replyTo().tell(new BatchReply(null)));
        for (HandedOutBatches.Due due : book.returnDue(now)) {
            log().warn("batch {}: {}", due.batch().batchId(), due.why());
        }
        return carryOut(book.serve(now));
    }

    private Behavior<Command> onGetStatus(GetStatus get) {
        get.replyTo()
                .tell(new Status(
                        book.backlog(),
                        book.unacknowledged(),
                        intake.heldCount(),
                        intake.duplicates(),
                        tally.tokens(),
                        tally.rejectedByReason(),
                        stats.latestMeans(),
                        tally.lastRejections(),
                        book.heldBatches(System.nanoTime())));
        return this;
    }

    /** Tells the coordinator, once one attached (a collector used on its own has none). */
    private void toCoordinator(RolloutCoordinator.Command message) {
        if (coordinator != null) {
            coordinator.tell(message);
        }
    }

    private Behavior<Command> same(Runnable action) {
        action.run();
        return this;
    }

    /** The actor's logger (asked each time: asking sets the actor's logging context). */
    private Logger log() {
        return getContext().getLog();
    }
}
