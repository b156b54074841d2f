package org.rollout.workflows.python;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.rollout.workflows.TimedRewardFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A pool of long-lived Python processes serving the reward functions of one module: each worker
 * imports the module once, then answers calls over a line-delimited JSON protocol on its stdin and
 * stdout (the worker script {@code reward_worker.py} beside this class; the protocol is in
 * docs/python-rewards.md). The user's prints go to the worker's stderr, which is logged here.
 *
 * <pre>
 *   shared(settings, module)   one pool per (executable, PYTHONPATH, module) in the JVM
 *   check(fn)                  starts the first worker: refuses a module that fails to import or lacks fn
 *   call(fn, …)                an idle worker, or a new one while fewer than settings.workers() live,
 *                              or waits for one; the reply's value, or the Python error's last line
 * </pre>
 *
 * <p>Failures: a worker that exits during a call, or writes a reply that is not the protocol's, is
 * killed and dropped; the call throws {@link PythonRewardException}, and the next call starts a
 * fresh worker. A call whose thread is interrupted (the attempt timed out in {@link
 * TimedRewardFunction}, or the episode was cancelled) kills its worker at once and throws {@link
 * InterruptedException}: an abandoned worker is never reused, so a late reply cannot be read as the
 * answer to another call. An exception raised by the function leaves its worker in the pool.
 *
 * <p>Lifetime: workers start on demand and live until {@link #close()} (or {@link #closeAll()}); a
 * JVM shutdown hook kills the workers of every pool; a worker also exits when its stdin closes, and
 * when its parent process is gone. Thread-safe.
 */
public final class PythonRewardPool implements AutoCloseable {
    /** How long a worker may take to start and import the module. */
    static final Duration START_TIMEOUT = Duration.ofSeconds(60);

    private static final Logger log = LoggerFactory.getLogger(PythonRewardPool.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SCRIPT = loadScript();
    private static final Map<Key, PythonRewardPool> POOLS = new ConcurrentHashMap<>();
    private static final Object HOOK_LOCK = new Object();
    private static boolean hookInstalled;
    private static volatile Settings defaults = Settings.defaults();

    /**
     * How workers are started.
     *
     * @param executable the Python interpreter (a name on PATH or a path)
     * @param path prepended to the workers' PYTHONPATH; empty for none
     * @param workers the most workers of one pool, ≥ 1
     */
    public record Settings(String executable, String path, int workers) {
        public Settings {
            Objects.requireNonNull(executable, "executable");
            Objects.requireNonNull(path, "path");
            if (executable.isBlank()) {
                throw new IllegalArgumentException("python executable must be non-blank");
            }
            if (workers < 1) {
                throw new IllegalArgumentException("python reward workers must be >= 1, got " + workers);
            }
        }

        /** {@code python3}, no PYTHONPATH, {@link #defaultWorkers()} workers. */
        public static Settings defaults() {
            return new Settings("python3", "", defaultWorkers());
        }

        /** min(4, available processors). */
        public static int defaultWorkers() {
            return Math.min(4, Runtime.getRuntime().availableProcessors());
        }
    }

    private record Key(String executable, String path, String module) {}

    /**
     * The settings a {@code python:} reward named in workflow kwargs uses (the configuration's
     * {@code rollout.python.*}); applies to pools created afterwards.
     */
    public static void configure(Settings settings) {
        defaults = Objects.requireNonNull(settings, "settings");
    }

    /** The settings {@link #configure} set last, or {@link Settings#defaults()}. */
    public static Settings configured() {
        return defaults;
    }

    /** The JVM's pool for {@code module} under {@code settings}, created (without workers) if need be. */
    public static PythonRewardPool shared(Settings settings, String module) {
        Objects.requireNonNull(settings, "settings");
        Key key = new Key(settings.executable(), settings.path(), Objects.requireNonNull(module, "module"));
        installShutdownHook();
        return POOLS.compute(key, (k, old) -> old != null && !old.isClosed() ? old : new PythonRewardPool(k, settings));
    }

    /** Closes every pool of the JVM, killing their workers. */
    public static void closeAll() {
        for (PythonRewardPool pool : List.copyOf(POOLS.values())) {
            pool.close();
        }
    }

    private static void installShutdownHook() {
        synchronized (HOOK_LOCK) {
            if (!hookInstalled) {
                Runtime.getRuntime()
                        .addShutdownHook(new Thread(PythonRewardPool::closeAll, "python-reward-pools-shutdown"));
                hookInstalled = true;
            }
        }
    }

    private final Key key;
    private final Settings settings;
    private final LinkedBlockingDeque<Worker> idle = new LinkedBlockingDeque<>();
    private final Set<Worker> live = ConcurrentHashMap.newKeySet();
    private final AtomicLong ids = new AtomicLong();
    private final Object lock = new Object();
    private int count; // live workers and workers starting; guarded by lock
    private boolean closed; // guarded by lock

    private PythonRewardPool(Key key, Settings settings) {
        this.key = key;
        this.settings = settings;
    }

    public String module() {
        return key.module();
    }

    public Settings settings() {
        return settings;
    }

    /** The process ids of the live workers (busy or idle). */
    public List<Long> workerPids() {
        List<Long> pids = new ArrayList<>();
        for (Worker w : live) {
            pids.add(w.process.pid());
        }
        return pids;
    }

    /**
     * Checks that the module imports and that {@code function} is a callable in it, on a worker
     * (the first one, started now if none is idle), which stays in the pool.
     *
     * @throws PythonRewardException with the Python error's last line when it does not
     * @throws InterruptedException when interrupted (the worker used is killed)
     */
    public void check(String function) throws PythonRewardException, InterruptedException {
        ObjectNode request = JSON.createObjectNode();
        request.put("fn", function);
        request.put("check", true);
        JsonNode error = exchange(request).get("error");
        if (error != null) {
            throw new PythonRewardException(
                    "python reward " + key.module() + ":" + function + " cannot be called: " + error.asText());
        }
    }

    /**
     * Calls {@code module.function(prompt, completion, prompt_ids, completion_ids, **data)} on a
     * worker.
     *
     * @return the function's value, a finite number
     * @throws PythonRewardException when the function raised (the message holds the last line of its
     *     traceback) or returned a non-number, or when the worker died or broke the protocol
     * @throws IllegalArgumentException when {@code data} cannot be written as JSON
     * @throws InterruptedException when interrupted; the worker is killed and replaced later
     */
    public double call(
            String function,
            String prompt,
            String completion,
            int[] promptIds,
            int[] completionIds,
            Map<String, Object> data)
            throws PythonRewardException, InterruptedException {
        ObjectNode request = JSON.createObjectNode();
        request.put("fn", function);
        request.put("prompt", prompt);
        request.put("completion", completion);
        ids(request.putArray("prompt_ids"), promptIds);
        ids(request.putArray("completion_ids"), completionIds);
        try {
            request.set("data", JSON.valueToTree(data == null ? Map.of() : data));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "python reward " + key.module() + ":" + function + ": the data item cannot be sent as JSON: "
                            + e.getMessage(),
                    e);
        }
        JsonNode reply = exchange(request);
        JsonNode error = reply.get("error");
        if (error != null) {
            throw new PythonRewardException(
                    "python reward " + key.module() + ":" + function + " raised " + error.asText());
        }
        JsonNode value = reply.path("value");
        if (!value.isNumber()) {
            throw new PythonRewardException(
                    "python reward " + key.module() + ":" + function + " gave " + value + ", not a number");
        }
        return value.doubleValue();
    }

    private static void ids(ArrayNode array, int[] ids) {
        if (ids != null) {
            for (int id : ids) {
                array.add(id);
            }
        }
    }

    /**
     * Sends {@code request} (given an id here) to a worker and returns its reply, which holds a
     * {@code value} or an {@code error}.
     */
    private JsonNode exchange(ObjectNode request) throws PythonRewardException, InterruptedException {
        long id = ids.incrementAndGet();
        request.put("id", id);
        String line;
        try {
            line = JSON.writeValueAsString(request);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("python reward request cannot be written as JSON: " + e.getMessage(), e);
        }
        Worker w = acquire();
        boolean healthy = false;
        try {
            JsonNode reply = w.exchange(id, line);
            healthy = true;
            return reply;
        } finally {
            if (healthy) {
                release(w);
            } else {
                discard(w);
            }
        }
    }

    private Worker acquire() throws PythonRewardException, InterruptedException {
        while (true) {
            Worker w = idle.pollFirst();
            if (w != null) {
                if (w.process.isAlive()) {
                    return w;
                }
                discard(w);
                continue;
            }
            boolean start;
            synchronized (lock) {
                if (closed) {
                    throw new PythonRewardException("python reward pool of " + key.module() + " is closed");
                }
                start = count < settings.workers();
                if (start) {
                    count++;
                }
            }
            if (start) {
                Worker started = null;
                try {
                    started = Worker.start(key, settings);
                    live.add(started);
                    return started;
                } finally {
                    if (started == null) {
                        synchronized (lock) {
                            count--;
                        }
                    }
                }
            }
            // All workers are busy: wait for one; re-check now and then, as a busy one may die instead.
            w = idle.pollFirst(200, TimeUnit.MILLISECONDS);
            if (w != null) {
                if (w.process.isAlive()) {
                    return w;
                }
                discard(w);
            }
        }
    }

    private void release(Worker w) {
        boolean keep;
        synchronized (lock) {
            keep = !closed;
        }
        if (keep) {
            idle.offerFirst(w);
        } else {
            discard(w);
        }
    }

    private void discard(Worker w) {
        if (live.remove(w)) {
            synchronized (lock) {
                count--;
            }
        }
        w.kill();
    }

    private boolean isClosed() {
        synchronized (lock) {
            return closed;
        }
    }

    /** Kills every worker (a call in flight fails); later calls are refused. */
    @Override
    public void close() {
        synchronized (lock) {
            closed = true;
        }
        POOLS.remove(key, this);
        for (Worker w : List.copyOf(live)) {
            live.remove(w);
            w.kill();
        }
        idle.clear();
    }

    @Override
    public String toString() {
        return "PythonRewardPool{" + key.module() + ", executable=" + settings.executable() + ", path="
                + settings.path() + ", workers=" + settings.workers() + "}";
    }

    private static String loadScript() {
        try (InputStream in = PythonRewardPool.class.getResourceAsStream("reward_worker.py")) {
            if (in == null) {
                throw new IllegalStateException("reward_worker.py is missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** One Python process: its protocol streams, a reader thread for replies, a drain for stderr. */
    private static final class Worker {
        private static final int TAIL_LINES = 10;
        private static final Object EXITED = new Object();

        private final Process process;
        private final String module;
        private final OutputStream requests;
        private final LinkedBlockingQueue<Object> replies = new LinkedBlockingQueue<>();
        private final Deque<String> stderrTail = new ArrayDeque<>();

        private Worker(Process process, String module) {
            this.process = process;
            this.module = module;
            this.requests = process.getOutputStream();
        }

        static Worker start(Key key, Settings settings) throws PythonRewardException, InterruptedException {
            ProcessBuilder pb = new ProcessBuilder(settings.executable(), "-u", "-c", SCRIPT, key.module());
            if (!settings.path().isEmpty()) {
                String inherited = pb.environment().get("PYTHONPATH");
                pb.environment()
                        .put(
                                "PYTHONPATH",
                                inherited == null || inherited.isEmpty()
                                        ? settings.path()
                                        : settings.path() + File.pathSeparator + inherited);
            }
            pb.environment().put("PYTHONIOENCODING", "utf-8");
            Process p;
            try {
                p = pb.start();
            } catch (IOException e) {
                throw new PythonRewardException(
                        "cannot start python executable '" + settings.executable() + "': " + e.getMessage(), e);
            }
            Worker w = new Worker(p, key.module());
            w.startThreads();
            try {
                Object first = w.replies.poll(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                if (first == null) {
                    throw new PythonRewardException("python reward worker pid " + p.pid() + " did not import "
                            + key.module() + " within " + START_TIMEOUT.toSeconds() + " s");
                }
                if (first instanceof JsonNode ready && ready.path("ready").isBoolean()) {
                    if (ready.path("ready").asBoolean()) {
                        log.info("python reward worker pid {} serves {} ({})", p.pid(), key.module(), settings);
                        return w;
                    }
                    throw new PythonRewardException("import " + key.module() + " failed: "
                            + ready.path("error").asText());
                }
                throw w.failure(first, "starting");
            } catch (PythonRewardException | InterruptedException | RuntimeException e) {
                w.kill();
                throw e;
            }
        }

        private void startThreads() {
            long pid = process.pid();
            Thread.ofVirtual().name("python-reward-" + pid + "-out").start(() -> {
                try (BufferedReader r =
                        new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        try {
                            JsonNode node = JSON.readTree(line);
                            replies.add(node != null && node.isObject() ? node : line);
                        } catch (JsonProcessingException e) {
                            replies.add(line);
                        }
                    }
                } catch (IOException e) {
                    // the process is gone or was killed
                }
                replies.add(EXITED);
            });
            Thread.ofVirtual().name("python-reward-" + pid + "-err").start(() -> {
                try (BufferedReader r =
                        new BufferedReader(new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        synchronized (stderrTail) {
                            if (stderrTail.size() == TAIL_LINES) {
                                stderrTail.removeFirst();
                            }
                            stderrTail.addLast(line);
                        }
                        log.info("[python reward {} pid {}] {}", module, pid, line);
                    }
                } catch (IOException e) {
                    // the process is gone or was killed
                }
            });
        }

        /** Writes {@code line} and waits for the reply with id {@code id}. */
        JsonNode exchange(long id, String line) throws PythonRewardException, InterruptedException {
            try {
                requests.write((line + "\n").getBytes(StandardCharsets.UTF_8));
                requests.flush();
            } catch (IOException e) {
                throw failure(EXITED, "writing a request");
            }
            Object reply = replies.take();
            if (reply instanceof JsonNode node && node.path("id").asLong(-1) == id) {
                return node;
            }
            throw failure(reply, "a call");
        }

        private PythonRewardException failure(Object reply, String during) throws InterruptedException {
            if (reply == EXITED) {
                boolean exited = process.waitFor(5, TimeUnit.SECONDS);
                return new PythonRewardException("python reward worker pid " + process.pid() + " (" + module
                        + ") exited during " + during + (exited ? " with code " + process.exitValue() : "")
                        + stderrTail());
            }
            String text = String.valueOf(reply);
            if (text.length() > 200) {
                text = text.substring(0, 200) + "…";
            }
            return new PythonRewardException("python reward worker pid " + process.pid() + " (" + module
                    + ") wrote a reply that is not the protocol's during " + during + ": " + text);
        }

        private String stderrTail() {
            synchronized (stderrTail) {
                return stderrTail.isEmpty() ? "" : "; its stderr ends: " + String.join(" | ", stderrTail);
            }
        }

        /** Kills the process and the processes it started; its threads end when the pipes close. */
        void kill() {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
        }
    }
}
