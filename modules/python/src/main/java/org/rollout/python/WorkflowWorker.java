package org.rollout.python;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Python worker process ({@code python -u -m rollout_client.areal.worker module:Class}) and
 * its channel: line-delimited JSON on its stdin and stdout (docs/protocol.md, "Python workflow
 * workers"). A reader thread routes each message to the mailbox of the episode it belongs to; when
 * the process ends, every open episode's mailbox gets a {@code died} message naming the worker and
 * the last line it wrote to stderr. The worker's stderr (the workflow's prints and logs) is logged
 * here, line by line.
 *
 * <p>Thread-safe: episodes send from their own threads; one writer lock orders the lines.
 */
final class WorkflowWorker implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(WorkflowWorker.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int STDERR_TAIL = 20;

    /** How a worker process is started. */
    record Launch(String executable, List<String> pythonPath, String spec, Map<String, String> env) {}

    private final Process process;
    private final String spec;
    private final String kind;
    private final OutputStream stdin; // written by the writer thread only
    private final Map<Long, BlockingQueue<JsonNode>> mailboxes = new ConcurrentHashMap<>();
    private final Map<Long, Long> requestEpisodes = new ConcurrentHashMap<>();
    private final Deque<String> stderrTail = new ArrayDeque<>();
    private final AtomicInteger running = new AtomicInteger();
    private final Object versionLock = new Object();
    private final LinkedBlockingQueue<byte[]> outbox = new LinkedBlockingQueue<>();
    private volatile String death;
    private volatile boolean closing;
    private Thread writer;
    private int versionSent = -1;

    private WorkflowWorker(Process process, String spec, String kind) {
        this.process = process;
        this.spec = spec;
        this.kind = kind;
        this.stdin = process.getOutputStream();
    }

    /**
     * Starts a worker and waits for its {@code ready}.
     *
     * @throws WorkflowRefusedException when the worker refused the workflow (the message is its
     *     reason, naming the workflow), exited, or said nothing within {@code startTimeout}
     */
    static WorkflowWorker start(Launch launch, Duration startTimeout) throws IOException, InterruptedException {
        ProcessBuilder pb =
                new ProcessBuilder(launch.executable(), "-u", "-m", "rollout_client.areal.worker", launch.spec());
        String existing = System.getenv("PYTHONPATH");
        StringBuilder path = new StringBuilder();
        for (String p : launch.pythonPath()) {
            if (!p.isBlank()) {
                path.append(path.isEmpty() ? "" : File.pathSeparator).append(p);
            }
        }
        if (existing != null && !existing.isBlank()) {
            path.append(path.isEmpty() ? "" : File.pathSeparator).append(existing);
        }
        pb.environment().put("PYTHONPATH", path.toString());
        pb.environment().putAll(launch.env());
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            throw new WorkflowRefusedException("cannot start the Python interpreter '" + launch.executable()
                    + "' (rollout.python.executable): " + e.getMessage());
        }
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        Deque<String> earlyErr = new ArrayDeque<>();
        CompletableFuture<String> first = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try {
                first.complete(out.readLine());
            } catch (IOException e) {
                first.complete(null);
            }
        });
        WorkflowWorker[] self = new WorkflowWorker[1];
        Thread errReader =
                Thread.ofVirtual().name("python-workflow-stderr").start(() -> drainStderr(p, earlyErr, self));
        String line;
        try {
            line = first.get(startTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            p.destroyForcibly();
            errReader.join(Duration.ofSeconds(2));
            throw new WorkflowRefusedException("workflow '" + launch.spec() + "': its worker said nothing within "
                    + startTimeout.toSeconds() + " s of starting" + tail(earlyErr));
        } catch (ExecutionException e) {
            throw new IllegalStateException(e);
        }
        JsonNode hello = null;
        try {
            hello = line == null ? null : JSON.readTree(line);
        } catch (IOException e) {
            // not the protocol: reported below
        }
        String op = hello == null ? "" : hello.path("op").asText();
        if (!op.equals("ready")) {
            p.destroyForcibly();
            p.waitFor(5, TimeUnit.SECONDS);
            if (op.equals("refused")) {
                throw new WorkflowRefusedException(hello.path("error").asText());
            }
            errReader.join(Duration.ofSeconds(2)); // the last lines of a worker that crashed at import
            throw new WorkflowRefusedException("workflow '" + launch.spec() + "': its worker "
                    + (line == null ? "exited before it was ready" : "wrote '" + line + "' instead of ready")
                    + tail(earlyErr));
        }
        WorkflowWorker w =
                new WorkflowWorker(p, launch.spec(), hello.path("kind").asText("workflow"));
        synchronized (earlyErr) {
            w.stderrTail.addAll(earlyErr);
            self[0] = w;
        }
        Thread.ofVirtual().name("python-workflow-" + p.pid()).start(() -> w.read(out));
        w.writer = Thread.ofVirtual().name("python-workflow-writer-" + p.pid()).start(w::write);
        log.info("python workflow worker pid {} ready: {} ({})", p.pid(), launch.spec(), w.kind);
        return w;
    }

    private static String tail(Deque<String> lines) {
        synchronized (lines) {
            return lines.isEmpty() ? "" : "; its stderr ended with: " + String.join(" | ", lines);
        }
    }

    private static void drainStderr(Process p, Deque<String> early, WorkflowWorker[] self) {
        try (BufferedReader err =
                new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = err.readLine()) != null) {
                log.info("[python pid {}] {}", p.pid(), line);
                Deque<String> into;
                synchronized (early) {
                    into = self[0] != null ? self[0].stderrTail : early;
                }
                synchronized (into) {
                    into.addLast(line);
                    if (into.size() > STDERR_TAIL) {
                        into.removeFirst();
                    }
                }
            }
        } catch (IOException e) {
            // the process is gone
        }
    }

    long pid() {
        return process.pid();
    }

    /** {@code workflow} (an {@code arun_episode} class) or {@code agent} (an {@code async run} class). */
    String kind() {
        return kind;
    }

    boolean alive() {
        return death == null && process.isAlive();
    }

    /** Episodes this worker runs now. */
    int running() {
        return running.get();
    }

    /** A mailbox for {@code episode}'s messages; {@link #closeEpisode} releases it. */
    BlockingQueue<JsonNode> openEpisode(long episode) {
        BlockingQueue<JsonNode> box = new LinkedBlockingQueue<>();
        mailboxes.put(episode, box);
        running.incrementAndGet();
        String d = death;
        if (d != null) {
            box.add(died(d));
        }
        return box;
    }

    void closeEpisode(long episode) {
        if (mailboxes.remove(episode) != null) {
            running.decrementAndGet();
        }
        requestEpisodes.values().removeIf(e -> e == episode);
    }

    /**
     * Queues one message for the writer thread, which writes every queued line and then flushes once:
     * many episodes' messages, few system calls. A worker that cannot be written to is dead (its
     * episodes hear so).
     */
    void send(ObjectNode message) {
        try {
            outbox.add(JSON.writeValueAsBytes(message));
        } catch (IOException e) {
            throw new IllegalStateException("a protocol message that is not JSON: " + message, e);
        }
    }

    private void write() {
        List<byte[]> batch = new ArrayList<>();
        try {
            while (true) {
                batch.add(outbox.take());
                outbox.drainTo(batch);
                for (byte[] line : batch) {
                    stdin.write(line);
                    stdin.write('\n');
                }
                stdin.flush();
                batch.clear();
            }
        } catch (IOException e) {
            markDead("its stdin is closed (" + e.getMessage() + ")");
        } catch (InterruptedException e) {
            // closing
        }
    }

    /** Sends {@code version} when it is newer than what this worker was last told. */
    void sendVersion(int version) {
        synchronized (versionLock) {
            if (version <= versionSent) {
                return;
            }
            versionSent = version;
        }
        ObjectNode m = JSON.createObjectNode();
        m.put("op", "version");
        m.put("version", version);
        send(m);
    }

    private void read(BufferedReader out) {
        try {
            String line;
            while ((line = out.readLine()) != null) {
                route(line);
            }
        } catch (IOException e) {
            // the process is gone
        }
        try {
            process.waitFor(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        markDead(process.isAlive() ? "it closed its channel" : "it exited with code " + process.exitValue());
    }

    private void route(String line) {
        JsonNode m;
        try {
            m = JSON.readTree(line);
        } catch (IOException e) {
            log.error(
                    "python workflow worker pid {} wrote a line that is not the protocol's, killing it: {}",
                    pid(),
                    line.length() > 200 ? line.substring(0, 200) + "…" : line);
            process.destroyForcibly();
            return;
        }
        String op = m.path("op").asText();
        long episode;
        if (op.equals("abort")) {
            Long e = requestEpisodes.get(m.path("request").asLong());
            if (e == null) {
                return; // its episode has ended
            }
            episode = e;
        } else {
            episode = m.path("episode").asLong(-1);
            if (op.equals("generate")) {
                requestEpisodes.put(m.path("request").asLong(), episode);
            }
        }
        BlockingQueue<JsonNode> box = mailboxes.get(episode);
        if (box != null) {
            box.add(m);
        } else if (!op.equals("cancelled")) {
            log.debug("python workflow worker pid {}: '{}' for episode {} which has ended", pid(), op, episode);
        }
    }

    private void markDead(String why) {
        synchronized (this) {
            if (death != null) {
                return;
            }
            String last;
            synchronized (stderrTail) {
                last = stderrTail.isEmpty() ? "" : "; its last stderr line: " + stderrTail.peekLast();
            }
            death = "python workflow worker pid " + pid() + " (" + spec + ") died: " + why + last;
        }
        if (!closing) {
            log.warn("{}", death);
        }
        process.destroyForcibly();
        mailboxes.values().forEach(box -> box.add(died(death)));
    }

    private static JsonNode died(String why) {
        ObjectNode m = JSON.createObjectNode();
        m.put("op", "died");
        m.put("error", why);
        return m;
    }

    /** The last lines the worker wrote to stderr, oldest first. */
    List<String> stderrTail() {
        synchronized (stderrTail) {
            return List.copyOf(stderrTail);
        }
    }

    /** Kills the worker because it no longer answers (its episodes hear {@code died}, with {@code why}). */
    void kill(String why) {
        process.destroyForcibly();
        markDead(why);
    }

    @Override
    public void close() {
        closing = true;
        if (writer != null) {
            writer.interrupt();
        }
        try {
            stdin.close(); // the worker cancels its episodes and exits
        } catch (IOException ignored) {
            // killed below anyway
        }
        try {
            if (!process.waitFor(2, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "python workflow worker pid " + pid() + " (" + spec + ")";
    }
}
