package org.rollout.python;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.rollout.api.GenerationConfig;
import org.rollout.api.Tokenizer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker processes of one Python workflow on one node: {@link Settings#workers()} long-lived
 * processes, each running many episodes at once on its asyncio loop. The first worker starts in
 * {@link #start}, so a workflow that cannot load is refused before the node serves; the others start
 * as episodes spread out. A worker that died is dropped and replaced when the next episode needs
 * one.
 *
 * <pre>
 *   start(spec, kwargs, gconfig, tokenizer, settings)   first worker up, or WorkflowRefusedException
 *   acquire()                                           the live worker with the fewest episodes
 *                                                       (a new one while fewer than workers() live
 *                                                       and every live one is busy)
 *   close()                                             stdin closed, then killed after 2 s
 * </pre>
 *
 * <p>The workers get the workflow's kwargs ({@code ROLLOUT_WORKFLOW_KWARGS}), the configuration's
 * gconfig ({@code ROLLOUT_WORKFLOW_GCONFIG}) and the engine's tokenizer on a Unix socket ({@code
 * ROLLOUT_TOKENIZER_SOCKET}). No worker outlives the JVM: a shutdown hook kills them, and a worker
 * whose parent is gone (SIGKILL) exits by itself. Thread-safe.
 */
public final class PythonWorkflowPool implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PythonWorkflowPool.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<PythonWorkflowPool> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> LIVE.forEach(p -> p.workers().forEach(w -> w.kill("the JVM is exiting"))),
                        "python-workflow-shutdown"));
    }

    /**
     * How workers start.
     *
     * @param executable the Python interpreter ({@code rollout.python.executable})
     * @param path prepended to PYTHONPATH ({@code rollout.python.path}); "" for none
     * @param clientPath the directory holding the {@code rollout_client} package (clients/python)
     * @param workers processes per pool, ≥ 1 ({@code rollout.python.workflow_workers})
     * @param startTimeout how long a worker may take to import the workflow and say ready
     */
    public record Settings(String executable, String path, Path clientPath, int workers, Duration startTimeout) {
        public Settings {
            Objects.requireNonNull(executable, "executable");
            Objects.requireNonNull(path, "path");
            Objects.requireNonNull(clientPath, "clientPath");
            if (workers < 1) {
                throw new IllegalArgumentException("workflow workers must be >= 1, got " + workers);
            }
        }

        /** min(4, cores): one worker per core runs Python code in parallel; the GIL serialises inside one. */
        public static int defaultWorkers() {
            return Math.min(4, Runtime.getRuntime().availableProcessors());
        }
    }

    private final String spec;
    private final WorkflowWorker.Launch launch;
    private final Settings settings;
    private final TokenizerServer tokenizer;
    private final List<WorkflowWorker> workers = new ArrayList<>();
    private final AtomicLong episodeIds = new AtomicLong();
    private final String kind;
    private boolean closed;

    private PythonWorkflowPool(String spec, WorkflowWorker.Launch launch, Settings settings, TokenizerServer tok)
            throws IOException, InterruptedException {
        this.spec = spec;
        this.launch = launch;
        this.settings = settings;
        this.tokenizer = tok;
        WorkflowWorker first = WorkflowWorker.start(launch, settings.startTimeout());
        workers.add(first);
        this.kind = first.kind();
        LIVE.add(this);
    }

    /**
     * Starts the pool's first worker.
     *
     * @param spec {@code package.module:ClassName}
     * @param kwargs the workflow's keyword arguments (JSON values only)
     * @param gconfig what the constructor's {@code gconfig} is built from
     * @param tokenizer the engine's tokenizer, served to the workers; null for none
     * @throws WorkflowRefusedException when the workflow cannot load (the message names it and why)
     * @throws IllegalArgumentException naming the kwarg that is not a JSON value
     */
    public static PythonWorkflowPool start(
            String spec, Map<String, Object> kwargs, GenerationConfig gconfig, Tokenizer tokenizer, Settings settings)
            throws IOException, InterruptedException {
        Map<String, String> env = new HashMap<>();
        env.put("ROLLOUT_WORKFLOW_KWARGS", kwargsJson(kwargs));
        env.put("ROLLOUT_WORKFLOW_GCONFIG", WireGconfig.toJson(gconfig).toString());
        TokenizerServer tok = tokenizer == null ? null : new TokenizerServer(tokenizer);
        if (tok != null) {
            env.put("ROLLOUT_TOKENIZER_SOCKET", tok.socket().toString());
        }
        List<String> path =
                List.of(settings.path(), settings.clientPath().toAbsolutePath().toString());
        try {
            return new PythonWorkflowPool(
                    spec, new WorkflowWorker.Launch(settings.executable(), path, spec, env), settings, tok);
        } catch (IOException | InterruptedException | RuntimeException e) {
            if (tok != null) {
                tok.close();
            }
            throw e;
        }
    }

    private static String kwargsJson(Map<String, Object> kwargs) {
        Map<String, Object> k = kwargs == null ? Map.of() : kwargs;
        for (var e : k.entrySet()) {
            try {
                JSON.writeValueAsString(e.getValue());
            } catch (JsonProcessingException ex) {
                throw new IllegalArgumentException("workflow_kwargs." + e.getKey()
                        + " is not a JSON value a Python workflow can take: " + ex.getOriginalMessage());
            }
        }
        try {
            return JSON.writeValueAsString(k);
        } catch (JsonProcessingException ex) {
            throw new IllegalArgumentException("workflow_kwargs is not JSON: " + ex.getOriginalMessage());
        }
    }

    /** {@code package.module:ClassName}. */
    public String spec() {
        return spec;
    }

    /** {@code workflow} or {@code agent}, as the first worker reported. */
    public String kind() {
        return kind;
    }

    /** A new episode id, unique in this pool. */
    long nextEpisode() {
        return episodeIds.incrementAndGet();
    }

    /**
     * The live worker with the fewest running episodes; a dead one is dropped, and a new one started
     * while fewer than {@link Settings#workers()} live and each live one is busy.
     *
     * @throws WorkflowRefusedException when a replacement worker cannot start
     */
    synchronized WorkflowWorker acquire() throws IOException, InterruptedException {
        if (closed) {
            throw new IllegalStateException("the python workflow pool of " + spec + " is closed");
        }
        workers.removeIf(w -> !w.alive());
        WorkflowWorker best = null;
        for (WorkflowWorker w : workers) {
            if (best == null || w.running() < best.running()) {
                best = w;
            }
        }
        if (best == null || (best.running() > 0 && workers.size() < settings.workers())) {
            WorkflowWorker fresh = WorkflowWorker.start(launch, settings.startTimeout());
            workers.add(fresh);
            log.info("{}: {} of {} workers live", spec, workers.size(), settings.workers());
            return fresh;
        }
        return best;
    }

    /** The workers now, for status and tests. */
    public synchronized List<Long> workerPids() {
        return workers.stream()
                .filter(WorkflowWorker::alive)
                .map(WorkflowWorker::pid)
                .toList();
    }

    private synchronized List<WorkflowWorker> workers() {
        return List.copyOf(workers);
    }

    @Override
    public void close() {
        List<WorkflowWorker> all;
        synchronized (this) {
            closed = true;
            all = List.copyOf(workers);
            workers.clear();
        }
        all.forEach(WorkflowWorker::close);
        if (tokenizer != null) {
            tokenizer.close();
        }
        LIVE.remove(this);
    }
}
