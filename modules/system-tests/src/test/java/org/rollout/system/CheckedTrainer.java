package org.rollout.system;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.core.InvariantChecker;
import org.rollout.trainer.EngineUnreachableException;
import org.rollout.trainer.GatewayRequestException;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.RolloutStatus;
import org.rollout.trainer.WeightPublishException;

/**
 * The test JVM as a trainer: it pulls batches over HTTP from the nodes' gateways, acknowledges
 * them, publishes weight versions, and checks everything it sees.
 *
 * <ul>
 *   <li>Every acknowledged batch goes to an {@link InvariantChecker}: no task in two acknowledged
 *       batches, equal token/logprob/version lengths, per-token versions within the group's
 *       dispatch and completion versions and never decreasing, the hand-out staleness bound under
 *       {@code staleness_policy = cancel}.
 *   <li>Every pulled batch is checked against what was acknowledged before: a task of an
 *       acknowledged batch must never come again (a batch that was pulled and not acknowledged may,
 *       that is its redelivery), and no task may appear twice in one batch.
 *   <li>Status observations ({@link #observe()}, and a background monitor while {@link
 *       #startMonitor} runs) check that the version never goes backwards and the staleness
 *       budget's bounds ({@code running ≤ C}, {@code accepted + running ≤ (η + v + 1)·B}).
 * </ul>
 *
 * <p>The trainer is exactly-once on its side, as docs/trainer.md tells trainers to be: a batch id
 * it has acknowledged before is acknowledged again, not trained on.
 */
final class CheckedTrainer implements AutoCloseable {
    private final TestCluster cluster;
    private RolloutClient client;
    private final InvariantChecker checker;
    private final long maxConcurrent;
    private final long batchSize;
    private final List<String> violations = new ArrayList<>();
    private final Map<Long, Long> consumedTaskToBatch = new HashMap<>();
    private final Set<Long> acknowledgedBatches = new HashSet<>();
    private final Map<Long, List<Long>> pulledBatches = new LinkedHashMap<>();
    private final AtomicLong redeliveryChecks = new AtomicLong();
    private final AtomicLong statusErrors = new AtomicLong();
    private final AtomicLong publishFailures = new AtomicLong();
    private final AtomicLong trainerErrors = new AtomicLong();
    private final Object observations = new Object();
    private long redeliveries;
    private int version;
    /** The last publish failed and was not repeated successfully yet. */
    private boolean publishOwed;
    /** The highest version this trainer has asked the engine to publish (applied or not). */
    private int highestAttempted;

    private long trajectories;
    private long mixedVersionTrajectories;
    private final AtomicLong tokenVersionChecks = new AtomicLong();
    private final AtomicLong corruptChecks = new AtomicLong();
    private Thread monitor;
    private volatile boolean monitoring;

    CheckedTrainer(TestCluster cluster, RolloutClient client, long maxHeadOffpolicyness, boolean strictStaleness) {
        this(cluster, client, maxHeadOffpolicyness, strictStaleness, 12, 4);
    }

    CheckedTrainer(
            TestCluster cluster,
            RolloutClient client,
            long maxHeadOffpolicyness,
            boolean strictStaleness,
            long maxConcurrentRollouts,
            long consumerBatchSize) {
        this.cluster = cluster;
        this.client = client;
        this.checker = new InvariantChecker(maxHeadOffpolicyness, strictStaleness);
        this.maxConcurrent = maxConcurrentRollouts;
        this.batchSize = consumerBatchSize;
    }

    /** Replaces the connection (a trainer that disconnected and connects again); the checks go on. */
    synchronized void reconnect(RolloutClient fresh) {
        client.close();
        client = fresh;
    }

    /** Closes the connection without a word (a trainer that went away mid-batch). */
    synchronized void disconnect() {
        client.close();
    }

    synchronized RolloutClient client() {
        return client;
    }

    /** The last version this trainer published (or learnt from a refusal). */
    synchronized int version() {
        return version;
    }

    /**
     * Pulls one batch (waiting at most {@code wait}) and checks it against what was acknowledged;
     * does not acknowledge it.
     */
    Optional<TrainingBatch> pull(Duration wait) throws InterruptedException {
        Optional<TrainingBatch> b = client().nextBatch(wait);
        b.ifPresent(this::onPulled);
        return b;
    }

    private synchronized void onPulled(TrainingBatch batch) {
        checkTokenVersions(batch);
        List<Long> tasks = batch.groups().stream().map(TrainingGroup::taskId).toList();
        if (new HashSet<>(tasks).size() != tasks.size()) {
            violations.add("batch " + batch.batchId() + " holds a task twice: " + tasks);
        }
        for (long task : tasks) {
            redeliveryChecks.incrementAndGet();
            Long consumedIn = consumedTaskToBatch.get(task);
            if (consumedIn != null) {
                violations.add("task " + task + " of acknowledged batch " + consumedIn + " delivered again in batch "
                        + batch.batchId());
            }
        }
        List<Long> before = pulledBatches.get(batch.batchId());
        if (before != null) {
            redeliveries++;
            redeliveryChecks.incrementAndGet();
            if (!before.equals(tasks)) {
                violations.add(
                        "batch " + batch.batchId() + " delivered again with other tasks: " + before + " then " + tasks);
            }
        }
        pulledBatches.put(batch.batchId(), tasks);
    }

    /**
     * Per-token versions as this trainer knows them (invariant 2 of docs/reliability.md), beyond the {@link
     * InvariantChecker}'s checks: every generated token carries a version this trainer has
     * published (or was publishing) when it pulled the batch, never a later one, and a trajectory
     * whose tokens came from two or more versions (a generation interrupted by a weight update and
     * resumed) says so in its {@code versions} tensor, which is how it is counted here.
     */
    private void checkTokenVersions(TrainingBatch batch) {
        int ceiling = highestAttempted;
        for (TrainingGroup g : batch.groups()) {
            org.rollout.api.TensorDict d = g.rows();
            if (!d.has(org.rollout.api.TensorDict.VERSIONS)
                    || !d.has(org.rollout.api.TensorDict.LOSS_MASK)
                    || !d.has(org.rollout.api.TensorDict.ATTENTION_MASK)) {
                continue; // the checker reports the missing key
            }
            org.rollout.api.Tensor versions = d.get(org.rollout.api.TensorDict.VERSIONS);
            org.rollout.api.Tensor mask = d.get(org.rollout.api.TensorDict.LOSS_MASK);
            org.rollout.api.Tensor attention = d.get(org.rollout.api.TensorDict.ATTENTION_MASK);
            int rows = versions.dim(0);
            int len = versions.dim(1);
            for (int i = 0; i < rows; i++) {
                trajectories++;
                tokenVersionChecks.incrementAndGet();
                int lo = Integer.MAX_VALUE;
                int hi = Integer.MIN_VALUE;
                for (int j = 0; j < len; j++) {
                    int k = i * len + j;
                    if (attention.getLong(k) == 0 || mask.getLong(k) != 1) {
                        continue;
                    }
                    int v = (int) versions.getLong(k);
                    lo = Math.min(lo, v);
                    hi = Math.max(hi, v);
                }
                if (lo > hi) {
                    continue;
                }
                if (hi > ceiling) {
                    violations.add("task " + g.taskId() + " row " + i + ": a token carries version " + hi
                            + ", never published (the trainer had published up to " + ceiling + ")");
                }
                if (hi > lo) {
                    mixedVersionTrajectories++;
                }
            }
        }
    }

    /** Trajectories (rows) of pulled batches whose versions were checked. */
    synchronized long trajectories() {
        return trajectories;
    }

    /** Trajectories generated by two or more weight versions (interrupted and resumed). */
    synchronized long mixedVersionTrajectories() {
        return mixedVersionTrajectories;
    }

    /** Acknowledges {@code batch}; once the engine answered, the batch counts as consumed and is checked. */
    void acknowledge(TrainingBatch batch) throws InterruptedException {
        boolean again;
        synchronized (this) {
            again = acknowledgedBatches.contains(batch.batchId());
        }
        client().acknowledge(batch);
        synchronized (this) {
            if (again) {
                return; // delivered again after our acknowledgement was missed: acknowledged only
            }
            acknowledgedBatches.add(batch.batchId());
            checker.onBatch(batch);
            for (TrainingGroup g : batch.groups()) {
                consumedTaskToBatch.putIfAbsent(g.taskId(), batch.batchId());
            }
        }
    }

    /**
     * Publishes the next version (the initial weights again, labelled {@code version + 1}). A
     * refusal means an earlier attempt was applied: the version is read back. Returns whether the
     * version moved on.
     */
    boolean publishNext() throws InterruptedException {
        int next;
        synchronized (this) {
            next = version + 1;
            highestAttempted = Math.max(highestAttempted, next);
        }
        try {
            client().publishWeights(next, cluster.weights());
            synchronized (this) {
                version = Math.max(version, next);
                publishOwed = false;
            }
            synchronized (observations) {
                checker.onVersion(next);
            }
            return true;
        } catch (WeightPublishException e) {
            publishFailures.incrementAndGet();
            synchronized (this) {
                // Refused: an earlier attempt of this version was applied (it is read back below).
                publishOwed = e.kind() != WeightPublishException.Kind.REFUSED;
            }
            if (e.kind() == WeightPublishException.Kind.REFUSED) {
                try {
                    int now = client().status().version();
                    synchronized (this) {
                        version = Math.max(version, now);
                    }
                } catch (RuntimeException statusFailed) {
                    statusErrors.incrementAndGet(); // the next publish finds out again
                }
            }
            TestCluster.log("publish of version " + next + " failed: " + e.getMessage());
            return false;
        } catch (EngineUnreachableException | GatewayRequestException | IllegalStateException e) {
            publishFailures.incrementAndGet();
            synchronized (this) {
                publishOwed = true;
            }
            TestCluster.log("publish of version " + next + " failed: " + e.getMessage());
            return false;
        }
    }

    /**
     * Publishes {@code bad}, a truncated or corrupt weight file, as the next version (a fault of
     * kind {@code corrupt_weights}): every server must refuse it, the publish must fail, and the
     * engine's version must stay where it was. Does nothing while a publish is owed, so that the
     * version it reads back is this trainer's own. A publish that succeeds, or a version that
     * moved, is a violation.
     */
    void publishCorrupt(Path bad) throws InterruptedException {
        int before;
        int next;
        synchronized (this) {
            if (publishOwed) {
                return;
            }
            before = version;
            next = version + 1;
        }
        cluster.faults().inject("corrupt_weights");
        try {
            client().publishWeights(next, bad);
            addViolation("the corrupt weight file " + bad.getFileName() + " was accepted as version " + next);
            return;
        } catch (WeightPublishException
                | EngineUnreachableException
                | GatewayRequestException
                | IllegalStateException e) {
            TestCluster.log("corrupt weights as version " + next + " refused: " + e.getMessage());
        }
        corruptChecks.incrementAndGet();
        try {
            int now = client().status().version();
            if (now != before) {
                addViolation("the version moved from " + before + " to " + now + " after the corrupt weight file "
                        + bad.getFileName() + " was refused");
            }
        } catch (RuntimeException statusFailed) {
            statusErrors.incrementAndGet(); // a fail-over: nothing to compare
        }
    }

    /**
     * One training step: pull (at most {@code wait}); a new batch is acknowledged and, when {@code
     * publish}, followed by the next version; a batch acknowledged before is only acknowledged
     * again. Returns the batch, if one came.
     *
     * <p>As a real trainer: a pull that fails (a gateway's node is gone, the singletons are moving)
     * is counted and tried again at the next step; an acknowledgement that fails is repeated until
     * it is answered (it is idempotent), at most {@link #ACK_DEADLINE}.
     */
    Optional<TrainingBatch> step(Duration wait, boolean publish) throws InterruptedException {
        Optional<TrainingBatch> b;
        try {
            b = pull(wait);
        } catch (RuntimeException e) {
            trainerErrors.incrementAndGet();
            TestCluster.log("pull failed: " + e);
            Thread.sleep(200);
            return Optional.empty();
        }
        if (b.isEmpty()) {
            if (publish && publishOwed()) {
                // As a real trainer would: the step's weights were never published (the publish
                // failed, e.g. while the singletons moved). Until they are, the staleness budget
                // may admit nothing more, and no batch would come to publish after.
                publishNext();
            }
            return b;
        }
        boolean known;
        synchronized (this) {
            known = acknowledgedBatches.contains(b.get().batchId());
        }
        acknowledgeUntilAnswered(b.get());
        if (!known && publish) {
            if (publishOwed()) {
                // The previous step's version first: publishing "the next version" now would
                // only repeat it (refused if it was applied after all), leaving this step's unmade.
                publishNext();
            }
            publishNext();
        }
        return b;
    }

    /** Whether the last publish failed, so that the step it ended has no version yet. */
    private synchronized boolean publishOwed() {
        return publishOwed;
    }

    static final Duration ACK_DEADLINE = Duration.ofSeconds(120);

    /** Acknowledges {@code batch}, repeating the call while it fails, at most {@link #ACK_DEADLINE}. */
    void acknowledgeUntilAnswered(TrainingBatch batch) throws InterruptedException {
        long deadline = System.nanoTime() + ACK_DEADLINE.toNanos();
        while (true) {
            try {
                acknowledge(batch);
                return;
            } catch (RuntimeException e) {
                trainerErrors.incrementAndGet();
                if (System.nanoTime() - deadline >= 0) {
                    throw new AssertionError(
                            "batch " + batch.batchId() + " could not be acknowledged within " + ACK_DEADLINE, e);
                }
                TestCluster.log("acknowledging batch " + batch.batchId() + " failed (" + e + "); again");
                Thread.sleep(500);
            }
        }
    }

    /** Calls that failed and were repeated (pulls, acknowledgements). */
    long trainerErrors() {
        return trainerErrors.get();
    }

    /**
     * Reads the status once and checks version and budget. Observations are serialized (one at a
     * time, each fed to the checker before the next read starts), so that a read that began before
     * a publish returned is never compared with one that began after it.
     */
    RolloutStatus observe() throws InterruptedException {
        synchronized (observations) {
            RolloutStatus s = client().status();
            checker.onVersion(s.version());
            checker.onBudget(s.version(), s.accepted(), s.running(), maxConcurrent, batchSize);
            return s;
        }
    }

    /** Observes the status every {@code period} on a background thread until {@link #close()}. */
    void startMonitor(Duration period) {
        monitoring = true;
        monitor = Thread.ofPlatform().daemon().name("status-monitor").start(() -> {
            while (monitoring) {
                try {
                    observe();
                } catch (InterruptedException e) {
                    return;
                } catch (RuntimeException e) {
                    statusErrors.incrementAndGet(); // a fail-over in progress; the next read tells
                }
                try {
                    Thread.sleep(period.toMillis());
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
    }

    /**
     * Runs the engine dry: no more publishing, so admission stops at the staleness budget; pulls and
     * acknowledges until nothing runs, nothing is buffered or unacknowledged, and no batch comes.
     * Afterwards every admitted task must have ended ({@link TaskAccounting}).
     */
    void drain(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        int quiet = 0;
        RolloutStatus last = null;
        while (quiet < 2) {
            if (System.nanoTime() - deadline >= 0) {
                throw new AssertionError("the run did not drain within " + timeout + "; last status " + last);
            }
            Optional<TrainingBatch> b = step(Duration.ofSeconds(1), false);
            if (b.isPresent()) {
                quiet = 0;
                continue;
            }
            try {
                last = observe();
            } catch (RuntimeException e) {
                statusErrors.incrementAndGet();
                continue;
            }
            boolean idle = last.running() == 0
                    && last.bufferedGroups() == 0
                    && last.unacknowledgedBatches() == 0
                    && last.heldOutcomes() == 0
                    && last.evalRunning() == 0;
            quiet = idle ? quiet + 1 : 0;
        }
    }

    /** Every violation so far: the checker's and this trainer's. */
    synchronized List<String> violations() {
        List<String> all = new ArrayList<>(checker.violations());
        all.addAll(violations);
        return all;
    }

    synchronized void addViolation(String v) {
        violations.add(v);
    }

    InvariantChecker checker() {
        return checker;
    }

    /** How many times each invariant was checked, the checker's and this trainer's. */
    synchronized Map<String, Long> checks() {
        Map<String, Long> all = new LinkedHashMap<>(checker.checks());
        all.put("acked_task_not_redelivered", redeliveryChecks.get());
        all.put("token_versions_published", tokenVersionChecks.get());
        if (corruptChecks.get() > 0) {
            all.put("corrupt_weights_refused", corruptChecks.get());
        }
        return all;
    }

    synchronized int batchesAcknowledged() {
        return acknowledgedBatches.size();
    }

    synchronized Set<Long> consumedTasks() {
        return Set.copyOf(consumedTaskToBatch.keySet());
    }

    /** Whether batch {@code batchId} was acknowledged (by this trainer, after it pulled it). */
    synchronized boolean acknowledged(long batchId) {
        return acknowledgedBatches.contains(batchId);
    }

    synchronized long redeliveries() {
        return redeliveries;
    }

    long statusErrors() {
        return statusErrors.get();
    }

    long publishFailures() {
        return publishFailures.get();
    }

    @Override
    public void close() {
        monitoring = false;
        if (monitor != null) {
            monitor.interrupt();
        }
        client().close();
    }
}
