package org.rollout.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.rollout.api.InvalidConfigException;
import org.rollout.config.ServerAddress;
import org.rollout.gateway.ServerDirectory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code rollout.server_file}: inference servers, one {@code host:port} per line ({@code #} starts a
 * comment), re-read every {@code rollout.server_file_interval}. A line added becomes an add, a line
 * removed a drain (through the node's {@link ServerDirectory}, so on a cluster node every node
 * follows). A file that cannot be read or has a bad line is logged and the previous list stays.
 */
final class ServerFile implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ServerFile.class);
    /** How long a server removed from the file may finish its segments before it hands them over. */
    static final Duration HAND_OVER_AFTER = Duration.ofSeconds(60);

    private final Path file;
    private final Duration interval;
    private final ServerDirectory directory;
    private final Thread thread;
    private Set<ServerAddress> current;
    private volatile boolean closed;

    private ServerFile(Path file, Duration interval, Set<ServerAddress> initial, ServerDirectory directory) {
        this.file = file;
        this.interval = interval;
        this.directory = directory;
        this.current = new LinkedHashSet<>(initial);
        this.thread = Thread.ofVirtual().name("server-file").unstarted(this::loop);
    }

    /**
     * Reads {@code file}.
     *
     * @throws InvalidConfigException keyed {@code rollout.server_file}, naming the file and the line,
     *     when it cannot be read or a line is not {@code host:port}
     */
    static List<ServerAddress> read(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file);
        } catch (IOException e) {
            throw new InvalidConfigException("rollout.server_file", file.toString(), "a readable file (" + e + ")");
        }
        Set<ServerAddress> out = new LinkedHashSet<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            int hash = line.indexOf('#');
            String text = (hash >= 0 ? line.substring(0, hash) : line).strip();
            if (text.isEmpty()) {
                continue;
            }
            try {
                out.add(ServerAddress.parse(text));
            } catch (IllegalArgumentException e) {
                throw new InvalidConfigException(
                        "rollout.server_file",
                        file + " line " + (i + 1) + ": '" + text + "'",
                        "one host:port per line, e.g. 127.0.0.1:30000 or [::1]:30000 (# starts a comment)");
            }
        }
        return new ArrayList<>(out);
    }

    /**
     * Starts re-reading {@code file} every {@code interval}; {@code initial} is what the engine was
     * started with from it.
     */
    static ServerFile watch(Path file, Duration interval, List<ServerAddress> initial, ServerDirectory directory) {
        ServerFile f = new ServerFile(
                Objects.requireNonNull(file, "file"),
                interval,
                new LinkedHashSet<>(initial),
                Objects.requireNonNull(directory, "directory"));
        f.thread.start();
        return f;
    }

    private void loop() {
        while (!closed) {
            try {
                Thread.sleep(interval);
            } catch (InterruptedException e) {
                return;
            }
            try {
                reread();
            } catch (RuntimeException e) {
                log.warn("rollout.server_file {}: {}; the previous server list stays", file, e.getMessage());
            }
        }
    }

    /** One re-read: adds what appeared, drains what disappeared. */
    void reread() {
        Set<ServerAddress> next = new LinkedHashSet<>(read(file));
        for (ServerAddress s : next) {
            if (!current.contains(s)) {
                try {
                    directory.add(s.toString());
                    log.info("rollout.server_file {}: added inference server {}", file, s);
                } catch (RuntimeException e) {
                    log.warn("rollout.server_file {}: adding {} failed: {}", file, s, e.getMessage());
                    continue;
                }
            }
        }
        for (ServerAddress s : current) {
            if (!next.contains(s)) {
                try {
                    directory.drain(s.toString(), HAND_OVER_AFTER);
                    log.info("rollout.server_file {}: draining inference server {}", file, s);
                } catch (RuntimeException e) {
                    log.warn("rollout.server_file {}: draining {} refused: {}", file, s, e.getMessage());
                    next.add(s); // still ours: drained on a later read once that is possible
                }
            }
        }
        current = next;
    }

    @Override
    public void close() {
        closed = true;
        thread.interrupt();
    }
}
