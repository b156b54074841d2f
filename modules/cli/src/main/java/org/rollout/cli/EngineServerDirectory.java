package org.rollout.cli;

import java.time.Duration;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import org.rollout.api.InvalidConfigException;
import org.rollout.config.ServerAddress;
import org.rollout.gateway.ServerDirectory;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.inference.ServerStats;

/** The gateway's {@code /v1/servers} over this node's inference engine. */
final class EngineServerDirectory implements ServerDirectory {
    private final RemoteInferenceEngine engine;

    EngineServerDirectory(RemoteInferenceEngine engine) {
        this.engine = Objects.requireNonNull(engine, "engine");
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
                s.lastError().orElse(null));
    }

    @Override
    public boolean add(String address) {
        return engine.addServer(parse(address));
    }

    @Override
    public boolean drain(String address, Duration handOverAfter) {
        ServerAddress server = parse(address);
        if (engine.serverStats().stream().noneMatch(s -> s.address().equals(server))) {
            throw new NoSuchElementException("no inference server " + server + " in this engine's pool; it has "
                    + engine.serverStats().stream().map(ServerStats::address).toList());
        }
        try {
            return engine.drainServer(server, handOverAfter);
        } catch (IllegalArgumentException e) {
            // The pool's refusal to drain its last active server (or a server that left meanwhile).
            if (e.getMessage() != null && e.getMessage().contains("unknown server")) {
                throw new NoSuchElementException(e.getMessage());
            }
            throw new IllegalStateException(e.getMessage(), e);
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
