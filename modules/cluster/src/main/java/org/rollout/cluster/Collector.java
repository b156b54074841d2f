package org.rollout.cluster;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
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
 * <p>Exactly once: the first outcome for a task id wins; a later one (another attempt of a
 * re-dispatched task) is dropped and counted as a duplicate. Every task the coordinator admitted
 * therefore ends in one batch or one rejection (the first invariant in docs/reliability.md).
 *
 * <p>Back-pressure: nothing here ever drops an accepted group. The buffer is bounded by the
 * staleness budget at admission — with a trainer that stops pulling and publishing, the
 * coordinator stops admitting once {@code (η + v + 1) · B} groups are accepted or running.
 *
 * <p>Pulls that cannot be served wait until enough groups arrive or their deadline passes (then
 * they get an empty reply). Evaluation groups are not batched: they only feed statistics.
 *
 * <p>Across nodes: groups and batches travel as Kryo ({@link KryoSerializable}), everything else as
 * CBOR. A group or batch above {@code rollout.large_payload_threshold} for another node is streamed
 * ({@link StreamedGroupFinished}, {@link StreamedBatchReply}, see {@link LargePayloads}); a streamed
 * group is read back here before it is handled like any other, and one that cannot be read is
 * rejected as {@code failed}.
 */
final class Collector extends AbstractBehavior<Collector.Command> {

    sealed interface Command {}

    /**
     * A group's outcome, from its node's GroupRunner. Kryo on the wire (it may carry a {@link
     * TrainingGroup}); one bigger than {@code rollout.large_payload_threshold} for a collector on
     * another node travels as a {@link StreamedGroupFinished} instead ({@link #deliver}).
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
     * batch_ack_timeout} (see {@link #onGroupFinished}).
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
     * never use an older version than the trainer's.
     */
    record PullBatch(Duration maxWait, int knownVersion, String holder, long leaseMillis, ActorRef<PullReply> replyTo)
            implements Command, CborSerializable {
        /** A pull by an unnamed trainer, without a lease. */
        PullBatch(Duration maxWait, int knownVersion, ActorRef<PullReply> replyTo) {
            this(maxWait, knownVersion, "", 0, replyTo);
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
    sealed interface PullReply permits BatchReply, StreamedBatchReply {}

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

    private record WaitingPull(PullBatch pull, long deadlineNanos) {}

    /** A new batch for {@code pull}, sent once its hand-out is in the coordinator's ledger. */
    private record Marking(TrainingBatch batch, WaitingPull pull) {}

    private final LargePayloads payloads;
    private final int consumerBatchSize;
    private final Duration ackTimeout;
    private final long stalenessLimit;
    private final StatsBook stats;
    private ActorRef<RolloutCoordinator.Command> coordinator;
    private final List<GroupFinished> early = new ArrayList<>();
    private boolean attached;
    private Set<Long> wantedOld = new HashSet<>();
    /** Acknowledgements of a predecessor's batches that came before a coordinator attached. */
    private final List<Ack> earlyAcks = new ArrayList<>();

    private long firstNewTaskId;
    /** Tasks a trainer may hold in a predecessor's batch (see {@link Attach}). */
    private Set<Long> possiblyDelivered = new HashSet<>();
    /** Until when an outcome of a possibly delivered task is held. */
    private long holdUntilNanos;
    /** Outcomes held while the acknowledgement of a predecessor's batch may still come. */
    private final LinkedHashMap<Long, GroupFinished> heldOutcomes = new LinkedHashMap<>();
    /**
     * Accepted groups whose acceptance the coordinator has not yet written to its ledger: not
     * handed out until it has ({@link AcceptRecorded}), in the order they were taken.
     */
    private final LinkedHashMap<Long, TrainingGroup> unrecorded = new LinkedHashMap<>();

    /** Tasks whose outcome this collector took: a late one of theirs is a duplicate. */
    private final TakenIds finished = new TakenIds();
    /**
     * Tasks whose taken outcome was a rejection or an evaluation result, with when (see {@link
     * #reannounce}), for {@link #UNBUFFERED_KEPT}: a restarted coordinator re-attaches within
     * seconds, and one that still counts such a task open learnt it from a ledger write made right
     * after the outcome was taken. Kept for the whole run they grew with every rejection.
     */
    private final LinkedHashMap<Long, Long> unbufferedTaken = new LinkedHashMap<>();

    static final Duration UNBUFFERED_KEPT = Duration.ofMinutes(10);

    private final ArrayDeque<TrainingGroup> buffer = new ArrayDeque<>();
    private final HandedOutBatches outstanding;
    /** New batches whose hand-out the coordinator is writing to its ledger ({@link HandOutRecorded}). */
    private final LinkedHashMap<Long, Marking> marking = new LinkedHashMap<>();

    private final ArrayDeque<TrainingBatch> redeliveries = new ArrayDeque<>();
    private final ArrayDeque<WaitingPull> waiting = new ArrayDeque<>();
    private final Map<String, Long> rejectedByReason = new LinkedHashMap<>();
    private final Map<String, String> lastRejections = new LinkedHashMap<>();
    private long nextBatchId;
    private long duplicates;
    private long tokens;
    private int version;

    /**
     * @param stalenessLimit with {@code staleness_policy = cancel}, η: a buffered group whose
     *     dispatch version is more than this behind the version at hand-out is dropped as {@code
     *     stale}; {@link Long#MAX_VALUE} (AReaL's admission policy) never drops
     */
    static Behavior<Command> create(
            int consumerBatchSize,
            Duration ackTimeout,
            long stalenessLimit,
            StatsBook stats,
            ActorRef<Topic.Command<WeightVersion.VersionChanged>> versionTopic) {
        return create(consumerBatchSize, ackTimeout, stalenessLimit, stats, versionTopic, null, false);
    }

    /**
     * @param coordinator told who this collector is at start (a proxy in a cluster), or null when
     *     the coordinator introduces itself ({@link Introduce})
     * @param awaitAttach hold outcomes until a coordinator attaches (it decides which tasks are
     *     still wanted); false for a collector used on its own
     */
    static Behavior<Command> create(
            int consumerBatchSize,
            Duration ackTimeout,
            long stalenessLimit,
            StatsBook stats,
            ActorRef<Topic.Command<WeightVersion.VersionChanged>> versionTopic,
            ActorRef<RolloutCoordinator.Command> coordinator,
            boolean awaitAttach) {
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> {
            versionTopic.tell(Topic.subscribe(
                    ctx.messageAdapter(WeightVersion.VersionChanged.class, v -> new VersionChanged(v.version()))));
            if (coordinator != null) {
                coordinator.tell(new RolloutCoordinator.CollectorIs(ctx.getSelf()));
            }
            return new Collector(ctx, timers, consumerBatchSize, ackTimeout, stalenessLimit, stats, awaitAttach);
        }));
    }

    private Collector(
            ActorContext<Command> ctx,
            TimerScheduler<Command> timers,
            int consumerBatchSize,
            Duration ackTimeout,
            long stalenessLimit,
            StatsBook stats,
            boolean awaitAttach) {
        super(ctx);
        this.attached = !awaitAttach;
        this.payloads = LargePayloads.get(ctx.getSystem());
        this.consumerBatchSize = consumerBatchSize;
        this.ackTimeout = ackTimeout;
        this.outstanding = new HandedOutBatches(ackTimeout);
        this.stalenessLimit = stalenessLimit;
        this.stats = stats;
        timers.startTimerWithFixedDelay(new Tick(), Duration.ofMillis(200));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Introduce.class, i -> {
                    i.coordinator()
                            .tell(new RolloutCoordinator.CollectorIs(
                                    getContext().getSelf()));
                    return this;
                })
                .onMessage(Attach.class, this::onAttach)
                .onMessage(GroupFinished.class, this::onGroupFinished)
                .onMessage(StreamedGroupFinished.class, this::onStreamedGroupFinished)
                .onMessage(Reassembled.class, this::onReassembled)
                .onMessage(AcceptRecorded.class, this::onAcceptRecorded)
                .onMessage(HandOutRecorded.class, this::onHandOutRecorded)
                .onMessage(PullBatch.class, this::onPull)
                .onMessage(Ack.class, this::onAck)
                .onMessage(Release.class, this::onRelease)
                .onMessage(RenewLease.class, this::onRenewLease)
                .onMessage(VersionChanged.class, this::onVersionChanged)
                .onMessage(EvalPassFinished.class, e -> {
                    stats.flushEval(e.version());
                    return this;
                })
                .onMessage(Tick.class, t -> onTick())
                .onMessage(GetStatus.class, this::onGetStatus)
                .onMessage(EvalPassStarted.class, e -> {
                    stats.evalStarted(e.version());
                    return this;
                })
                .onMessage(GetStats.class, g -> {
                    StatsBook.Since since = stats.since(g.sinceVersion());
                    g.replyTo().tell(new StatsReply(since.lines(), since.completeBelow()));
                    return this;
                })
                .onMessage(Flush.class, f -> {
                    stats.flushAll();
                    f.replyTo().tell(true);
                    return this;
                })
                .onSignal(PostStop.class, s -> {
                    stats.flushAll();
                    return this;
                })
                .onSignal(org.apache.pekko.actor.typed.PreRestart.class, s -> {
                    waiting.forEach(w -> w.pull().replyTo().tell(new BatchReply(null))); // they pull again
                    return this;
                })
                .build();
    }

    private Behavior<Command> onAttach(Attach a) {
        boolean first = !attached || coordinator == null;
        attached = true;
        coordinator = a.coordinator();
        firstNewTaskId = a.firstNewTaskId();
        wantedOld = new HashSet<>();
        wantedOld.addAll(a.open());
        possiblyDelivered = new HashSet<>(a.possiblyDelivered());
        holdUntilNanos = System.nanoTime() + ackTimeout.toNanos();
        if (first) {
            nextBatchId = a.incarnation() << 32;
            // Below the first new id, only the predecessor's open tasks are still wanted: outcomes
            // of the others are dropped before the duplicate check, so they count as taken.
            long lowestOpen = a.open().stream().mapToLong(Long::longValue).min().orElse(a.firstNewTaskId());
            finished.takenBelow(Math.min(lowestOpen, a.firstNewTaskId()));
        } else {
            reannounce(a.open());
            // A restarted coordinator counts these tasks as running: it learns again that their
            // outcome is held (it does not run them, it still counts in the staleness bound).
            heldOutcomes.keySet().forEach(id -> coordinator.tell(new RolloutCoordinator.OutcomeHeld(id)));
            // A hand-out the failed incarnation was writing is asked of the new one.
            marking.values().forEach(m -> markHandOut(m.batch()));
        }
        List<GroupFinished> held = List.copyOf(early);
        early.clear();
        held.forEach(this::onGroupFinished);
        List<Ack> acks = List.copyOf(earlyAcks);
        earlyAcks.clear();
        acks.forEach(this::onAck);
        return this;
    }

    /**
     * A new coordinator incarnation attached while this collector lived on (the coordinator was
     * restarted): of the tasks it still counts open, those whose outcome this collector already
     * took may have had their {@code TaskFinished} lost with the failed incarnation. An accepted
     * one this collector still holds is announced again; a rejected or evaluation one is forgotten
     * here, so that its runner's delivering it again ({@code Resend}) is taken instead of dropped as
     * a duplicate.
     */
    private void reannounce(List<Long> open) {
        Map<Long, TrainingGroup> held = new HashMap<>(unrecorded);
        buffer.forEach(g -> held.put(g.taskId(), g));
        outstanding.batches().forEach(b -> b.groups().forEach(g -> held.put(g.taskId(), g)));
        marking.values().forEach(m -> m.batch().groups().forEach(g -> held.put(g.taskId(), g)));
        redeliveries.forEach(b -> b.groups().forEach(g -> held.put(g.taskId(), g)));
        for (Long id : open) {
            if (!finished.contains(id)) {
                continue;
            }
            TrainingGroup g = held.get(id);
            if (g != null) {
                coordinator.tell(new RolloutCoordinator.TaskFinished(id, g.attempt(), false, true, null, backlog()));
            } else if (unbufferedTaken.remove(id) != null) {
                finished.remove(id);
            }
            // Otherwise it was accepted and handed out: the trainer's acknowledgement retires it.
        }
    }

    private Behavior<Command> onGroupFinished(GroupFinished g) {
        if (!attached) {
            early.add(g); // before the coordinator is ready: it decides which tasks are still wanted
            return this;
        }
        if (g.taskId() < firstNewTaskId && !wantedOld.contains(g.taskId())) {
            duplicates++;
            TaskJournal.duplicate(g.taskId(), g.attempt());
            getContext()
                    .getLog()
                    .info(
                            "task {} attempt {}: a predecessor was already done with it; dropped",
                            g.taskId(),
                            g.attempt());
            return this;
        }
        if (!finished.add(g.taskId())) {
            duplicates++;
            TaskJournal.duplicate(g.taskId(), g.attempt());
            getContext().getLog().info("task {} attempt {}: late duplicate dropped", g.taskId(), g.attempt());
            return this;
        }
        if (!g.isEval() && possiblyDelivered.contains(g.taskId()) && System.nanoTime() - holdUntilNanos < 0) {
            // A task that a trainer may still acknowledge from a predecessor's batch: its outcome
            // re-sent by the runner that held it, or its re-run's. Taken now, an acceptance would
            // be handed out again in a new batch (delivered twice), and a rejection would count a
            // task the trainer trained on as rejected; so it waits: that acknowledgement drops it
            // (the task is delivered), and when none came within batch_ack_timeout it is taken as
            // any other.
            heldOutcomes.put(g.taskId(), g);
            if (coordinator != null) {
                coordinator.tell(new RolloutCoordinator.OutcomeHeld(g.taskId()));
            }
            getContext()
                    .getLog()
                    .info(
                            "task {} attempt {}: {}, held for up to {}: it was accepted before the fail-over and a trainer may still acknowledge it",
                            g.taskId(),
                            g.attempt(),
                            g.outcome() instanceof Rejected r
                                    ? "rejected as " + r.reason().wireName()
                                    : "accepted",
                            ackTimeout);
            return this;
        }
        return take(g);
    }

    /** Takes {@code g} as its task's outcome: statistics, the journal, the buffer, the coordinator. */
    private Behavior<Command> take(GroupFinished g) {
        tokens += g.generatedTokens();
        String scope = g.isEval() ? org.rollout.api.WorkflowContext.EVAL_ROLLOUT_SCOPE : "rollout";
        int statsVersion = g.isEval() ? g.dispatchVersion() : g.completionVersion();
        stats.record(statsVersion, scope, g);
        boolean accepted = g.outcome() instanceof Accepted;
        String reason = null;
        if (g.outcome() instanceof Rejected r) {
            reason = r.reason().wireName();
            rejectedByReason.merge(reason, 1L, Long::sum);
            lastRejections.put(reason, "task " + g.taskId() + " attempt " + g.attempt() + ": " + shortened(r.detail()));
            logRejection(g, r);
        }
        TaskJournal.outcome(g.taskId(), g.attempt(), g.isEval(), accepted, reason);
        if (!accepted || g.isEval()) {
            long now = System.nanoTime();
            unbufferedTaken.put(g.taskId(), now);
            var oldest = unbufferedTaken.entrySet().iterator();
            while (oldest.hasNext() && now - oldest.next().getValue() > UNBUFFERED_KEPT.toNanos()) {
                oldest.remove();
            }
        }
        if (accepted && !g.isEval()) {
            TrainingGroup group = ((Accepted) g.outcome()).group();
            if (coordinator == null) {
                buffer.addLast(group); // on its own: no ledger to wait for
                serveWaiting();
            } else {
                unrecorded.put(g.taskId(), group);
            }
        }
        if (coordinator != null) {
            coordinator.tell(new RolloutCoordinator.TaskFinished(
                    g.taskId(), g.attempt(), g.isEval(), accepted, reason, backlog()));
        }
        return this;
    }

    /** Accepted groups not yet handed out: buffered, or waiting for their acceptance to be written. */
    private int backlog() {
        return buffer.size() + unrecorded.size();
    }

    /**
     * The acceptance of a task is in the ledger: its group joins the buffer. A group handed out
     * before that could be handed out again by a successor that never learnt it was accepted.
     */
    private Behavior<Command> onAcceptRecorded(AcceptRecorded r) {
        TrainingGroup group = unrecorded.remove(r.taskId());
        if (group != null) {
            buffer.addLast(group);
            serveWaiting();
        }
        return this;
    }

    /** A rejection's detail cut to 500 characters, so that one huge exception message cannot flood a log or status. */
    private static String shortened(String detail) {
        String d = detail == null ? "" : detail;
        return d.length() > 500 ? d.substring(0, 500) + "… (" + d.length() + " characters)" : d;
    }

    /**
     * Says why a group was rejected, naming its task: a timeout, a stale or cancelled group, or a
     * filter that threw is a warning; a filter's "no" and a group with too few usable slots are
     * routine (info). Failures and contract breaks were logged where they happened. Details are cut
     * at 500 characters so that one huge exception message cannot flood the log.
     */
    private void logRejection(GroupFinished g, Rejected r) {
        String detail = shortened(r.detail());
        switch (r.reason()) {
            case TIMEOUT, STALE, CANCELLED, ACCEPT_ERROR ->
                getContext()
                        .getLog()
                        .warn(
                                "task {} attempt {}: rejected as {}: {}",
                                g.taskId(),
                                g.attempt(),
                                r.reason().wireName(),
                                detail);
            case REJECTED, RETURNED_NONE ->
                getContext()
                        .getLog()
                        .info(
                                "task {} attempt {}: rejected as {}: {}",
                                g.taskId(),
                                g.attempt(),
                                r.reason().wireName(),
                                detail);
            default ->
                getContext()
                        .getLog()
                        .debug(
                                "task {} attempt {}: rejected as {}: {}",
                                g.taskId(),
                                g.attempt(),
                                r.reason().wireName(),
                                detail);
        }
    }

    /**
     * Sends {@code finished} to {@code collector}: as it is when the collector is in this actor
     * system or the message is small, else streamed in chunks ({@link LargePayloads}).
     */
    static void deliver(ActorRef<Command> collector, GroupFinished finished, LargePayloads payloads) {
        if (LargePayloads.isLocal(collector)) {
            collector.tell(finished); // nothing is serialized: no need to estimate the size
            return;
        }
        long bytes = LargePayloads.estimatedBytes(finished);
        if (!payloads.streams(collector, bytes)) {
            collector.tell(finished);
            return;
        }
        String what = "task " + finished.taskId() + " attempt " + finished.attempt();
        DirectRef direct = payloads.offerDirect(finished, what);
        collector.tell(new StreamedGroupFinished(
                finished.taskId(),
                finished.attempt(),
                finished.isEval(),
                finished.dispatchVersion(),
                finished.completionVersion(),
                finished.generatedTokens(),
                bytes,
                direct == null ? payloads.offer(finished, what) : null,
                direct));
    }

    private Behavior<Command> onStreamedGroupFinished(StreamedGroupFinished s) {
        String what = "task " + s.taskId() + " attempt " + s.attempt();
        getContext()
                .pipeToSelf(
                        payloads.receive(s.bytes(), s.direct(), GroupFinished.class, what),
                        (finished, error) -> new Reassembled(s, finished, error));
        return this;
    }

    private Behavior<Command> onReassembled(Reassembled r) {
        StreamedGroupFinished h = r.header();
        Throwable error = r.error();
        if (error == null
                && (r.finished().taskId() != h.taskId() || r.finished().attempt() != h.attempt())) {
            error = new IllegalStateException("the stream carried task "
                    + r.finished().taskId() + " attempt " + r.finished().attempt());
        }
        if (error == null) {
            return onGroupFinished(r.finished());
        }
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        String detail = "the group's result (about " + h.estimatedBytes() + " bytes) could not be received: "
                + cause.getMessage();
        getContext().getLog().error("task {} attempt {}: {}; rejecting it as failed", h.taskId(), h.attempt(), detail);
        return onGroupFinished(new GroupFinished(
                h.taskId(),
                h.attempt(),
                h.isEval(),
                h.dispatchVersion(),
                h.completionVersion(),
                new Rejected(RejectReason.FAILED, detail),
                Map.of(),
                ScalarStats.Totals.EMPTY,
                h.generatedTokens()));
    }

    private Behavior<Command> onPull(PullBatch pull) {
        if (pull.knownVersion() > version) {
            onVersionChanged(new VersionChanged(pull.knownVersion()));
        }
        waiting.addLast(new WaitingPull(pull, System.nanoTime() + pull.maxWait().toNanos()));
        serveWaiting();
        return this;
    }

    /**
     * Serves waiting pulls in arrival order: redeliveries first, then new batches. A new batch
     * leaves once the coordinator has written that its tasks are handed out ({@link
     * HandOutRecorded}): a successor must know which accepted tasks a trainer may hold.
     */
    private void serveWaiting() {
        while (!waiting.isEmpty()) {
            boolean fresh = redeliveries.isEmpty();
            TrainingBatch batch = nextBatch();
            if (batch == null) {
                return;
            }
            WaitingPull w = waiting.pollFirst();
            if (fresh && coordinator != null) {
                marking.put(batch.batchId(), new Marking(batch, w));
                markHandOut(batch);
            } else {
                handOut(batch, w);
            }
        }
    }

    private void markHandOut(TrainingBatch batch) {
        coordinator.tell(new RolloutCoordinator.HandingOut(
                batch.batchId(),
                batch.groups().stream().map(TrainingGroup::taskId).toList(),
                getContext().getSelf()));
    }

    private Behavior<Command> onHandOutRecorded(HandOutRecorded r) {
        Marking m = marking.remove(r.batchId());
        if (m != null) {
            handOut(m.batch(), m.pull());
        }
        return this;
    }

    private void handOut(TrainingBatch batch, WaitingPull w) {
        PullBatch p = w.pull();
        outstanding.handOut(batch, p.holder(), Duration.ofMillis(Math.max(0, p.leaseMillis())), System.nanoTime());
        reply(w.pull().replyTo(), batch);
    }

    /**
     * Hands {@code batch} to a puller: as it is when the puller is in this actor system or the
     * batch is small, else streamed. A streamed batch that never arrives stays unacknowledged and
     * is delivered again after {@code batch_ack_timeout}.
     */
    private void reply(ActorRef<PullReply> to, TrainingBatch batch) {
        long bytes = LargePayloads.isLocal(to) ? 0 : LargePayloads.estimatedBytes(batch);
        if (payloads.streams(to, bytes)) {
            BatchReply reply = new BatchReply(batch);
            String what = "batch " + batch.batchId();
            DirectRef direct = payloads.offerDirect(reply, what);
            to.tell(new StreamedBatchReply(
                    batch.batchId(),
                    batch.size(),
                    batch.groups().stream().map(TrainingGroup::taskId).toList(),
                    bytes,
                    direct == null ? payloads.offer(reply, what) : null,
                    direct));
        } else {
            to.tell(new BatchReply(batch));
        }
    }

    private TrainingBatch nextBatch() {
        if (!redeliveries.isEmpty()) {
            return redeliveries.pollFirst();
        }
        dropStale();
        if (buffer.size() < consumerBatchSize) {
            return null;
        }
        List<TrainingGroup> groups = new ArrayList<>(consumerBatchSize);
        for (int i = 0; i < consumerBatchSize; i++) {
            groups.add(buffer.pollFirst());
        }
        if (coordinator != null) {
            coordinator.tell(new RolloutCoordinator.Backlog(backlog()));
        }
        return new TrainingBatch(nextBatchId++, groups, version);
    }

    /** Strict staleness: drops buffered groups dispatched more than η versions before now. */
    private void dropStale() {
        if (stalenessLimit == Long.MAX_VALUE) {
            return;
        }
        for (Iterator<TrainingGroup> it = buffer.iterator(); it.hasNext(); ) {
            TrainingGroup g = it.next();
            long behind = (long) version - g.dispatchVersion();
            if (behind > stalenessLimit) {
                it.remove();
                rejectedByReason.merge(RejectReason.STALE.wireName(), 1L, Long::sum);
                stats.recordDiscarded(version, RejectReason.STALE);
                TaskJournal.discarded(g.taskId(), RejectReason.STALE.wireName());
                getContext()
                        .getLog()
                        .info(
                                "task {}: dispatched at version {}, dropped at hand-out at version {} (max_head_offpolicyness={})",
                                g.taskId(),
                                g.dispatchVersion(),
                                version,
                                stalenessLimit);
                if (coordinator != null) {
                    coordinator.tell(new RolloutCoordinator.AcceptedDiscarded(g.taskId(), backlog()));
                }
            }
        }
    }

    /**
     * The trainer consumed a batch: the coordinator removes its tasks from the durable ledger and
     * only then answers, so an acknowledged batch is never delivered again, even by a successor.
     */
    private Behavior<Command> onAck(Ack ack) {
        TrainingBatch batch = outstanding.remove(ack.batchId());
        if (batch == null) {
            for (Iterator<TrainingBatch> it = redeliveries.iterator(); it.hasNext(); ) {
                TrainingBatch b = it.next();
                if (b.batchId() == ack.batchId()) {
                    it.remove();
                    batch = b;
                    break;
                }
            }
        }
        if (batch == null && !ack.taskIds().isEmpty() && coordinator == null && !attached) {
            // A successor whose coordinator is still recovering: only the coordinator can retire
            // the tasks, so the acknowledgement waits for it (answering "unknown" now would have
            // the batch's tasks delivered again).
            earlyAcks.add(ack);
            return this;
        }
        if (batch == null && !ack.taskIds().isEmpty() && coordinator != null) {
            // Handed out by a predecessor: its groups may be here again (delivered again by their
            // runners); they are taken out so they are not handed out twice, and an outcome of
            // theirs that arrives later is a duplicate.
            Set<Long> ids = new HashSet<>(ack.taskIds());
            boolean unbuffered = buffer.removeIf(g -> ids.contains(g.taskId()));
            if (unrecorded.keySet().removeAll(ids) || unbuffered) {
                coordinator.tell(new RolloutCoordinator.Backlog(backlog()));
            }
            finished.addAll(ids);
            wantedOld.removeAll(ids);
            possiblyDelivered.removeAll(ids);
            for (Long id : ids) {
                GroupFinished held = heldOutcomes.remove(id);
                if (held != null) {
                    // Delivered after all: the held outcome is not the task's end.
                    TaskJournal.superseded(held.taskId(), held.attempt());
                    getContext()
                            .getLog()
                            .info(
                                    "task {} attempt {}: its held outcome is dropped; batch {} of a predecessor delivered the task",
                                    held.taskId(),
                                    held.attempt(),
                                    ack.batchId());
                }
            }
            for (TrainingBatch held : outstanding.batches()) {
                if (held.groups().stream().anyMatch(g -> ids.contains(g.taskId()))) {
                    getContext()
                            .getLog()
                            .warn(
                                    "batch {} (of a predecessor) acknowledged while batch {} holds some of its tasks again",
                                    ack.batchId(),
                                    held.batchId());
                }
            }
            coordinator.tell(new RolloutCoordinator.BatchConsumed(ack.batchId(), ack.taskIds(), ack.replyTo()));
            return this;
        }
        if (batch == null || coordinator == null) {
            ack.replyTo().tell(new AckReply(ack.batchId(), batch != null));
            return this;
        }
        List<Long> ids = batch.groups().stream().map(TrainingGroup::taskId).toList();
        coordinator.tell(new RolloutCoordinator.BatchConsumed(ack.batchId(), ids, ack.replyTo()));
        return this;
    }

    private Behavior<Command> onRelease(Release release) {
        TrainingBatch released = outstanding.remove(release.batchId());
        if (released != null) {
            getContext()
                    .getLog()
                    .info("batch {} did not reach its trainer; it goes to the next pull", release.batchId());
            outstanding.returned(release.batchId(), "it did not reach its trainer");
            redeliveries.addFirst(released);
            serveWaiting();
        }
        return this;
    }

    private Behavior<Command> onVersionChanged(VersionChanged v) {
        if (v.version() > version) {
            version = v.version();
            stats.flushBefore(version);
        }
        return this;
    }

    private Behavior<Command> onTick() {
        long now = System.nanoTime();
        if (!heldOutcomes.isEmpty() && now - holdUntilNanos >= 0) {
            List<GroupFinished> release = List.copyOf(heldOutcomes.values());
            heldOutcomes.clear();
            getContext()
                    .getLog()
                    .info(
                            "no acknowledgement came for {} held outcome(s) within {} of the take-over; they are taken",
                            release.size(),
                            ackTimeout);
            release.forEach(this::take);
        }
        for (Iterator<WaitingPull> it = waiting.iterator(); it.hasNext(); ) {
            WaitingPull w = it.next();
            if (now - w.deadlineNanos() >= 0) {
                it.remove();
                w.pull().replyTo().tell(new BatchReply(null));
            }
        }
        for (HandedOutBatches.Due due : outstanding.takeDue(now)) {
            getContext().getLog().warn("batch {}: {}", due.batch().batchId(), due.why());
            redeliveries.addLast(due.batch());
        }
        serveWaiting();
        return this;
    }

    private Behavior<Command> onGetStatus(GetStatus get) {
        get.replyTo()
                .tell(new Status(
                        backlog(),
                        outstanding.size() + redeliveries.size() + marking.size(),
                        heldOutcomes.size(),
                        duplicates,
                        tokens,
                        Map.copyOf(rejectedByReason),
                        stats.latestMeans(),
                        Map.copyOf(lastRejections),
                        heldBatches()));
        return this;
    }

    /** The batches handed out and not acknowledged: those held by trainers, then those back for the next pull. */
    private List<HeldBatch> heldBatches() {
        List<HeldBatch> all = new ArrayList<>(outstanding.status(System.nanoTime()));
        redeliveries.forEach(b -> all.add(outstanding.waiting(b)));
        return all;
    }

    private Behavior<Command> onRenewLease(RenewLease r) {
        List<Long> renewed = r.leaseMillis() > 0
                ? outstanding.renew(r.holder(), Duration.ofMillis(r.leaseMillis()), System.nanoTime())
                : List.of();
        r.replyTo().tell(new LeaseRenewed(renewed));
        return this;
    }
}
