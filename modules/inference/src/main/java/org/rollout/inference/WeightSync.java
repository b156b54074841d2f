package org.rollout.inference;

import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntConsumer;
import java.util.function.Supplier;
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;
import org.rollout.config.WeightTransfer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the servers on the engine's weights: runs a weight update (semantics §6.9: gate held, {@link
 * WeightUpdater}, version set, gate released), unloads stale LoRA adapters, and re-syncs a server
 * out of rotation (restarted, or a failed update) with the newest weights before it is re-admitted.
 * One update or re-sync at a time.
 */
final class WeightSync {
    // Logs under the engine's name, as the engine's lines always have.
    private static final Logger log = LoggerFactory.getLogger(RemoteInferenceEngine.class);

    private final InferenceConfig config;
    private final ServerProtocol protocol;
    private final HttpExchanges http;
    private final ServerPool pool;
    private final WeightUpdater updater;
    private final Backoff backoff;
    private final PauseGate gate;
    private final AtomicInteger version;
    private final IntConsumer setVersion;
    private final Supplier<InferenceMetrics> metrics;
    private final ReentrantLock updateLock = new ReentrantLock();
    private final Map<ServerAddress, ResyncBackoff> resyncBackoff = new ConcurrentHashMap<>();
    private volatile LoadedWeights lastLoaded;
    /** The newest weights another engine loaded on the servers (another node's, in a cluster). */
    private final AtomicReference<LoadedWeights> loadedElsewhere = new AtomicReference<>();

    /**
     * @param version the engine's version now
     * @param setVersion sets the engine's version (never backwards)
     * @param metrics the engine's meters now (bound after construction)
     */
    WeightSync(
            InferenceConfig config,
            ServerProtocol protocol,
            HttpExchanges http,
            ServerPool pool,
            WeightUpdater updater,
            Backoff backoff,
            PauseGate gate,
            AtomicInteger version,
            IntConsumer setVersion,
            Supplier<InferenceMetrics> metrics) {
        this.config = config;
        this.protocol = protocol;
        this.http = http;
        this.pool = pool;
        this.updater = updater;
        this.backoff = backoff;
        this.gate = gate;
        this.version = version;
        this.setVersion = setVersion;
        this.metrics = metrics;
    }

    /**
     * Loads the weights at {@code modelPath} as version {@code newVersion} on every server, in the
     * training-step order of semantics §6.9: close the gate (no new segments), {@link WeightUpdater#update}
     * (pause, load, continue — continue always), {@link RemoteInferenceEngine#setVersion}, reopen the gate (in a finally).
     * In-flight segments are aborted by the servers and resume afterwards with the new version.
     *
     * <p>A server where any step failed serves stale weights (or is still paused): it leaves
     * rotation and returns only after the health checker has re-sent this update to it
     * successfully. When no server loaded the weights, the version is left unchanged and
     * {@link WeightUpdateException} is thrown. When interrupted, continue has still been sent; the
     * engine then rolls forward: it takes the new version and re-sends the update to every server
     * before it serves again.
     *
     * @throws IllegalArgumentException when {@code newVersion} is not above the current version
     * @throws WeightUpdateException when no server loaded the new weights
     */
    WeightUpdateReport updateWeights(Path modelPath, int newVersion) throws InterruptedException {
        updateLock.lockInterruptibly();
        try {
            int current = version.get();
            if (newVersion <= current) {
                throw new IllegalArgumentException("weight update to version " + newVersion
                        + " refused: the engine is at version " + current + " and versions must increase");
            }
            gate.hold();
            try {
                WeightUpdateReport report;
                try {
                    report = updater.update(pool.servers(), modelPath, newVersion);
                } catch (InterruptedException e) {
                    lastLoaded = new LoadedWeights(modelPath, newVersion);
                    setVersion.accept(newVersion);
                    for (ServerAddress s : pool.servers()) {
                        pool.markResyncPending(s, "weight update to version " + newVersion + " was interrupted");
                    }
                    throw e;
                }
                metrics.get().weightUpdate(report);
                if (!report.anyLoaded()) {
                    for (WeightUpdateReport.ServerOutcome o : report.servers()) {
                        if (!o.continued()) {
                            pool.markResyncPending(o.server(), String.join(", ", o.errors()));
                        }
                    }
                    throw new WeightUpdateException(report, current);
                }
                lastLoaded = new LoadedWeights(modelPath, newVersion);
                unloadStaleAdapter(current);
                for (WeightUpdateReport.ServerOutcome o : report.servers()) {
                    if (o.ok()) {
                        resyncBackoff.remove(o.server());
                        pool.setServerVersion(o.server(), newVersion);
                        pool.clearResyncPending(o.server());
                    } else {
                        pool.markResyncPending(o.server(), String.join(", ", o.errors()));
                    }
                }
                setVersion.accept(newVersion);
                return report;
            } finally {
                gate.release();
            }
        } finally {
            updateLock.unlock();
        }
    }

    /** With use_lora: the version before {@code previous} whose adapter is still loaded, or 0. */
    private int adapterBeforePrevious;

    /**
     * With {@code use_lora}, after an update from {@code previous}: unloads, best effort and without
     * waiting, the adapter of the version before {@code previous} on every server. The previous
     * version's adapter stays: a segment pinned to it just before the update may still reach a
     * server after it.
     */
    private void unloadStaleAdapter(int previous) {
        if (!config.useLora()) {
            return;
        }
        String stale = config.loraAdapter(adapterBeforePrevious);
        adapterBeforePrevious = previous;
        if (stale == null) {
            return;
        }
        ControlCall unload = protocol.unloadLoraCall(stale);
        for (ServerAddress s : pool.servers()) {
            http.start(s, unload, config.controlTimeout()).whenComplete((r, e) -> {
                if (e != null || !HttpExchanges.isSuccess(r.statusCode())) {
                    log.info(
                            "unloading LoRA adapter {} on {} failed ({}); it stays loaded",
                            stale,
                            s,
                            e != null ? e.toString() : "HTTP " + r.statusCode());
                }
            });
        }
    }

    /**
     * Records that another engine (the node running the cluster's weight update) loaded
     * {@code path} as {@code newVersion} on the servers. This engine loads nothing now; when it
     * re-syncs a restarted server it sends the newest weights it knows of, its own or these.
     * Without this, an engine that never ran an update would re-admit a restarted server with
     * its launch weights after a bare continue, and eject it again at its first token.
     */
    void weightsLoadedElsewhere(Path path, int newVersion) {
        Objects.requireNonNull(path, "path");
        LoadedWeights told = new LoadedWeights(path, newVersion);
        loadedElsewhere.accumulateAndGet(
                told, (known, t) -> known == null || t.version() > known.version() ? t : known);
    }

    /** The newest weights loaded on the servers, by this engine or, as far as it knows, by another. */
    private LoadedWeights newestWeights() {
        LoadedWeights own = lastLoaded;
        LoadedWeights other = loadedElsewhere.get();
        if (own == null) {
            return other;
        }
        return other != null && other.version() > own.version() ? other : own;
    }

    /** The health checker's verdict on a server out of rotation: re-sync its weights if owed, then re-admit. */
    void onHealthy(ServerAddress server) throws InterruptedException {
        if (!pool.isResyncPending(server)) {
            pool.readmit(server);
            return;
        }
        ResyncBackoff rb = resyncBackoff.computeIfAbsent(server, s -> new ResyncBackoff());
        if (System.nanoTime() < rb.notBefore) {
            return;
        }
        if (!updateLock.tryLock()) {
            // A fan-out is running; it includes this server. Probing the others matters more than waiting.
            return;
        }
        try {
            if (!pool.isResyncPending(server)) {
                pool.readmit(server);
                return;
            }
            LoadedWeights own = lastLoaded;
            if (config.weightTransfer() == WeightTransfer.NCCL && own != null) {
                // Only the trainer holds the tensors: the server joins the group now and is loaded
                // by the next update's broadcast; until then it stays out of rotation. An engine
                // that never loaded an update (another node's, or before the first one) sends no
                // group call: the next update's chain joins the server before its load.
                String error = updater.join(server, pool.servers().size());
                if (error != null) {
                    rb.failures++;
                    rb.notBefore =
                            System.nanoTime() + backoff.delay(rb.failures).toNanos();
                    pool.markResyncPending(server, "joining the weight-update group failed: " + error);
                }
                return;
            }
            // Over NCCL no file is sent; from disk, the newest weights any engine loaded.
            LoadedWeights w = config.weightTransfer() == WeightTransfer.NCCL ? own : newestWeights();
            int resyncVersion = w == null ? version.get() : w.version();
            WeightUpdateReport.ServerOutcome o = updater.resync(server, w == null ? null : w.path(), resyncVersion);
            if (o.ok()) {
                resyncBackoff.remove(server);
                pool.setServerVersion(server, resyncVersion);
                pool.clearResyncPending(server);
                pool.readmit(server);
            } else {
                rb.failures++;
                rb.notBefore = System.nanoTime() + backoff.delay(rb.failures).toNanos();
                pool.markResyncPending(server, "weight re-sync failed: " + String.join(", ", o.errors()));
            }
        } finally {
            updateLock.unlock();
        }
    }

    /** The weights of the last update that loaded on at least one server. */
    private record LoadedWeights(Path path, int version) {}

    /** When the next weight re-sync of a server may be tried. */
    private static final class ResyncBackoff {
        volatile int failures;
        volatile long notBefore = Long.MIN_VALUE;
    }
}
