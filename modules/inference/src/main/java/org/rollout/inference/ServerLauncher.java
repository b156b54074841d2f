package org.rollout.inference;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.rollout.api.GenerationException;
import org.rollout.config.ServerAddress;
import org.rollout.config.ServerLaunch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts a node's inference servers from {@code rollout.launch} (docs/inference.md, "Launching
 * servers"): one process per server from the command template, {@code CUDA_VISIBLE_DEVICES} set per
 * server, output appended to {@code <log_dir>/server-<index>.log}. Each server has a supervisor (a
 * virtual thread) that restarts it when it exits, after a doubling back-off, at most {@code
 * max_restarts} times, logging its exit code and the tail of its log; {@link #close()} stops them
 * all (SIGTERM, then SIGKILL after {@link #STOP_GRACE}) together with their child processes.
 *
 * <p>A restarted server comes back with its launch weights; the inference engine notices it by its
 * weight version and re-syncs it before using its tokens (docs/inference.md, "Re-sync").
 */
public final class ServerLauncher implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ServerLauncher.class);

    /** How long a stopping server may take after SIGTERM before it is killed. */
    public static final Duration STOP_GRACE = Duration.ofSeconds(10);

    /** Lines of a server's log quoted when it exits. */
    static final int TAIL_LINES = 20;

    private final ServerLaunch spec;
    private final List<Server> servers = new ArrayList<>();
    private final List<String> events = new CopyOnWriteArrayList<>();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private volatile boolean closing;
    /** Sends SIGTERM to every server when the JVM exits without {@link #close()} (e.g. on SIGTERM). */
    private final Thread exitHook = new Thread(this::terminateAll, "server-launcher-exit");

    private ServerLauncher(ServerLaunch spec) {
        this.spec = spec;
    }

    private void terminateAll() {
        closing = true;
        for (Server s : servers) {
            Process p = s.process;
            if (p != null) {
                p.descendants().forEach(ProcessHandle::destroy);
                p.destroy();
            }
        }
    }

    /**
     * Starts every server of {@code spec} (none when {@code spec.servers()} is 0) and returns at
     * once; {@link #awaitHealthy} waits for them.
     *
     * @throws UncheckedIOException when the log directory cannot be created or a process cannot start
     */
    public static ServerLauncher start(ServerLaunch spec) {
        ServerLauncher l = new ServerLauncher(spec);
        try {
            Files.createDirectories(spec.logDir());
            for (int i = 0; i < spec.servers(); i++) {
                int port = spec.basePort() > 0 ? spec.basePort() + i : freePort(spec.host());
                Server s = l.new Server(i, port);
                l.servers.add(s);
                s.launch();
            }
        } catch (IOException e) {
            l.close();
            throw new UncheckedIOException("rollout.launch: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            l.close();
            throw e;
        }
        for (Server s : l.servers) {
            Thread.ofVirtual().name("server-supervisor-" + s.index).start(s::supervise);
        }
        Runtime.getRuntime().addShutdownHook(l.exitHook);
        return l;
    }

    /** The launched servers' addresses, in index order. */
    public List<ServerAddress> addresses() {
        return servers.stream().map(s -> s.address).toList();
    }

    /** The log file of server {@code index}. */
    public Path logFile(int index) {
        return servers.get(index).logFile;
    }

    /** The running process of server {@code index}, if it is running. */
    public Optional<ProcessHandle> process(int index) {
        Process p = servers.get(index).process;
        return p != null && p.isAlive() ? Optional.of(p.toHandle()) : Optional.empty();
    }

    /** How many times server {@code index} was restarted. */
    public int restarts(int index) {
        return servers.get(index).restarts;
    }

    /** What happened to the servers (starts, exits with code and log tail, restarts, give-ups), in order. */
    public List<String> events() {
        return List.copyOf(events);
    }

    /**
     * Waits until every server answers {@code GET /health} with 2xx, for at most {@code timeout}.
     *
     * @throws GenerationException naming each server not healthy, its state and its log's tail
     */
    public void awaitHealthy(Duration timeout) throws InterruptedException {
        HttpClient http = HttpClient.newBuilder()
                .connectTimeout(Duration.ofSeconds(2))
                .version(HttpClient.Version.HTTP_1_1)
                .build();
        try {
            long deadline = System.nanoTime() + timeout.toNanos();
            List<Server> waiting = new ArrayList<>(servers);
            while (true) {
                waiting.removeIf(s -> healthy(http, s.address));
                if (waiting.isEmpty()) {
                    return;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    List<String> parts = new ArrayList<>();
                    for (Server s : waiting) {
                        parts.add("server " + s.index + " at " + s.address + " ("
                                + (s.process != null && s.process.isAlive() ? "running" : "not running")
                                + ", log " + s.logFile + "): " + String.join(" | ", tail(s.logFile)));
                    }
                    throw new GenerationException("launched inference servers not healthy after "
                            + HttpExchanges.seconds(timeout) + " s (rollout.launch.health_timeout): "
                            + String.join("; ", parts));
                }
                lock.lock();
                try {
                    // Woken early by a server's exit; else the next probe round after 200 ms.
                    changed.awaitNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(200)));
                } finally {
                    lock.unlock();
                }
            }
        } finally {
            http.close();
        }
    }

    private static boolean healthy(HttpClient http, ServerAddress a) {
        try {
            HttpResponse<Void> r = http.send(
                    HttpRequest.newBuilder(a.uri("/health"))
                            .timeout(Duration.ofSeconds(2))
                            .GET()
                            .build(),
                    HttpResponse.BodyHandlers.discarding());
            return r.statusCode() / 100 == 2;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Stops every server: no more restarts, SIGTERM to each and its children, SIGKILL after the grace. */
    @Override
    public void close() {
        closing = true;
        try {
            Runtime.getRuntime().removeShutdownHook(exitHook);
        } catch (IllegalStateException | IllegalArgumentException e) {
            // The JVM is exiting (the hook runs or ran), or the hook was never added.
        }
        lock.lock();
        try {
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        terminateAll();
        long deadline = System.nanoTime() + STOP_GRACE.toNanos();
        for (Server s : servers) {
            Process p = s.process;
            if (p == null) {
                continue;
            }
            try {
                if (!p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    log.warn(
                            "server {} did not stop within {} s of SIGTERM: killing it",
                            s.index,
                            STOP_GRACE.toSeconds());
                    p.descendants().forEach(ProcessHandle::destroyForcibly);
                    p.destroyForcibly();
                }
            } catch (InterruptedException e) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    private void event(String e) {
        events.add(Instant.now() + " " + e);
    }

    /** The last {@link #TAIL_LINES} lines of {@code file} (at most 64 KiB read), or a note why none. */
    static List<String> tail(Path file) {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
            long len = f.length();
            int n = (int) Math.min(len, 64 * 1024);
            byte[] b = new byte[n];
            f.seek(len - n);
            f.readFully(b);
            String[] lines = new String(b, StandardCharsets.UTF_8).split("\\R");
            int from = Math.max(0, lines.length - TAIL_LINES);
            List<String> out = new ArrayList<>();
            for (int i = from; i < lines.length; i++) {
                if (!lines[i].isBlank()) {
                    out.add(lines[i]);
                }
            }
            return out.isEmpty() ? List.of("(empty log)") : out;
        } catch (IOException e) {
            return List.of("(no log: " + e.getMessage() + ")");
        }
    }

    private static int freePort(String host) throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(host, 0));
            return s.getLocalPort();
        }
    }

    /** One server: its address, process and supervisor state. */
    private final class Server {
        final int index;
        final ServerAddress address;
        final Path logFile;
        volatile Process process;
        volatile int restarts;

        Server(int index, int port) {
            this.index = index;
            this.address = new ServerAddress(spec.host(), port);
            this.logFile = spec.logDir().resolve("server-" + index + ".log");
        }

        void launch() throws IOException {
            List<String> command = spec.commandOf(index, address.port());
            ProcessBuilder pb = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
            String gpus = spec.gpusOf(index);
            Map<String, String> env = pb.environment();
            if (!gpus.isEmpty()) {
                env.put("CUDA_VISIBLE_DEVICES", gpus);
            }
            try {
                process = pb.start();
            } catch (IOException e) {
                throw new IOException("server " + index + ": cannot start " + command + ": " + e.getMessage(), e);
            }
            String what = "server " + index + " at " + address + " started (pid " + process.pid()
                    + (gpus.isEmpty() ? "" : ", CUDA_VISIBLE_DEVICES=" + gpus) + "): " + String.join(" ", command)
                    + " > " + logFile;
            log.info("{}", what);
            event(what);
        }

        /** Waits for the process to exit and restarts it, until closing or the cap. */
        void supervise() {
            while (!closing) {
                int code;
                try {
                    code = process.waitFor();
                } catch (InterruptedException e) {
                    return;
                }
                if (closing) {
                    return;
                }
                String exit = "server " + index + " at " + address + " exited with code " + code + "; last lines of "
                        + logFile + ": " + String.join(" | ", tail(logFile));
                signal();
                if (restarts >= spec.maxRestarts()) {
                    String gaveUp = exit + "; not restarted: it was restarted " + restarts
                            + " times (rollout.launch.max_restarts)";
                    log.error("{}", gaveUp);
                    event(gaveUp);
                    return;
                }
                Duration wait = backoff(restarts + 1);
                log.warn("{}; restarting it in {} s", exit, HttpExchanges.seconds(wait));
                event(exit + "; restarting in " + HttpExchanges.seconds(wait) + " s");
                lock.lock();
                try {
                    long left = wait.toNanos();
                    while (left > 0 && !closing) {
                        left = changed.awaitNanos(left);
                    }
                } catch (InterruptedException e) {
                    return;
                } finally {
                    lock.unlock();
                }
                if (closing) {
                    return;
                }
                try {
                    restarts++;
                    launch();
                    if (closing) {
                        // close() ran while this restart was starting: it may have missed the process.
                        process.descendants().forEach(ProcessHandle::destroy);
                        process.destroy();
                        return;
                    }
                } catch (IOException e) {
                    log.error("{}", e.getMessage());
                    event(e.getMessage());
                    return;
                }
            }
        }

        private void signal() {
            lock.lock();
            try {
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /** The wait before restart {@code k} (1-based): initial · 2^(k−1), capped. */
    Duration backoff(int k) {
        Duration d = spec.restartBackoffInitial();
        for (int i = 1; i < k && d.compareTo(spec.restartBackoffMax()) < 0; i++) {
            d = d.multipliedBy(2);
        }
        return d.compareTo(spec.restartBackoffMax()) > 0 ? spec.restartBackoffMax() : d;
    }

    @Override
    public String toString() {
        return "ServerLauncher" + addresses();
    }
}
