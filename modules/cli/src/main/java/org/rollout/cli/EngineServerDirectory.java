package org.rollout.cli;

import java.time.Duration;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.rollout.api.InvalidConfigException;
import org.rollout.cluster.ReplicatedServerList;
import org.rollout.cluster.ReplicatedState;
import org.rollout.config.ServerAddress;
import org.rollout.gateway.ServerDirectory;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.inference.ServerStats;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's {@code /v1/servers} over this node's inference engine. On a cluster node, adds and
 * drains go through the {@link ReplicatedServerList}, so every node's engine follows them; on its
 * own (no list) they change this engine only. Requests are checked against this node's pool first:
 * an unknown server is a {@link NoSuchElementException}, draining the last active one an
 * {@link IllegalStateException}.
 */
final class EngineServerDirectory implements ServerDirectory {
    private static final Logger log = LoggerFactory.getLogger(EngineServerDirectory.class);
    private static final Duration WRITE_WAIT = Duration.ofSeconds(15);

    private final RemoteInferenceEngine engine;
    private final ReplicatedServerList replicated;

    /** @param replicated the cluster's list, or null to change this engine only */
    EngineServerDirectory(RemoteInferenceEngine engine, ReplicatedServerList replicated) {
        this.engine = Objects.requireNonNull(engine, "engine");
        this.replicated = replicated;
    }

    @Override
    public List<Entry> list() {
        return engine.serverStats().stream().map(EngineServerDirectory::entry).toList();
    }

    private static Entry entry(ServerStats s) {
        return new Entry(
                s.address().toString(),
                s.state(),
                s.version().isPresent() ? s.version().getAsInt() : null,
                s.inRotation(),
                s.outstanding(),
                s.requests(),
                s.lastError().orElse(null));
    }

    @Override
    public boolean add(String address) {
        ServerAddress server = parse(address);
        if (replicated == null) {
            return engine.addServer(server);
        }
        boolean active = engine.serverStats().stream().anyMatch(s -> s.address().equals(server) && !s.draining());
        await(replicated.add(server).toCompletableFuture(), "adding " + server);
        return !active;
    }

    @Override
    public boolean drain(String address, Duration handOverAfter) {
        ServerAddress server = parse(address);
        List<ServerStats> pool = engine.serverStats();
        ServerStats target = pool.stream()
                .filter(s -> s.address().equals(server))
                .findFirst()
                .orElseThrow(() -> new NoSuchElementException("no inference server " + server
                        + " in this engine's pool; it has "
                        + pool.stream().map(ServerStats::address).toList()));
        if (target.draining()) {
            return false;
        }
        if (pool.stream().filter(s -> !s.draining()).count() <= 1) {
            throw new IllegalStateException(
                    "cannot drain " + server + ": it is the only server that is not draining (add another first)");
        }
        if (replicated == null) {
            return engine.drainServer(server, handOverAfter);
        }
        await(replicated.drain(server, handOverAfter).toCompletableFuture(), "draining " + server);
        return true;
    }

    /**
     * Waits for a replicated write. One that a majority did not confirm in time holds here and is
     * gossiped on while this node stays in the cluster, but is lost if this node is the minority
     * side of a partition and downs itself: the caller is told, to repeat it elsewhere.
     */
    private static void await(CompletableFuture<Void> write, String what) {
        try {
            write.get(WRITE_WAIT.toSeconds(), TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof ReplicatedState.NotReplicatedException) {
                log.warn("{}: {}; held on this node only", what, e.getCause().getMessage());
                throw new ServerDirectory.NotReplicatedException(e.getCause().getMessage());
            }
            throw new IllegalStateException(what + " failed: " + e.getCause().getMessage(), e.getCause());
        } catch (TimeoutException e) {
            log.warn(
                    "{}: the replicated write did not answer within {} s; held on this node only",
                    what,
                    WRITE_WAIT.toSeconds());
            throw new ServerDirectory.NotReplicatedException(
                    what + ": the replicated write did not answer within " + WRITE_WAIT.toSeconds() + " s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(what + ": interrupted", e);
        }
    }

    private static ServerAddress parse(String address) {
        try {
            return ServerAddress.parse(address);
        } catch (InvalidConfigException e) {
            throw new IllegalArgumentException(
                    "'" + address + "' is not host:port (e.g. 127.0.0.1:30000 or [::1]:30000)", e);
        }
    }
}
