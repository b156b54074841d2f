package org.rollout.python;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InferenceEngine;
import org.rollout.api.RolloutWorkflow;

/**
 * A Python {@code RolloutWorkflow} ({@code async def arun_episode(self, engine, data)}) as the
 * engine's {@link RolloutWorkflow}: each episode runs as an asyncio task in one of the pool's
 * workers, served by the calling thread until it returns ({@link PythonEpisode}: generations,
 * cancellation, a worker's death); its result becomes rows, a rejection or interactions ({@link
 * WireResults}). Thread-safe: every episode has its own state.
 */
public final class PythonWorkflow implements RolloutWorkflow, AutoCloseable {
    private final PythonWorkflowPool pool;
    private final GenerationConfig gconfig;

    /**
     * @param pool the workflow's workers (closed by {@link #close()})
     * @param gconfig what a {@code generate} message's gconfig is laid over (the fields it leaves out)
     */
    public PythonWorkflow(PythonWorkflowPool pool, GenerationConfig gconfig) {
        this.pool = pool;
        this.gconfig = gconfig;
    }

    /** The pool this workflow runs in. */
    public PythonWorkflowPool pool() {
        return pool;
    }

    @Override
    public EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) throws Exception {
        JsonNode done = PythonEpisode.run(pool, gconfig, engine, data, null);
        return WireResults.decode(pool.spec(), done.path("result"));
    }

    @Override
    public void close() {
        pool.close();
    }

    @Override
    public String toString() {
        return "python:" + pool.spec();
    }
}
