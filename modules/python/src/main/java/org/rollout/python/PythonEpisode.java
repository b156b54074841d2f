package org.rollout.python;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InferenceEngine;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.WorkflowContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Python episode (a workflow's {@code arun_episode} or an agent's {@code run}) served from the
 * calling thread until it ends:
 *
 * <pre>
 *   worker says                    here
 *   generate(request, ids, gcfg)   a virtual thread runs engine.generate (per-token versions, resumption
 *                                  after weight updates, fail-over: the node's engine) and answers generated
 *   abort(request)                 that thread is interrupted: the request is aborted on the server
 *   done(result, stats)            stats recorded under the episode's scope; the message returned
 *   failed(error, traceback)       PythonWorkflowException: the group fails, as a Java workflow that threw
 *   died (the worker ended)        PythonWorkflowException naming the worker and its last stderr line
 * </pre>
 *
 * <p>Cancellation (a sibling failed, the staleness policy, shutdown, the episode timeout) interrupts
 * the calling thread: the worker is told to cancel the task (its pending {@code agenerate} raises
 * {@code asyncio.CancelledError}), the episode's generations are aborted, and the call throws {@link
 * InterruptedException} once the worker confirms, or after {@link #CANCEL_GRACE}; a worker that does
 * not confirm in time is hung and is killed (its other episodes fail, and the pool replaces it).
 */
final class PythonEpisode {
    /** How long a cancelled episode's worker has to confirm before it is taken for hung and killed. */
    static final Duration CANCEL_GRACE = Duration.ofSeconds(5);

    private static final Logger log = LoggerFactory.getLogger(PythonEpisode.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private PythonEpisode() {}

    /**
     * Runs one episode in {@code pool} and serves it until it ends.
     *
     * @param gconfig what a generate message's gconfig is laid over
     * @param engine what its generations run on; null for an agent, which generates through the proxy
     * @param extraKwargs an agent's {@code run(data, **extra_kwargs)}; null for a workflow
     * @return the {@code done} message, its stats already recorded under the episode's scope
     * @throws PythonWorkflowException when the episode raised or its worker died
     * @throws InterruptedException when this thread was interrupted: the episode was cancelled
     */
    static JsonNode run(
            PythonWorkflowPool pool,
            GenerationConfig gconfig,
            InferenceEngine engine,
            Map<String, Object> data,
            Map<String, Object> extraKwargs)
            throws Exception {
        WorkflowWorker worker = pool.acquire();
        long id = pool.nextEpisode();
        BlockingQueue<JsonNode> box = worker.openEpisode(id);
        Episode episode = new Episode(worker, id, engine, gconfig);
        try {
            WorkflowContext ctx = WorkflowContext.current();
            if (engine != null) {
                worker.sendVersion(engine.version());
            }
            ObjectNode start = JSON.createObjectNode();
            start.put("op", "start");
            start.put("episode", id);
            start.set("data", JSON.valueToTree(data));
            start.put("is_eval", ctx.isEval());
            if (ctx.taskId().isPresent()) {
                start.put("task_id", ctx.taskId().getAsLong());
            }
            if (ctx.sampleIdx().isPresent()) {
                start.put("sample_idx", ctx.sampleIdx().getAsInt());
            }
            if (engine != null) {
                start.put("version", engine.version());
            }
            if (extraKwargs != null) {
                start.set("extra_kwargs", JSON.valueToTree(extraKwargs));
            }
            worker.send(start);
            while (true) {
                JsonNode m;
                try {
                    m = box.take();
                } catch (InterruptedException e) {
                    episode.cancel(box);
                    throw e;
                }
                switch (m.path("op").asText()) {
                    case "generate" -> episode.generate(m);
                    case "abort" -> episode.abort(m.path("request").asLong());
                    case "done" -> {
                        record(ctx, m.path("stats"));
                        return m;
                    }
                    case "failed" ->
                        throw new PythonWorkflowException(
                                m.path("error").asText(), m.path("traceback").asText(""));
                    case "cancelled" ->
                        throw new PythonWorkflowException(
                                pool.spec() + ".arun_episode was cancelled by its own code (asyncio.CancelledError)",
                                "");
                    case "died" ->
                        throw new PythonWorkflowException(m.path("error").asText(), "");
                    default -> log.warn("{}: unexpected message for episode {}: {}", worker, id, m);
                }
            }
        } finally {
            episode.stopGenerations();
            worker.closeEpisode(id);
        }
    }

    /** {@code stats}: {scope: {key: [values]}}; the episode's own scope is recorded as is, others as {@code scope/key}. */
    private static void record(WorkflowContext ctx, JsonNode stats) {
        if (!stats.isObject()) {
            return;
        }
        for (var scopes = stats.properties().iterator(); scopes.hasNext(); ) {
            var scope = scopes.next();
            String prefix = scope.getKey().equals(ctx.statScope()) ? "" : scope.getKey() + "/";
            for (var keys = scope.getValue().properties().iterator(); keys.hasNext(); ) {
                var key = keys.next();
                for (JsonNode v : key.getValue()) {
                    if (v.isNumber()) {
                        ctx.stats().scalar(prefix + key.getKey(), v.asDouble());
                    }
                }
            }
        }
    }

    /** One episode's generations in flight, by request id. */
    private static final class Episode {
        private final WorkflowWorker worker;
        private final long id;
        private final InferenceEngine engine;
        private final GenerationConfig gconfig;
        private final Map<Long, Thread> generations = new ConcurrentHashMap<>();

        Episode(WorkflowWorker worker, long id, InferenceEngine engine, GenerationConfig gconfig) {
            this.worker = worker;
            this.id = id;
            this.engine = engine;
            this.gconfig = gconfig;
        }

        void generate(JsonNode m) {
            long request = m.path("request").asLong();
            ModelRequest req;
            try {
                if (engine == null) {
                    throw new IllegalStateException("an agent generates through the proxy's OpenAI API, not agenerate");
                }
                GenerationConfig g = WireGconfig.fromJson(m.path("gconfig"), gconfig);
                req = ModelRequest.of(
                        m.path("rid").asText(ModelRequest.newRid()), WireResults.ints(m.path("input_ids")), g);
            } catch (RuntimeException e) {
                answerError(request, e);
                return;
            }
            // The generation inherits this thread's WorkflowContext (sticky rids, stats, the proxy session).
            Thread t = Thread.ofVirtual()
                    .name("python-generate-" + id + "-" + request)
                    .unstarted(() -> {
                        try {
                            ModelResponse r = engine.generate(req);
                            worker.sendVersion(engine.version());
                            worker.send(answer(request, r));
                        } catch (InterruptedException e) {
                            // aborted: the episode was cancelled or stopped waiting
                        } catch (RuntimeException e) {
                            answerError(request, e);
                        } finally {
                            generations.remove(request);
                        }
                    });
            generations.put(request, t);
            t.start();
        }

        void abort(long request) {
            Thread t = generations.get(request);
            if (t != null) {
                t.interrupt();
            }
        }

        void stopGenerations() {
            generations.values().forEach(Thread::interrupt);
        }

        /** Cancels the task in the worker and waits for it to end; kills a worker that does not answer. */
        void cancel(BlockingQueue<JsonNode> box) {
            ObjectNode cancel = JSON.createObjectNode();
            cancel.put("op", "cancel");
            cancel.put("episode", id);
            worker.send(cancel);
            stopGenerations();
            long deadline = System.nanoTime() + CANCEL_GRACE.toNanos();
            try {
                while (true) {
                    long left = deadline - System.nanoTime();
                    JsonNode m = left > 0 ? box.poll(left, TimeUnit.NANOSECONDS) : null;
                    if (m == null) {
                        worker.kill("episode " + id + " did not end within " + CANCEL_GRACE.toSeconds()
                                + " s of its cancellation (its event loop is blocked)");
                        return;
                    }
                    switch (m.path("op").asText()) {
                        case "cancelled", "done", "failed", "died" -> {
                            return;
                        }
                        default -> {
                            // a generate sent before the cancel arrived: left unanswered
                        }
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        private ObjectNode answer(long request, ModelResponse r) {
            ObjectNode m = JSON.createObjectNode();
            m.put("op", "generated");
            m.put("request", request);
            var tokens = m.putArray("output_tokens");
            for (int t : r.outputTokens()) {
                tokens.add(t);
            }
            var logprobs = m.putArray("output_logprobs");
            for (float lp : r.outputLogprobs()) {
                logprobs.add(lp);
            }
            var versions = m.putArray("output_versions");
            for (int v : r.outputVersions()) {
                versions.add(v);
            }
            m.put("stop_reason", r.stopReason().wireName());
            m.put("latency", r.latency().toNanos() / 1e9);
            m.put("ttft", r.ttft().toNanos() / 1e9);
            return m;
        }

        private void answerError(long request, RuntimeException e) {
            ObjectNode m = JSON.createObjectNode();
            m.put("op", "generated");
            m.put("request", request);
            m.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            worker.send(m);
        }
    }
}
